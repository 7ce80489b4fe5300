import { createHmac } from 'node:crypto';
import { NodeRuntime, Webhooks } from '@paddle/paddle-node-sdk';
import { ConfigurationError, validateEndpoints } from '../config/validate';
import { signedHeaders } from '../testing/sign';
import { receiveWith } from '../testing/receive';
import { checkHmac } from './hmac';
import { BUILT_IN_PROVIDER_NAMES, BUILT_IN_PROVIDERS, PROVIDERS } from './index';
import { paddleProvider, parsePaddleSignature } from './paddle.provider';
import type { ReceiveResult } from './provider';
import {
  paddleSignature,
  published,
  PUBLISHED_TYPES,
  publishedText,
  REFUSED_VECTORS,
  TOLERANCE_VECTOR,
  VALID_VECTORS,
  type PublishedType,
} from '../../test/fixtures/paddle';

/** The endpoint's secret under test, shaped as a notification destination's secret key. */
const SECRET = 'pdl_ntfset_01jtestdestination0000000000_Kq3vB8sXr2LmN7pQ4wT9yZ1aC5dE6fGh';
const OTHER_SECRET = 'pdl_ntfset_01jotherdestination000000000_Zx8cV7bN6mA5sD4fG3hJ2kL1qW0eR9tY';
const ACCOUNT = 'paddle-shop';
const NOW = 1_790_590_561;
const ORDER_ID = '8d1e6a2c-4b5f-4c3d-9e8f-0a1b2c3d4e5f';

type Headers = Record<string, string | undefined>;

const receive = (headers: Headers, body: string | Buffer, endpoint: Record<string, unknown> = {}, nowSeconds = NOW) =>
  receiveWith(paddleProvider, { headers, body }, { endpoint: { secrets: [SECRET], merchantAccountId: ACCOUNT, ...endpoint }, nowMs: nowSeconds * 1000 });

/** The adapter's receive alone, with keys of any length (the start refuses secrets under 8 characters). */
const receiveRaw = (headers: Headers, body: string, secrets: string[], nowSeconds: number, toleranceSeconds = 300): ReceiveResult =>
  paddleProvider.receive(
    { headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])), body: Buffer.from(body, 'utf8') },
    {
      endpoint: { id: 'paddle-main', merchantAccountId: ACCOUNT, settings: {} },
      keys: secrets.map((s, index) => ({ index, key: paddleProvider.prepareKey(s) })),
      nowMs: nowSeconds * 1000,
      toleranceSeconds,
      sender: '127.0.0.1',
      knowsPayment: async () => false,
    },
  ) as ReceiveResult;

/** The signature checks alone (rows 3–5), whatever the body. */
const verify = (header: string | undefined, body: string, secrets: string[], nowSeconds: number, toleranceSeconds = 300) =>
  checkHmac(paddleProvider, header === undefined ? {} : { 'paddle-signature': header }, Buffer.from(body, 'utf8'), {
    keys: secrets.map((s, index) => ({ index, key: paddleProvider.prepareKey(s) })),
    nowMs: nowSeconds * 1000,
    toleranceSeconds,
  });

/** A published body, re-signed now with `secrets` (as Paddle would send it to this endpoint). */
const signedPublished = (type: PublishedType, secrets = [SECRET], ts = NOW) => {
  const body = publishedText(type);
  return { body, headers: { 'Paddle-Signature': paddleSignature(body, secrets, ts) } };
};

