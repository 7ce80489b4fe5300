import * as noble from '@noble/ed25519';
import { createHmac, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import { receiveWith } from '../testing/receive';
import { signedHeaders } from '../testing/sign';
import { resolveEndpoint, verifySignature } from '../webhooks/signature-verifier';
import { matchHmac } from './hmac';
import {
  decodeEd25519Signature,
  generateV1aKeyPair,
  isSigningSecret,
  publicKeyFor,
  publicKeyOf,
  secretKeyOf,
  secretKeyProblem,
  signV1a,
} from './standard-keys';
import { MAX_V1A_ENTRIES, standardProvider } from './standard.provider';

/**
 * Standard Webhooks `v1a` (docs/webhooks.md#v1a-asymmetric-signatures): ed25519 signatures over
 * `<webhook-id>.<webhook-timestamp>.<body>`, checked with `whpk_` public keys, beside `v1` (HMAC)
 * checked with `whsec_` keys; node:crypto signs and verifies, and an independent implementation
 * (@noble/ed25519) agrees with it both ways and on fixed vectors.
 */

const hex = (h: string) => Buffer.from(h, 'hex');

/** RFC 8032 section 7.1, tests 1–3: the 32-byte private key (the seed), its public key, a message and its signature. */
const RFC8032 = [
  {
    name: 'TEST 1 (empty message)',
    seed: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
    publicKey: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
    message: '',
    signature:
      'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
  },
  {
    name: 'TEST 2 (one byte)',
    seed: '4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb',
    publicKey: '3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c',
    message: '72',
    signature:
      '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00',
  },
  {
    name: 'TEST 3 (two bytes)',
    seed: 'c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7',
    publicKey: 'fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025',
    message: 'af82',
    signature:
      '6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a',
  },
] as const;

/**
 * A delivery signed `v1a` with RFC 8032's first key, on the Standard Webhooks library's own `v1`
 * test message (standard-vector.spec.ts): computed once and checked here by both implementations.
 */
const V1A_VECTOR = {
  secretKey: 'whsk_nWGxne/9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A=',
  publicKey: 'whpk_11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=',
  msgId: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  payload: '{"test": 2432232314}',
  expected: 'v1a,fldxM4gAKugP6nnt1hdz3sgGfZ6d99nzrMFnZOELIxbzEHoVmAb2ADpkJK7zgPePmPsle0zV9jSeGlHFG2NVAw==',
} as const;

const vectorContent = () => Buffer.from(`${V1A_VECTOR.msgId}.${V1A_VECTOR.timestamp}.${V1A_VECTOR.payload}`, 'utf8');
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');
const rawPublicKey = (secret: string) => Buffer.from(secret.slice('whpk_'.length), 'base64');
const seedOf = (secret: string) => Buffer.from(secret.slice('whsk_'.length), 'base64');

describe('ed25519 for v1a: node:crypto and @noble/ed25519 agree', () => {
  it.each(RFC8032.map((v) => [v.name, v] as const))('RFC 8032 %s: both derive the public key and the signature, and verify it', async (_name, v) => {
    const secret = `whsk_${b64(hex(v.seed))}`;
    expect(publicKeyFor(secret)).toBe(`whpk_${b64(hex(v.publicKey))}`);
    expect(signV1a(secretKeyOf(secret), hex(v.message))).toBe(`v1a,${b64(hex(v.signature))}`);
    expect(verify(null, hex(v.message), publicKeyOf(`whpk_${b64(hex(v.publicKey))}`), hex(v.signature))).toBe(true);
    expect(b64(await noble.getPublicKeyAsync(hex(v.seed)))).toBe(b64(hex(v.publicKey)));
    expect(b64(await noble.signAsync(hex(v.message), hex(v.seed)))).toBe(b64(hex(v.signature)));
    expect(await noble.verifyAsync(hex(v.signature), hex(v.message), hex(v.publicKey))).toBe(true);
  });

  it('the fixed v1a vector: node and noble sign it alike; the adapter accepts it', async () => {
    expect(signV1a(secretKeyOf(V1A_VECTOR.secretKey), vectorContent())).toBe(V1A_VECTOR.expected);
    const signature = Buffer.from(V1A_VECTOR.expected.slice('v1a,'.length), 'base64');
    expect(b64(await noble.signAsync(vectorContent(), seedOf(V1A_VECTOR.secretKey)))).toBe(signature.toString('base64'));
    expect(await noble.verifyAsync(signature, vectorContent(), rawPublicKey(V1A_VECTOR.publicKey))).toBe(true);
    expect(publicKeyFor(V1A_VECTOR.secretKey)).toBe(V1A_VECTOR.publicKey);
    const outcome = await receiveWith(
      standardProvider,
      { headers: { 'webhook-id': V1A_VECTOR.msgId, 'webhook-timestamp': String(V1A_VECTOR.timestamp), 'webhook-signature': V1A_VECTOR.expected }, body: V1A_VECTOR.payload },
      { endpoint: { secrets: [V1A_VECTOR.publicKey] }, nowMs: V1A_VECTOR.timestamp * 1000 },
    );
    // Authentic; refused only later, for what the body lacks (it has no `type`).
    expect(outcome).toEqual({ ok: false, error: 'malformed_payload', detail: 'type is missing' });
  });

  it('signed by node, verified by noble; signed by noble, verified by node (fresh keys)', async () => {
    for (let i = 0; i < 8; i++) {
      const { secretKey, publicKey } = generateV1aKeyPair();
      const message = Buffer.from(`msg_${i}.1790590562.{"n":${i},"text":"é€"}`, 'utf8');
      const byNode = Buffer.from(signV1a(secretKeyOf(secretKey), message).slice('v1a,'.length), 'base64');
      expect(byNode).toHaveLength(64);
      expect(await noble.verifyAsync(byNode, message, rawPublicKey(publicKey))).toBe(true);

      const byNoble = Buffer.from(await noble.signAsync(message, seedOf(secretKey)));
      expect(verify(null, message, publicKeyOf(publicKey), byNoble)).toBe(true);
      // ed25519 is deterministic: both signatures are the very same bytes.
      expect(byNoble.equals(byNode)).toBe(true);
      // And neither verifies another message.
      expect(await noble.verifyAsync(byNode, Buffer.concat([message, Buffer.from(' ')]), rawPublicKey(publicKey))).toBe(false);
    }
  });

  it('a key pair made by noble is read as whsk_/whpk_ like one made here', async () => {
    const seed = noble.utils.randomSecretKey();
    const publicKey = `whpk_${b64(await noble.getPublicKeyAsync(seed))}`;
    expect(publicKeyFor(`whsk_${b64(seed)}`)).toBe(publicKey);
  });
});

describe('whsk_ keys: the 32-byte seed, or 64 bytes of seed and public key', () => {
  it('the 64-byte form (libsodium, Svix) signs the same as the seed alone', () => {
    const seed = hex(RFC8032[1].seed);
    const long = `whsk_${b64(Buffer.concat([seed, hex(RFC8032[1].publicKey)]))}`;
    expect(secretKeyProblem(long)).toBe(null);
    expect(signV1a(secretKeyOf(long), hex(RFC8032[1].message))).toBe(`v1a,${b64(hex(RFC8032[1].signature))}`);
  });

  it('refuses a 64-byte key whose public half is not its seed’s, and keys of other lengths', () => {
    const mismatched = `whsk_${b64(Buffer.concat([hex(RFC8032[1].seed), hex(RFC8032[2].publicKey)]))}`;
    expect(secretKeyProblem(mismatched)).toBe('holds a public key that is not its private key\'s after "whsk_" (the last 32 bytes)');
    for (const bytes of [31, 33, 48, 65]) {
      expect(secretKeyProblem(`whsk_${b64(Buffer.alloc(bytes, 1))}`)).toMatch(/^is not base64 of an ed25519 private key/);
    }
    expect(secretKeyProblem('whsk_not base64!')).toMatch(/^is not base64 of an ed25519 private key/);
    expect(() => secretKeyOf(mismatched)).toThrow(/not a usable whsk_ key/);
  });

  it('isSigningSecret: whsec_ and base64, or a usable whsk_; never a whpk_', () => {
    const { secretKey, publicKey } = generateV1aKeyPair();
    expect(isSigningSecret(secretKey)).toBe(true);
    expect(isSigningSecret('whsec_c2VjcmV0')).toBe(true);
    expect(isSigningSecret(publicKey)).toBe(false);
    expect(isSigningSecret('whsk_c2VjcmV0')).toBe(false);
    expect(isSigningSecret('whsec_not base64!')).toBe(false);
  });

  it('generateV1aKeyPair: a fresh 32-byte seed and its public key, each in standard base64', () => {
    const a = generateV1aKeyPair();
    const b = generateV1aKeyPair();
    expect(a.secretKey).not.toBe(b.secretKey);
    expect(seedOf(a.secretKey)).toHaveLength(32);
    expect(rawPublicKey(a.publicKey)).toHaveLength(32);
    expect(publicKeyFor(a.secretKey)).toBe(a.publicKey);
  });
});

describe('standard adapter: v1 and v1a', () => {
  const NOW = 1_790_590_562;
  const BODY = JSON.stringify({ type: 'payment.succeeded', data: { payment_id: 'pay_v1a', amount: 4990, currency: 'EUR' } });
  const WHSEC = `whsec_${Buffer.from('standard-v1a-suite-hmac-key').toString('base64')}`;
  const pair = generateV1aKeyPair();
  const other = generateV1aKeyPair();

  const headersOf = (secrets: string[], over: { body?: string; t?: number; id?: string } = {}) => {
    const [first, ...extraSecrets] = secrets;
    return signedHeaders('standard', first, over.body ?? BODY, { timestamp: over.t ?? NOW, eventId: over.id ?? 'msg_v1a', extraSecrets });
  };
  const receive = (secrets: Array<string | { secret: string; expiresAt: string }>, headers: Record<string, string>, body = BODY, nowMs = NOW * 1000) =>
    receiveWith(standardProvider, { headers, body }, { endpoint: { secrets, merchantAccountId: 'acc_1' }, nowMs });
  const accepted = (secretIndex: number) => expect.objectContaining({ ok: true, secretIndex, events: [expect.objectContaining({ eventId: 'msg_v1a', resourceId: 'pay_v1a' })] });
  const refused = (error: string) => ({ ok: false, error });

  it('signedHeaders: a whsk_ signs v1a, a whsec_ v1; both in one header, in the order given', () => {
    const headers = headersOf([WHSEC, pair.secretKey]);
    const entries = headers['webhook-signature'].split(' ');
    expect(entries.map((e) => e.split(',')[0])).toEqual(['v1', 'v1a']);
    const content = `msg_v1a.${NOW}.${BODY}`;
    expect(entries[0]).toBe(`v1,${createHmac('sha256', Buffer.from(WHSEC.slice(6), 'base64')).update(content).digest('base64')}`);
    expect(verify(null, Buffer.from(content), createPublicKey(secretKeyOf(pair.secretKey)), Buffer.from(entries[1].slice('v1a,'.length), 'base64'))).toBe(true);
    expect(createPublicKey(secretKeyOf(pair.secretKey)).equals(publicKeyOf(pair.publicKey))).toBe(true);
  });

  it('a v1a delivery verifies against the endpoint’s whpk_', async () => {
    expect(await receive([pair.publicKey], headersOf([pair.secretKey]))).toEqual(accepted(0));
  });

  it('during a move: whsec_ and whpk_ in one list, and headers with v1, v1a or both', async () => {
    const secrets = [WHSEC, pair.publicKey];
    expect(await receive(secrets, headersOf([WHSEC]))).toEqual(accepted(0));
    expect(await receive(secrets, headersOf([pair.secretKey]))).toEqual(accepted(1));
    // Both in one header: the v1a is the one counted (the metrics then show the whsec_ unused).
    expect(await receive(secrets, headersOf([WHSEC, pair.secretKey]))).toEqual(accepted(1));
    expect(await receive(secrets, headersOf([pair.secretKey, WHSEC]))).toEqual(accepted(1));
    // A v1a that fails beside a good v1: the v1 verifies.
    expect(await receive(secrets, headersOf([WHSEC, other.secretKey]))).toEqual(accepted(0));
    // The other order of secrets: the whpk_ first.
    expect(await receive([pair.publicKey, WHSEC], headersOf([pair.secretKey]))).toEqual(accepted(0));
    expect(await receive([pair.publicKey, WHSEC], headersOf([WHSEC]))).toEqual(accepted(1));
    // One header with a stale v1 (a key the endpoint no longer has) and a good v1a.
    const stale = `whsec_${Buffer.from('a-key-no-longer-configured').toString('base64')}`;
    expect(await receive([pair.publicKey], headersOf([stale, pair.secretKey]))).toEqual(accepted(0));
    // Two public keys, the second one signing.
    expect(await receive([other.publicKey, pair.publicKey], headersOf([pair.secretKey]))).toEqual(accepted(1));
  });

  it(`checks the first ${MAX_V1A_ENTRIES} v1a entries of a header, and no more`, async () => {
    const good = headersOf([pair.secretKey])['webhook-signature'];
    const forged = headersOf([other.secretKey])['webhook-signature'];
    const withGoodAt = (position: number) => ({
      ...headersOf([pair.secretKey]),
      'webhook-signature': [...Array.from({ length: position - 1 }, () => forged), good].join(' '),
    });
    expect(await receive([pair.publicKey], withGoodAt(MAX_V1A_ENTRIES))).toEqual(accepted(0));
    expect(await receive([pair.publicKey], withGoodAt(MAX_V1A_ENTRIES + 1))).toEqual(refused('invalid_signature'));
  });

  it('a v1a entry never verifies against a whsec_ key, nor a v1 entry against a whpk_', async () => {
    expect(await receive([WHSEC], headersOf([pair.secretKey]))).toEqual(refused('invalid_signature'));
    expect(await receive([pair.publicKey], headersOf([WHSEC]))).toEqual(refused('invalid_signature'));
    // An HMAC keyed with the public key's bytes (a whpk_ mistaken for a whsec_) is no signature.
    const asHmacKey = `whsec_${pair.publicKey.slice('whpk_'.length)}`;
    expect(await receive([pair.publicKey], headersOf([asHmacKey]))).toEqual(refused('invalid_signature'));
    // A v1a signature relabelled v1 (and the reverse) is no candidate of the other kind.
    const v1a = headersOf([pair.secretKey])['webhook-signature'];
    const v1 = headersOf([WHSEC])['webhook-signature'];
    expect(await receive([pair.publicKey, WHSEC], { ...headersOf([WHSEC]), 'webhook-signature': v1a.replace(/^v1a,/, 'v1,') })).toEqual(refused('invalid_signature'));
    expect(await receive([pair.publicKey, WHSEC], { ...headersOf([WHSEC]), 'webhook-signature': v1.replace(/^v1,/, 'v1a,') })).toEqual(refused('invalid_signature'));
    // Another key pair's signature.
    expect(await receive([pair.publicKey], headersOf([other.secretKey]))).toEqual(refused('invalid_signature'));
  });

  it('the HMAC path never uses a public key (matchHmac and verifySignature skip it)', () => {
    const endpoint = resolveEndpoint({ id: 'e', provider: 'standard', secrets: [pair.publicKey, WHSEC], merchantAccountId: 'acc_1', toleranceSeconds: 0 });
    expect(verifySignature(endpoint, headersOf([WHSEC]), Buffer.from(BODY), NOW)).toEqual({ ok: true, secretIndex: 1 });
    const parts = standardProvider.signature(headersOf([WHSEC]))!;
    expect(matchHmac(parts, Buffer.from(BODY), [{ index: 0, key: publicKeyOf(pair.publicKey) }])).toBe(-1);
  });

  it('the parser keeps canonical v1a candidates of 64 bytes only; other versions are ignored', () => {
    const signature = headersOf([pair.secretKey])['webhook-signature'];
    const text = signature.slice('v1a,'.length);
    const parts = standardProvider.signature({ 'webhook-id': 'm', 'webhook-timestamp': '1', 'webhook-signature': `${signature} v2,${text} v1a,${text.slice(4)}` })!;
    expect(parts.candidates).toEqual([]);
    expect(parts.v1a).toEqual([Buffer.from(text, 'base64')]);
    expect(decodeEd25519Signature(Buffer.alloc(63).toString('base64'))).toBe(null);
    expect(decodeEd25519Signature(Buffer.alloc(65).toString('base64'))).toBe(null);
    expect(decodeEd25519Signature(text.replace(/==$/, ''))).toBe(null);
    expect(decodeEd25519Signature(`${text} `)).toBe(null);
  });

  it('non-canonical base64 of the same 64 bytes is refused; the canonical one beside it still verifies', async () => {
    const headers = headersOf([pair.secretKey]);
    const text = headers['webhook-signature'].slice('v1a,'.length);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const last = alphabet.indexOf(text[85]);
    const variants = [1, 2, 4, 8, 15].map((bits) => `${text.slice(0, 85)}${alphabet[last | bits]}==`).filter((v) => v !== text);
    expect(variants.length).toBeGreaterThan(0);
    for (const variant of variants) {
      // Node decodes them to the very same bytes: only the text tells them apart.
      expect(Buffer.from(variant, 'base64').equals(Buffer.from(text, 'base64'))).toBe(true);
      expect(await receive([pair.publicKey], { ...headers, 'webhook-signature': `v1a,${variant}` })).toEqual(refused('invalid_signature'));
    }
    expect(await receive([pair.publicKey], { ...headers, 'webhook-signature': `v1a,${variants[0]} v1a,${text}` })).toEqual(accepted(0));
  });

  it('the checks keep their order: the header, the signature, the timestamp, then the body', async () => {
    const good = headersOf([pair.secretKey]);
    const bad = { ...good, 'webhook-signature': headersOf([other.secretKey])['webhook-signature'] };
    expect(await receive([pair.publicKey], { ...good, 'webhook-id': '' })).toEqual(refused('missing_signature'));
    expect(await receive([pair.publicKey], { ...good, 'webhook-signature': 'v1a' })).toEqual(refused('missing_signature'));
    // A bad signature out of tolerance is a bad signature.
    expect(await receive([pair.publicKey], bad, BODY, (NOW + 3600) * 1000)).toEqual(refused('invalid_signature'));
    expect(await receive([pair.publicKey], good, BODY, (NOW + 3600) * 1000)).toEqual(refused('timestamp_out_of_tolerance'));
    const notJson = headersOf([pair.secretKey], { body: 'not json' });
    expect(await receive([pair.publicKey], notJson, 'not json')).toEqual({ ok: false, error: 'malformed_payload', detail: 'the body is not JSON' });
  });

  it('signs the bytes: a one-byte change to the body, the id or the timestamp is refused', async () => {
    const headers = headersOf([pair.secretKey]);
    expect(await receive([pair.publicKey], headers, BODY.replace('4990', '4991'))).toEqual(refused('invalid_signature'));
    expect(await receive([pair.publicKey], { ...headers, 'webhook-id': 'msg_v1b' })).toEqual(refused('invalid_signature'));
    expect(await receive([pair.publicKey], { ...headers, 'webhook-timestamp': String(NOW + 1) })).toEqual(refused('invalid_signature'));
    const raw = Buffer.from(headers['webhook-signature'].slice('v1a,'.length), 'base64');
    raw[63] ^= 0x01;
    expect(await receive([pair.publicKey], { ...headers, 'webhook-signature': `v1a,${raw.toString('base64')}` })).toEqual(refused('invalid_signature'));
  });

  it('an expired whpk_ no longer verifies; the one beside it does', async () => {
    const past = new Date((NOW - 60) * 1000).toISOString();
    const later = new Date((NOW + 3600) * 1000).toISOString();
    const secrets = [{ secret: other.publicKey, expiresAt: later }, { secret: pair.publicKey, expiresAt: later }];
    expect(await receive(secrets, headersOf([pair.secretKey]))).toEqual(accepted(1));
    // Expired before the delivery: it signs in vain, while the whsec_ beside it keeps the endpoint live.
    expect(await receive([{ secret: pair.publicKey, expiresAt: past }, WHSEC], headersOf([pair.secretKey]))).toEqual(refused('invalid_signature'));
    expect(await receive([{ secret: pair.publicKey, expiresAt: past }, WHSEC], headersOf([pair.secretKey, WHSEC]))).toEqual(accepted(1));
  });

  it('prepareKey: a whpk_ becomes an ed25519 public key, a whsec_ its HMAC bytes', () => {
    const key = standardProvider.prepareKey(pair.publicKey);
    expect(key).toEqual(expect.objectContaining({ type: 'public', asymmetricKeyType: 'ed25519' }));
    expect(standardProvider.prepareKey(WHSEC)).toEqual(Buffer.from('standard-v1a-suite-hmac-key'));
    expect(standardProvider.key(WHSEC)).toEqual(Buffer.from('standard-v1a-suite-hmac-key'));
  });

  it('a key pair from node:crypto directly (SPKI/PKCS #8) is the same key as its whsk_/whpk_ spelling', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32);
    const whpk = `whpk_${Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url').toString('base64')}`;
    expect(publicKeyFor(`whsk_${seed.toString('base64')}`)).toBe(whpk);
    const message = Buffer.from('m.1.{}');
    expect(verify(null, message, publicKeyOf(whpk), sign(null, message, privateKey))).toBe(true);
  });
});
