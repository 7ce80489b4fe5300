import { Webhook } from 'standardwebhooks';
import { resolveEndpoint, verifySignature } from '../webhooks/signature-verifier';

/**
 * The Standard Webhooks library's own published test vector: the "sign function works" test of
 * github.com/standard-webhooks/standard-webhooks, libraries/javascript/src/webhook.test.ts (as of
 * commit 59104160f10908d80ee571a81460e1c9c0c05355). The values are copied here, so this test
 * reads nothing outside the project at run time.
 */
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  msgId: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  payload: '{"test": 2432232314}',
  expected: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
} as const;

const endpoint = resolveEndpoint({
  id: 'standard-vector',
  provider: 'standard',
  secrets: [VECTOR.secret],
  merchantAccountId: 'acc_vector',
});

function headers(signature: string = VECTOR.expected, msgId: string = VECTOR.msgId, timestamp = String(VECTOR.timestamp)) {
  return { 'webhook-id': msgId, 'webhook-timestamp': timestamp, 'webhook-signature': signature };
}

/** The vector's payload with the byte at `index` replaced by the next character code. */
function oneByteOff(text: string, index: number): string {
  return text.slice(0, index) + String.fromCharCode(text.charCodeAt(index) + 1) + text.slice(index + 1);
}

describe("Standard Webhooks: the library's published test vector", () => {
  it("the module's verifier accepts it (the vector's timestamp taken as now)", () => {
    expect(verifySignature(endpoint, headers(), Buffer.from(VECTOR.payload, 'utf8'), VECTOR.timestamp)).toEqual({
      ok: true,
      secretIndex: 0,
    });
  });

  it('the standardwebhooks package signs the same bytes with the same signature, and verifies it', () => {
    const wh = new Webhook(VECTOR.secret);
    expect(wh.sign(VECTOR.msgId, new Date(VECTOR.timestamp * 1000), VECTOR.payload)).toBe(VECTOR.expected);
    // The package checks the timestamp against the real clock: a fresh timestamp, signed by the
    // package, is what the module's verifier must accept too.
    const now = Math.floor(Date.now() / 1000);
    const fresh = wh.sign(VECTOR.msgId, new Date(now * 1000), VECTOR.payload);
    expect(wh.verify(VECTOR.payload, headers(fresh, VECTOR.msgId, String(now)))).toEqual({ test: 2432232314 });
    expect(verifySignature(endpoint, headers(fresh, VECTOR.msgId, String(now)), Buffer.from(VECTOR.payload), now)).toEqual({
      ok: true,
      secretIndex: 0,
    });
  });

  it.each([
    ['the first byte of the payload', () => ({ payload: oneByteOff(VECTOR.payload, 0), h: headers() })],
    ['the last byte of the payload', () => ({ payload: oneByteOff(VECTOR.payload, VECTOR.payload.length - 1), h: headers() })],
    ['a digit of the payload', () => ({ payload: VECTOR.payload.replace('2432232314', '2432232315'), h: headers() })],
    ['one byte of the message id', () => ({ payload: VECTOR.payload, h: headers(VECTOR.expected, oneByteOff(VECTOR.msgId, 4)) })],
    ['the timestamp, one second on', () => ({ payload: VECTOR.payload, h: headers(VECTOR.expected, VECTOR.msgId, String(VECTOR.timestamp + 1)) })],
  ])('a one-byte change to %s is refused (invalid_signature)', (_what, make) => {
    const { payload, h } = make();
    expect(Buffer.byteLength(payload)).toBe(Buffer.byteLength(VECTOR.payload));
    expect(verifySignature(endpoint, h, Buffer.from(payload, 'utf8'), VECTOR.timestamp)).toEqual({
      ok: false,
      error: 'invalid_signature',
    });
  });

  it('a signature with one byte changed is refused (invalid_signature)', () => {
    const raw = Buffer.from(VECTOR.expected.slice('v1,'.length), 'base64');
    raw[0] ^= 0x01;
    const tampered = `v1,${raw.toString('base64')}`;
    expect(verifySignature(endpoint, headers(tampered), Buffer.from(VECTOR.payload), VECTOR.timestamp)).toEqual({
      ok: false,
      error: 'invalid_signature',
    });
  });

  it('the same vector with a one-byte change is refused by the package as well', () => {
    const wh = new Webhook(VECTOR.secret);
    const now = Math.floor(Date.now() / 1000);
    const fresh = wh.sign(VECTOR.msgId, new Date(now * 1000), VECTOR.payload);
    expect(() => wh.verify(oneByteOff(VECTOR.payload, 0), headers(fresh, VECTOR.msgId, String(now)))).toThrow();
  });
});