/** The SDK reads the time from `Date`: only the clock is faked, so its promises settle as usual. */
const useClock = (nowSeconds: number) => jest.useFakeTimers({ now: nowSeconds * 1000, doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate', 'setTimeout', 'setInterval', 'clearTimeout', 'clearInterval', 'clearImmediate'] });

/**
 * What `@paddle/paddle-node-sdk` says of a delivery, its clock set to `nowSeconds`: true or false
 * (its validator throws on a header without `ts` or `h1`: a refusal).
 */
async function sdkAccepts(body: string, secret: string, header: string, nowSeconds: number): Promise<boolean> {
  useClock(nowSeconds);
  try {
    return await new Webhooks().isSignatureValid(body, secret, header);
  } catch {
    return false;
  } finally {
    jest.useRealTimers();
  }
}

beforeAll(() => {
  // The SDK computes its HMAC through a runtime provider that `new Paddle()` would install.
  NodeRuntime.initialize();
});

describe('paddle: registered as a built-in provider', () => {
  it('is among the built-in providers; PROVIDERS stays the four HMAC providers of the CLI', () => {
    expect(BUILT_IN_PROVIDER_NAMES).toContain('paddle');
    expect(BUILT_IN_PROVIDERS.paddle).toBe(paddleProvider);
    expect(Object.keys(PROVIDERS).sort()).toEqual(['factuarea', 'paymos', 'standard', 'stripe']);
    expect(paddleProvider).toMatchObject({
      name: 'paddle',
      secrets: 'required',
      declaresAccount: false,
      storedHeaders: ['paddle-signature'],
      signatureHeaders: ['paddle-signature'],
      usesApi: { defaultBaseUrl: 'https://api.paddle.com' },
    });
  });
});

describe("paddle: the official SDKs' published vectors verify", () => {
  it.each(VALID_VECTORS.map((v) => [v.name, v] as const))('%s', async (_name, vector) => {
    // The signature alone: the secret that matches is reported, whichever place it has.
    expect(verify(vector.header, vector.body, vector.secrets, vector.ts)).toEqual({ ok: true, secretIndex: vector.matches });
    // Through the receive path, as the route runs it.
    const outcome = await receive({ 'Paddle-Signature': vector.header }, vector.body, { secrets: vector.secrets }, vector.ts);
    const parsed = (() => {
      try {
        return JSON.parse(vector.body) as Record<string, unknown>;
      } catch {
        return null;
      }
    })();
    if (parsed?.event_id) {
      expect(outcome).toEqual({
        ok: true,
        secretIndex: vector.matches,
        events: [
          {
            eventId: parsed.event_id,
            eventType: parsed.event_type,
            resourceId: (parsed.data as { id: string }).id,
            deliveryId: parsed.notification_id,
            account: null,
            apiVersion: null,
            body: vector.body,
            merchantAccountId: ACCOUNT,
            served: true,
          },
        ],
      });
    } else {
      // Authentic, but no Paddle event (the SDKs' synthetic bodies): the body check refuses it, after the signature.
      expect(outcome).toEqual({ ok: false, error: 'malformed_payload', detail: parsed ? 'event_id is missing' : 'the body is not JSON' });
    }
  });

  it.each(VALID_VECTORS.map((v) => [v.name, v] as const))('%s: a byte of the body, the key, the ts or the h1 changed is invalid_signature', (_name, vector) => {
    const secret = vector.secrets[vector.matches];
    const verdicts: Array<[string, unknown]> = [];
    const body = vector.body;
    for (const at of [0, Math.floor(body.length / 2), body.length - 1]) {
      const flipped = body.slice(0, at) + String.fromCharCode(body.charCodeAt(at) ^ 1) + body.slice(at + 1);
      verdicts.push([`byte ${at}`, verify(vector.header, flipped, [secret], vector.ts)]);
    }
    verdicts.push(['a byte added', verify(vector.header, `${body} `, [secret], vector.ts)]);
    verdicts.push(['another key', verify(vector.header, body, [`${secret}x`], vector.ts)]);
    verdicts.push(['the key changed by one character', verify(vector.header, body, [`${secret.slice(0, -1)}${secret.endsWith('a') ? 'b' : 'a'}`], vector.ts)]);
    // The timestamp is signed: another ts with the same h1 verifies nothing.
    const otherTs = vector.header.replace(`ts=${vector.ts}`, `ts=${vector.ts + 1}`);
    verdicts.push(['the ts + 1', verify(otherTs, body, [secret], vector.ts + 1)]);
    const goodH1 = /h1=([0-9a-f]{64})/.exec(vector.header)![1];
    const lastDigit = goodH1.endsWith('0') ? '1' : '0';
    verdicts.push(['an h1 digit', verify(`ts=${vector.ts};h1=${goodH1.slice(0, -1)}${lastDigit}`, body, [secret], vector.ts)]);
    verdicts.push(['the h1 in upper case', verify(`ts=${vector.ts};h1=${goodH1.toUpperCase()}`, body, [secret], vector.ts)]);
    expect(verdicts).toEqual(verdicts.map(([what]) => [what, { ok: false, error: 'invalid_signature' }]));
    // And the unchanged vector, with the same single key, still verifies (the changes above are what failed).
    expect(verify(`ts=${vector.ts};h1=${goodH1}`, body, [secret], vector.ts)).toEqual({ ok: true, secretIndex: 0 });
  });

  it('a published body parsed and serialised again does not verify: the signature is over the bytes', async () => {
    const { body, headers } = signedPublished('transaction.paid');
    const compact = JSON.stringify(JSON.parse(body));
    expect(compact).not.toBe(body);
    expect(await receive(headers, compact)).toEqual({ ok: false, error: 'invalid_signature' });
    expect((await receive(headers, body)).ok).toBe(true);
  });

  it("each refused case of the SDKs' tests is refused, with the refusal of its row", () => {
    const expected: Record<string, ReceiveResult> = {
      'node-sdk: Invalid secret': { ok: false, error: 'invalid_signature' },
      // The ts is signed: another one with the same h1 is a signature that does not match.
      'node-sdk: Invalid timestamp': { ok: false, error: 'invalid_signature' },
      'node-sdk: Invalid data - has more space': { ok: false, error: 'invalid_signature' },
      'node-sdk: Invalid signature': { ok: false, error: 'invalid_signature' },
      'node-sdk: Missing TS and H1': { ok: false, error: 'missing_signature' },
      'node-sdk: Missing TS': { ok: false, error: 'missing_signature' },
      // A header with no h1 at all verifies nothing: invalid_signature, as a header without v1 entries.
      'node-sdk: Missing H1': { ok: false, error: 'invalid_signature' },
      'go-sdk: invalid payload': { ok: false, error: 'invalid_signature' },
      'go-sdk: invalid secret key': { ok: false, error: 'invalid_signature' },
      'go-sdk: invalid signature format': { ok: false, error: 'missing_signature' },
      'go-sdk: missing signature': { ok: false, error: 'missing_signature' },
    };
    expect(REFUSED_VECTORS.map((v) => v.name).sort()).toEqual(Object.keys(expected).sort());
    const outcomes = REFUSED_VECTORS.map((v) => {
      const ts = Number(/ts=(\d+)/.exec(v.header)?.[1] ?? NOW);
      return [v.name, receiveRaw(v.header === '' ? {} : { 'paddle-signature': v.header }, v.body, [v.secret], ts)];
    });
    expect(Object.fromEntries(outcomes)).toEqual(expected);
  });

  it("the Node SDK's tolerance cases: its 5-second window is toleranceSeconds 5 here, and 4 days late is out of the default 300", () => {
    const v = TOLERANCE_VECTOR;
    const at = (now: string) => Math.floor(Date.parse(now) / 1000);
    const ours = v.cases.map((c) => [c.name, verify(v.header, v.body, [v.secret], at(c.now), 5).ok]);
    expect(ours).toEqual(v.cases.map((c) => [c.name, c.sdk]));
    expect(verify(v.header, v.body, [v.secret], at(v.cases[3].now))).toEqual({ ok: false, error: 'timestamp_out_of_tolerance' });
  });
});

describe('paddle: @paddle/paddle-node-sdk agrees where its rules apply (a fresh timestamp, one h1)', () => {
  it('on every published vector, at its own ts, and on mutations of each', async () => {
    const rows: Array<{ vector: string; change: string; ours: boolean; sdk: boolean }> = [];
    for (const v of VALID_VECTORS) {
      const secret = v.secrets[v.matches];
      const h1 = /h1=([0-9a-f]{64})/.exec(v.header)![1];
      const one = `ts=${v.ts};h1=${h1}`;
      const cases: Array<[string, string, string, string]> = [
        ['as published', v.header, v.body, secret],
        ['one h1', one, v.body, secret],
        ['a byte of the body', one, `${v.body.slice(0, -1)}${String.fromCharCode(v.body.charCodeAt(v.body.length - 1) ^ 1)}`, secret],
        ['a space added', one, `${v.body} `, secret],
        ['another key', one, v.body, `${secret}-other`],
        ['the ts + 1', `ts=${v.ts + 1};h1=${h1}`, v.body, secret],
        ['an h1 digit', `ts=${v.ts};h1=${h1.slice(0, -1)}${h1.endsWith('0') ? '1' : '0'}`, v.body, secret],
        ['no h1', `ts=${v.ts}`, v.body, secret],
        ['no ts', `h1=${h1}`, v.body, secret],
      ];
      for (const [change, header, body, key] of cases) {
        const sdk = await sdkAccepts(body, key, header, v.ts);
        rows.push({ vector: v.name, change, ours: verify(header, body, [key], v.ts).ok, sdk });
      }
    }
    expect(rows.filter((r) => r.ours !== r.sdk)).toEqual([]);
    expect(rows.filter((r) => r.ours).map((r) => r.change)).toEqual(VALID_VECTORS.flatMap(() => ['as published', 'one h1']));
  });

  it('on what this module signs (signedHeaders), fresh, and the SDK reads the same event and notification ids', async () => {
    for (const type of PUBLISHED_TYPES) {
      const body = publishedText(type);
      const headers = signedHeaders('paddle', SECRET, body, { timestamp: NOW });
      expect(await sdkAccepts(body, SECRET, headers['paddle-signature'], NOW)).toBe(true);
      const outcome = await receive(headers, body);
      expect(outcome.ok).toBe(true);
      useClock(NOW);
      const event = await new Webhooks().unmarshal(body, SECRET, headers['paddle-signature']).finally(() => jest.useRealTimers());
      if (!outcome.ok) return;
      expect([outcome.events[0].eventId, outcome.events[0].eventType, outcome.events[0].deliveryId]).toEqual([event.eventId, event.eventType, event.notificationId]);
    }
  });

  it('where they differ, the module keeps the contract: any h1, every live secret, toleranceSeconds both ways', async () => {
    const body = publishedText('transaction.paid');
    const good = paddleSignature(body, [SECRET], NOW).split(';')[1];
    const old = paddleSignature(body, [OTHER_SECRET], NOW).split(';')[1];
    // A rotation: the new secret's h1 first. The SDK reads only the last h1.
    const rotating = `ts=${NOW};${good};${old}`;
    expect(verify(rotating, body, [SECRET], NOW)).toEqual({ ok: true, secretIndex: 0 });
    expect(await sdkAccepts(body, SECRET, rotating, NOW)).toBe(false);
    // Two live secrets: the SDK takes one.
    expect(verify(`ts=${NOW};${old}`, body, [SECRET, OTHER_SECRET], NOW)).toEqual({ ok: true, secretIndex: 1 });
    // A timestamp 6 s in the future with a tolerance of 5: refused here, accepted by the SDK (it has no lower bound).
    const future = paddleSignature(body, [SECRET], NOW + 6);
    expect(verify(future, body, [SECRET], NOW, 5)).toEqual({ ok: false, error: 'timestamp_out_of_tolerance' });
    expect(await sdkAccepts(body, SECRET, future, NOW)).toBe(true);
    // 60 s late: within the default 300 here; the SDK's 5 s refuse it.
    const late = paddleSignature(body, [SECRET], NOW - 60);
    expect(verify(late, body, [SECRET], NOW)).toEqual({ ok: true, secretIndex: 0 });
    expect(await sdkAccepts(body, SECRET, late, NOW)).toBe(false);
  });
});

describe('paddle: the checks in their order (missing, invalid, timestamp, body)', () => {
  const body = publishedText('transaction.paid');
  const h1 = (secret = SECRET, ts = NOW, content = body) => paddleSignature(content, [secret], ts).split(';')[1];

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['no ts', `h1=${'a'.repeat(64)}`],
    ['two ts', `ts=${NOW};ts=${NOW};h1=${'a'.repeat(64)}`],
    ['ts not digits', `ts=abc;h1=${'a'.repeat(64)}`],
    ['ts negative', `ts=-${NOW};h1=${'a'.repeat(64)}`],
    ['ts with a fraction', `ts=${NOW}.5;h1=${'a'.repeat(64)}`],
    ['ts of 16 digits', `ts=1${'0'.repeat(15)};h1=${'a'.repeat(64)}`],
    ['ts empty', `ts=;h1=${'a'.repeat(64)}`],
    ['an entry without "="', `ts=${NOW};h1=${'a'.repeat(64)};junk`],
    ['a trailing ";"', `ts=${NOW};h1=${'a'.repeat(64)};`],
    ['"," as the separator', `ts=${NOW},h1=${'a'.repeat(64)}`],
    ['a space after ";" (the key reads " h1"... and " ts")', ` ts=${NOW}; h1=${'a'.repeat(64)}`],
  ])('a header %s: 401 missing_signature', async (_what, header) => {
    expect(await receive({ 'Paddle-Signature': header }, body)).toEqual({ ok: false, error: 'missing_signature' });
  });

  it('missing_signature comes first, whatever else is wrong (a bad body, an old timestamp)', async () => {
    expect(await receive({}, 'not json')).toEqual({ ok: false, error: 'missing_signature' });
    expect(await receive({ 'Paddle-Signature': `h1=${h1()}` }, body)).toEqual({ ok: false, error: 'missing_signature' });
  });

  it.each([
    ['no h1 at all', () => `ts=${NOW}`],
    ['only other keys', () => `ts=${NOW};h2=${h1()};v1=${h1()}`],
    ['an h1 of another key', () => `ts=${NOW};${h1(OTHER_SECRET)}`],
    ['an h1 not hex', () => `ts=${NOW};h1=${'z'.repeat(64)}`],
    ['an h1 of 31 bytes', () => `ts=${NOW};h1=${h1().slice(3, 65)}`],
    ['an h1 over another body', () => `ts=${NOW};${h1(SECRET, NOW, `${body} `)}`],
    ['an h1 over another ts', () => `ts=${NOW};${h1(SECRET, NOW + 1)}`],
    ['a space after ";" before the h1', () => `ts=${NOW}; ${h1()}`],
  ])('%s: 401 invalid_signature', async (_what, header) => {
    expect(await receive({ 'Paddle-Signature': header() }, body)).toEqual({ ok: false, error: 'invalid_signature' });
  });

  it('invalid_signature comes before the timestamp and the body', async () => {
    expect(await receive({ 'Paddle-Signature': `ts=${NOW - 86_400};${h1(OTHER_SECRET, NOW - 86_400)}` }, body)).toEqual({ ok: false, error: 'invalid_signature' });
    expect(await receive({ 'Paddle-Signature': `ts=${NOW};${h1(OTHER_SECRET, NOW, 'x')}` }, 'x')).toEqual({ ok: false, error: 'invalid_signature' });
  });

  it('the timestamp within toleranceSeconds both ways: |now − ts| = tolerance passes, one more second does not; 0 turns it off', async () => {
    const at = (ts: number, endpoint: Record<string, unknown> = {}) => receive({ 'Paddle-Signature': `ts=${ts};${h1(SECRET, ts)}` }, body, endpoint);
    expect((await at(NOW - 300)).ok).toBe(true);
    expect((await at(NOW + 300)).ok).toBe(true);
    expect(await at(NOW - 301)).toEqual({ ok: false, error: 'timestamp_out_of_tolerance' });
    expect(await at(NOW + 301)).toEqual({ ok: false, error: 'timestamp_out_of_tolerance' });
    expect(await at(NOW - 11, { toleranceSeconds: 10 })).toEqual({ ok: false, error: 'timestamp_out_of_tolerance' });
    expect((await at(NOW - 10, { toleranceSeconds: 10 })).ok).toBe(true);
    expect((await at(NOW - 86_400 * 365, { toleranceSeconds: 0 })).ok).toBe(true);
  });

  it('the timestamp comes before the body', async () => {
    const old = NOW - 3_600;
    expect(await receive({ 'Paddle-Signature': `ts=${old};${h1(SECRET, old, 'not json')}` }, 'not json')).toEqual({ ok: false, error: 'timestamp_out_of_tolerance' });
  });

  it('every live secret verifies, in any place of the list and of the header; an expired one never', async () => {
    const signedBy = (secrets: string[]) => ({ 'Paddle-Signature': paddleSignature(body, secrets, NOW) });
    expect(await receive(signedBy([SECRET]), body, { secrets: [OTHER_SECRET, SECRET] })).toMatchObject({ ok: true, secretIndex: 1 });
    expect(await receive(signedBy([OTHER_SECRET, SECRET]), body)).toMatchObject({ ok: true, secretIndex: 0 });
    expect(await receive(signedBy([SECRET, OTHER_SECRET]), body, { secrets: [OTHER_SECRET] })).toMatchObject({ ok: true, secretIndex: 0 });
    const expired = { secret: SECRET, expiresAt: new Date((NOW - 60) * 1000).toISOString() };
    expect(await receive(signedBy([SECRET]), body, { secrets: [expired, OTHER_SECRET] })).toEqual({ ok: false, error: 'invalid_signature' });
    expect(await receive(signedBy([OTHER_SECRET]), body, { secrets: [expired, OTHER_SECRET] })).toMatchObject({ ok: true, secretIndex: 1 });
  });

  it.each([
    ['not JSON', 'not json', 'the body is not JSON'],
    ['a JSON array', '[]', 'the body is not a JSON object'],
    ['no event_id', JSON.stringify({ event_type: 'transaction.paid', data: { id: 'txn_1' } }), 'event_id is missing'],
    ['an empty event_id', JSON.stringify({ event_id: '', event_type: 'transaction.paid', data: { id: 'txn_1' } }), 'event_id is missing'],
    ['an event_id that is a number', JSON.stringify({ event_id: 42, event_type: 'transaction.paid', data: { id: 'txn_1' } }), 'event_id is missing'],
    ['no event_type', JSON.stringify({ event_id: 'evt_1', data: { id: 'txn_1' } }), 'event_type is missing'],
    ['an unprintable event_id', JSON.stringify({ event_id: 'evt_\u200b1', event_type: 'transaction.paid' }), 'event_id is not a printable string of at most 255 characters'],
    ['an event_id of 256 characters', JSON.stringify({ event_id: `evt_${'a'.repeat(252)}`, event_type: 'transaction.paid' }), 'event_id is not a printable string of at most 255 characters'],
    ['an unprintable event_type', JSON.stringify({ event_id: 'evt_1', event_type: 'transaction.paid\u0085' }), 'event_type is not a printable string of at most 255 characters'],
    ['an unprintable data.id', JSON.stringify({ event_id: 'evt_1', event_type: 'transaction.paid', data: { id: 'txn_\u202e1' } }), 'data.id is not a printable string of at most 255 characters'],
    [
      'an unprintable data.transaction_id of an adjustment',
      JSON.stringify({ event_id: 'evt_1', event_type: 'adjustment.updated', data: { id: 'adj_1', transaction_id: 'txn_\u20281' } }),
      'data.transaction_id is not a printable string of at most 255 characters',
    ],
    ['an unprintable notification_id', JSON.stringify({ event_id: 'evt_1', event_type: 'transaction.paid', notification_id: 'ntf_\u00001' }), 'notification_id is not a printable string of at most 255 characters'],
  ])('authentic, %s: 400 malformed_payload, nothing to record', async (_what, content, detail) => {
    expect(await receive({ 'Paddle-Signature': paddleSignature(content, [SECRET], NOW) }, content)).toEqual({ ok: false, error: 'malformed_payload', detail });
  });

  it('authentic bytes that are not UTF-8: 400 malformed_payload', async () => {
    const bytes = Buffer.from([0x7b, 0xff, 0x7d]);
    const header = `ts=${NOW};h1=${createHmac('sha256', SECRET).update(`${NOW}:`).update(bytes).digest('hex')}`;
    expect(await receive({ 'Paddle-Signature': header }, bytes)).toEqual({ ok: false, error: 'malformed_payload', detail: 'the body is not valid UTF-8' });
  });

  it('a body nested deeper than every reader of the archive can go: 400 malformed_payload', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200; i++) deep = { d: deep };
    const content = JSON.stringify({ event_id: 'evt_1', event_type: 'transaction.paid', data: deep });
    const outcome = await receive({ 'Paddle-Signature': paddleSignature(content, [SECRET], NOW) }, content);
    expect(outcome).toMatchObject({ ok: false, error: 'malformed_payload', detail: expect.stringMatching(/deep/) });
  });
});

describe('paddle: what is recorded (event id, type, resource, delivery, account)', () => {
  it.each(PUBLISHED_TYPES.map((t) => [t]))('%s: keyed on event_id on the endpoint account; notification_id the delivery id; the bytes stored as sent', async (type) => {
    const { body, headers } = signedPublished(type);
    const parsed = published(type);
    const outcome = await receive(headers, body);
    expect(outcome).toEqual({
      ok: true,
      secretIndex: 0,
      events: [
        {
          eventId: parsed.event_id,
          eventType: type,
          // Adjustments are about the transaction they adjust.
          resourceId: type.startsWith('adjustment.') ? parsed.data.transaction_id : parsed.data.id,
          deliveryId: parsed.notification_id,
          account: null,
          apiVersion: null,
          body,
          merchantAccountId: ACCOUNT,
          served: true,
        },
      ],
    });
  });

  it('the resource ids are those of the published bodies', () => {
    expect(PUBLISHED_TYPES.map((t) => [t, published(t).data.id, published(t).data.transaction_id ?? null])).toEqual([
      ['transaction.paid', 'txn_01gxwxqj0rd5m8j1zdhvk05twz', null],
      ['transaction.completed', 'txn_01h8dzxgkvdwemdhbpcapj2tbj', null],
      ['transaction.payment_failed', 'txn_01h8dzxgkvdwemdhbpcapj2tbj', null],
      ['transaction.canceled', 'txn_01h8e0d5sej61d5n18bth8d7se', null],
      ['adjustment.created', 'adj_01h8c6tbrkpdd7vx61w7b1r0ap', 'txn_01h8bxpvx398a7zbawb77y0kp5'],
      ['adjustment.updated', 'adj_01h8c6tbrkpdd7vx61w7b1r0ap', 'txn_01h8bxpvx398a7zbawb77y0kp5'],
    ]);
  });

  it('without notification_id the delivery id is absent; without data.id the resource id is', async () => {
    const content = JSON.stringify({ event_id: 'evt_1', event_type: 'customer.created', occurred_at: '2026-12-01T10:00:00Z' });
    const outcome = await receive({ 'Paddle-Signature': paddleSignature(content, [SECRET], NOW) }, content);
    expect(outcome).toMatchObject({ ok: true, events: [{ eventId: 'evt_1', resourceId: null, deliveryId: null }] });
  });

  it('the same event through a replay (a new notification_id, a new ts) keeps its key: only the delivery id differs', async () => {
    const parsed = published('transaction.paid');
    const replay = JSON.stringify({ ...parsed, notification_id: 'ntf_01replayreplayreplayreplay01' });
    const outcome = await receive({ 'Paddle-Signature': paddleSignature(replay, [SECRET], NOW + 60) }, replay, {}, NOW + 60);
    expect(outcome).toMatchObject({ ok: true, events: [{ eventId: parsed.event_id, deliveryId: 'ntf_01replayreplayreplayreplay01', merchantAccountId: ACCOUNT }] });
  });
});

describe('paddle: every event type mapped to the payment lifecycle (normalize, on the published examples)', () => {
  const normalize = (body: Record<string, unknown>) => paddleProvider.normalize(body, body.event_type as string);
  const withOrder = (type: PublishedType, orderId: unknown = ORDER_ID) => {
    const body = published(type);
    body.data.custom_data = { order_id: orderId, plan: 'pro' };
    return body;
  };

  it('transaction.paid: succeeded, the transaction its payment, grand_total its amount in minor units; custom_data.order_id the order', () => {
    const expected = {
      kind: 'succeeded',
      resourceId: 'txn_01gxwxqj0rd5m8j1zdhvk05twz',
      orderId: null,
      amount: { form: 'minor', value: '89880' },
      currency: 'GBP',
      refundedAmount: null,
      refund: null,
      declaredAccount: null,
      occurredAt: new Date('2023-04-13T09:07:06.401607Z'),
    };
    // As published: custom_data is null, so the payment must be registered by its transaction id.
    expect(normalize(published('transaction.paid'))).toEqual(expected);
    expect(normalize(withOrder('transaction.paid'))).toEqual({ ...expected, orderId: ORDER_ID });
  });

  it('transaction.completed: succeeded', () => {
    expect(normalize(withOrder('transaction.completed'))).toEqual({
      kind: 'succeeded',
      resourceId: 'txn_01h8dzxgkvdwemdhbpcapj2tbj',
      orderId: ORDER_ID,
      amount: { form: 'minor', value: '65215' },
      currency: 'USD',
      refundedAmount: null,
      refund: null,
      declaredAccount: null,
      occurredAt: new Date('2023-08-22T07:15:45.366122Z'),
    });
  });

  it('transaction.payment_failed: failed (the transaction stays ready: Paddle may take another attempt)', () => {
    expect(normalize(published('transaction.payment_failed'))).toMatchObject({
      kind: 'failed',
      resourceId: 'txn_01h8dzxgkvdwemdhbpcapj2tbj',
      amount: { form: 'minor', value: '65215' },
      currency: 'USD',
      refund: null,
    });
  });

  it('transaction.canceled: canceled', () => {
    expect(normalize(published('transaction.canceled'))).toMatchObject({
      kind: 'canceled',
      resourceId: 'txn_01h8e0d5sej61d5n18bth8d7se',
      amount: { form: 'minor', value: '1437041' },
      currency: 'USD',
    });
  });

  it('adjustment.updated, an approved refund: a refund of its own totals.total, under the adjustment id, about its transaction', () => {
    expect(normalize(published('adjustment.updated'))).toEqual({
      kind: 'refunded',
      resourceId: 'txn_01h8bxpvx398a7zbawb77y0kp5',
      orderId: null,
      amount: null,
      currency: 'USD',
      refundedAmount: null,
      refund: { id: 'adj_01h8c6tbrkpdd7vx61w7b1r0ap', amount: { form: 'minor', value: '100' } },
      // (v4) The adjustment id is what a refund sent through the module was answered with: it confirms it.
      refundOutcomes: [{ id: 'adj_01h8c6tbrkpdd7vx61w7b1r0ap', status: 'succeeded' }],
      declaredAccount: null,
      occurredAt: new Date('2023-08-21T14:10:08.650443Z'),
    });
  });

  it('adjustment.created of a refund pending approval: nothing happened yet (ignored); approved at creation: the refund', () => {
    const created = published('adjustment.created');
    expect(created.data.status).toBe('pending_approval');
    expect(normalize(created)).toBeNull();
    created.data.status = 'approved';
    expect(normalize(created)).toMatchObject({ kind: 'refunded', refund: { id: 'adj_01h8c6tbrkpdd7vx61w7b1r0ap', amount: { form: 'minor', value: '100' } } });
  });

  it('(v4) a refund rejected: that refund failed (refund_outcome, by its adjustment id), no amount moves', () => {
    const body = published('adjustment.updated');
    body.data.status = 'rejected';
    expect(normalize(body)).toEqual({
      kind: 'refund_outcome',
      resourceId: 'txn_01h8bxpvx398a7zbawb77y0kp5',
      orderId: null,
      amount: null,
      currency: null,
      refundedAmount: null,
      refund: null,
      refundOutcomes: [{ id: 'adj_01h8c6tbrkpdd7vx61w7b1r0ap', status: 'failed', reason: 'rejected by Paddle' }],
      declaredAccount: null,
      occurredAt: new Date('2023-08-21T14:10:08.650443Z'),
    });
    delete body.data.id;
    expect(normalize(body)).toBeNull();
  });

  it('a refund reversed or pending, and the other actions but chargeback, change nothing', () => {
    for (const status of ['reversed', 'pending_approval']) {
      const body = published('adjustment.updated');
      body.data.status = status;
      expect(normalize(body)).toBeNull();
    }
    for (const action of ['credit', 'credit_reverse', 'chargeback_reverse', 'chargeback_warning', 'chargeback_warning_reverse']) {
      const body = published('adjustment.created');
      body.data.action = action;
      body.data.status = 'approved';
      expect(normalize(body)).toBeNull();
    }
  });

  it('a chargeback (derived: Paddle publishes no chargeback body, so the action is set on the published adjustment): dispute_lost, no amount checked', () => {
    const body = published('adjustment.created');
    body.data.action = 'chargeback';
    body.data.status = 'approved';
    expect(normalize(body)).toEqual({
      kind: 'dispute_lost',
      resourceId: 'txn_01h8bxpvx398a7zbawb77y0kp5',
      orderId: null,
      amount: null,
      currency: 'USD',
      refundedAmount: null,
      refund: null,
      declaredAccount: null,
      occurredAt: new Date('2023-08-21T14:08:43.786457Z'),
    });
    body.event_type = 'adjustment.updated';
    expect(normalize(body)).toMatchObject({ kind: 'dispute_lost' });
  });

  it("the official SDK's parser reads the same fields from the same bodies", () => {
    for (const type of PUBLISHED_TYPES) {
      const body = published(type);
      const event = Webhooks.fromJson(body as never) as unknown as { data: Record<string, any> };
      const ours = paddleProvider.normalize(body, type);
      if (type.startsWith('transaction.')) {
        expect([ours?.resourceId, (ours?.amount as { value: string }).value, ours?.currency]).toEqual([event.data.id, event.data.details.totals.grandTotal, event.data.currencyCode]);
      } else if (ours) {
        expect([ours.resourceId, ours.refund?.id, ours.refund?.amount.value, ours.currency]).toEqual([event.data.transactionId, event.data.id, event.data.totals.total, event.data.currencyCode]);
      }
    }
  });

  it('other types are recorded and ignored: the real customer.created and price.created notifications, and transaction types not in the table', () => {
    for (const v of VALID_VECTORS.filter((v) => v.body.includes('"event_id"'))) {
      const body = JSON.parse(v.body);
      expect([body.event_type, normalize(body)]).toEqual([body.event_type, null]);
    }
    for (const type of ['transaction.created', 'transaction.ready', 'transaction.billed', 'transaction.updated', 'transaction.past_due', 'transaction.revised', 'subscription.created']) {
      const body = published('transaction.paid');
      body.event_type = type;
      expect(normalize(body)).toBeNull();
    }
  });

  it('a weird stored body never throws: it reads as nothing to act on, or without the part that is missing', () => {
    expect(normalize({ event_type: 'transaction.paid' })).toBeNull();
    expect(normalize({ event_type: 'transaction.paid', data: [] })).toBeNull();
    expect(normalize({ event_type: 'transaction.paid', data: { status: 'paid' } })).toBeNull();
    expect(normalize({ event_type: 'adjustment.updated', data: { id: 'adj_1', action: 'refund', status: 'approved' } })).toBeNull();
    const noTotals = published('transaction.paid');
    delete noTotals.data.details;
    noTotals.occurred_at = 'soon';
    expect(normalize(noTotals)).toMatchObject({ kind: 'succeeded', amount: null, occurredAt: null });
    const noRefundAmount = published('adjustment.updated');
    delete noRefundAmount.data.totals;
    expect(normalize(noRefundAmount)).toMatchObject({ kind: 'refunded', refund: null, currency: 'USD' });
    expect(normalize(withOrder('transaction.paid', 42))).toMatchObject({ orderId: null });
    const customData = published('transaction.paid');
    customData.data.custom_data = 'order';
    expect(normalize(customData)).toMatchObject({ orderId: null });
  });
});

describe('paddle: endpoints (secrets, accounts, API credentials)', () => {
  const table = new Map([['paddle', paddleProvider]]);
  const validate = (endpoint: Record<string, unknown>) =>
    validateEndpoints('WEBHOOK_ENDPOINTS', [{ id: 'paddle-main', provider: 'paddle', secrets: [SECRET], merchantAccountId: ACCOUNT, ...endpoint }], Date.now(), table);
  const refusal = (endpoint: Record<string, unknown>): string => {
    try {
      validate(endpoint);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigurationError);
      return (err as Error).message;
    }
    throw new Error('not refused');
  };

  it('a secret is required; its UTF-8 bytes key the HMAC', () => {
    expect(refusal({ secrets: [] })).toMatch(/^WEBHOOK_ENDPOINTS: endpoint "paddle-main": /);
    expect(validate({})[0]).toMatchObject({ id: 'paddle-main', provider: 'paddle', secrets: [SECRET], merchantAccountId: ACCOUNT, toleranceSeconds: 300 });
    expect(paddleProvider.prepareKey(SECRET)).toEqual(Buffer.from(SECRET, 'utf8'));
  });

  it('a Paddle API key given as a secret stops the start, never echoing it', () => {
    for (const apiKey of ['pdl_live_apikey_01gtgztp8f4kek3yd4g1wrksa3_q6TGTJyvoIz7LDtXT65bX7_AQO', 'pdl_sdbx_apikey_01gtgztp8f4kek3yd4g1wrksa3_q6TGTJyvoIz7LDtXT65bX7_AQO']) {
      const message = refusal({ secrets: [SECRET, apiKey] });
      expect(message).toBe(`WEBHOOK_ENDPOINTS: endpoint "paddle-main": secret #2 is a Paddle API key: a secret is the notification destination's secret key (pdl_ntfset_…)`);
      expect(message).not.toContain(apiKey);
    }
  });

  it('apiKey and apiBaseUrl are accepted (default https://api.paddle.com); a destination secret as apiKey stops the start, never echoing it', () => {
    const apiKey = 'pdl_sdbx_apikey_01gtgztp8f4kek3yd4g1wrksa3_q6TGTJyvoIz7LDtXT65bX7_AQO';
    expect(validate({ apiKey })[0]).toMatchObject({ apiKey, apiBaseUrl: 'https://api.paddle.com' });
    expect(validate({ apiKey, apiBaseUrl: 'https://sandbox-api.paddle.com/' })[0]).toMatchObject({ apiKey, apiBaseUrl: 'https://sandbox-api.paddle.com' });
    expect(validate({})[0]).not.toHaveProperty('apiKey');
    expect(validate({})[0]).not.toHaveProperty('apiBaseUrl');
    expect(refusal({ apiKey, apiBaseUrl: 'ftp://api.paddle.com' })).toBe('WEBHOOK_ENDPOINTS: endpoint "paddle-main": "apiBaseUrl" must be an http(s) URL');
    const swapped = refusal({ apiKey: SECRET });
    expect(swapped).toBe(
      `WEBHOOK_ENDPOINTS: endpoint "paddle-main": "apiKey" is a notification destination's secret key (it belongs in "secrets"): "apiKey" is a Paddle API key`,
    );
    expect(swapped).not.toContain(SECRET);
  });

  it('merchantAccountIds is refused: Paddle bodies name no account, so an endpoint serves the one its secret belongs to', () => {
    expect(refusal({ merchantAccountId: undefined, merchantAccountIds: ['a', 'b'] })).toMatch(/^WEBHOOK_ENDPOINTS: endpoint "paddle-main": "merchantAccountIds" is not available for paddle/);
  });
});

describe('paddle: the signer of nestjs-payment-webhooks/testing', () => {
  it('signs as Paddle does: ts=<unix>;h1=<hex of HMAC-SHA256 of "<ts>:<body>">, one h1 per secret', () => {
    const body = '{"event_id":"evt_1"}';
    expect(signedHeaders('paddle', SECRET, body, { timestamp: NOW })).toEqual({
      'content-type': 'application/json',
      'paddle-signature': paddleSignature(body, [SECRET], NOW),
    });
    const rotating = signedHeaders('paddle', SECRET, body, { timestamp: NOW, extraSecrets: [OTHER_SECRET] })['paddle-signature'];
    expect(rotating).toBe(paddleSignature(body, [SECRET, OTHER_SECRET], NOW));
    expect(rotating.split(';')).toHaveLength(3);
    expect(parsePaddleSignature(rotating)).toMatchObject({ timestamp: NOW, prefix: `${NOW}:` });
    expect(parsePaddleSignature(rotating)?.candidates).toHaveLength(2);
  });

  it('what it signs is received; its timestamp defaults to now', async () => {
    const { body } = signedPublished('transaction.paid');
    const now = Math.floor(Date.now() / 1000);
    expect(await receive(signedHeaders('paddle', SECRET, body), body, {}, now)).toMatchObject({ ok: true, secretIndex: 0 });
    expect(await receive(signedHeaders('paddle', OTHER_SECRET, body, { extraSecrets: [SECRET] }), body, {}, now)).toMatchObject({ ok: true, secretIndex: 0 });
  });
});
