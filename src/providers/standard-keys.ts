import { createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject, sign, verify } from 'node:crypto';

/**
 * The keys of Standard Webhooks (https://www.standardwebhooks.com, "Signature scheme"): `whsec_` a
 * symmetric HMAC-SHA256 key (signatures `v1`), `whsk_` and `whpk_` an ed25519 key pair, the secret
 * key signing and the public key verifying (signatures `v1a`). Each is the prefix and the key's
 * bytes in standard base64 (docs/webhooks.md#v1a-asymmetric-signatures).
 */
export const SYMMETRIC_PREFIX = 'whsec_';
export const PUBLIC_KEY_PREFIX = 'whpk_';
export const SECRET_KEY_PREFIX = 'whsk_';

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const ED25519_KEY_BYTES = 32;
/** An ed25519 signature: 64 bytes, in canonical standard base64 86 characters and `==`. */
const BASE64_ED25519_SIGNATURE = /^[A-Za-z0-9+/]{86}==$/;
/** PKCS #8 of an ed25519 private key (RFC 8410), up to the 32-byte seed that ends it. */
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The bytes after `prefix` when they are standard base64 (not empty), else null. */
function base64After(secret: string, prefix: string): Buffer | null {
  const text = secret.slice(prefix.length);
  if (!BASE64.test(text)) return null;
  const bytes = Buffer.from(text, 'base64');
  return bytes.length > 0 ? bytes : null;
}

function rawPublicKey(key: KeyObject): Buffer {
  return Buffer.from(key.export({ format: 'jwk' }).x as string, 'base64url');
}

/** Why a `whpk_…` cannot verify, or null; the text never holds the key. */
export function publicKeyProblem(secret: string): string | null {
  const bytes = base64After(secret, PUBLIC_KEY_PREFIX);
  if (bytes === null || bytes.length !== ED25519_KEY_BYTES) {
    return `is not base64 of a ${ED25519_KEY_BYTES}-byte ed25519 public key after "${PUBLIC_KEY_PREFIX}"`;
  }
  // OpenSSL takes any 32 bytes as a point today; should it refuse one, say so rather than throw at start.
  try {
    publicKeyOf(secret);
    return null;
  } catch {
    return `is not an ed25519 public key after "${PUBLIC_KEY_PREFIX}"`;
  }
}

/** The verifying key of a valid `whpk_…` (a raw 32-byte ed25519 public key); throws otherwise. */
export function publicKeyOf(secret: string): KeyObject {
  const bytes = base64After(secret, PUBLIC_KEY_PREFIX);
  if (bytes === null || bytes.length !== ED25519_KEY_BYTES) throw new Error('not a whpk_ key');
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: bytes.toString('base64url') }, format: 'jwk' });
}

/**
 * Why a `whsk_…` cannot sign, or null; the text never holds the key. The specification says "a
 * standard ed25519 key pair" without fixing the secret key's bytes, so both forms in use are read:
 * the 32-byte private key of RFC 8032 (the seed), and the 64 bytes of the seed followed by its
 * public key (libsodium's, and Svix's); in the second, the public half must be the seed's.
 */
export function secretKeyProblem(secret: string): string | null {
  const bytes = base64After(secret, SECRET_KEY_PREFIX);
  if (bytes === null || (bytes.length !== ED25519_KEY_BYTES && bytes.length !== 2 * ED25519_KEY_BYTES)) {
    return `is not base64 of an ed25519 private key (${ED25519_KEY_BYTES} bytes, or ${2 * ED25519_KEY_BYTES} with its public key) after "${SECRET_KEY_PREFIX}"`;
  }
  if (bytes.length === 2 * ED25519_KEY_BYTES) {
    const derived = rawPublicKey(createPublicKey(signingKeyFrom(bytes.subarray(0, ED25519_KEY_BYTES))));
    if (!derived.equals(bytes.subarray(ED25519_KEY_BYTES))) {
      return `holds a public key that is not its private key's after "${SECRET_KEY_PREFIX}" (the last ${ED25519_KEY_BYTES} bytes)`;
    }
  }
  return null;
}

function signingKeyFrom(seed: Buffer): KeyObject {
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

/** The signing key of a valid `whsk_…` (see secretKeyProblem); throws otherwise. */
export function secretKeyOf(secret: string): KeyObject {
  const problem = secret.startsWith(SECRET_KEY_PREFIX) ? secretKeyProblem(secret) : 'does not start with whsk_';
  if (problem) throw new Error(`not a usable whsk_ key: it ${problem}`);
  return signingKeyFrom(base64After(secret, SECRET_KEY_PREFIX)!.subarray(0, ED25519_KEY_BYTES));
}

/** Whether a secret can sign a Standard Webhooks delivery: a `whsec_` and base64 (`v1`), or a usable `whsk_` (`v1a`). */
export function isSigningSecret(secret: string): boolean {
  if (secret.startsWith(SECRET_KEY_PREFIX)) return secretKeyProblem(secret) === null;
  return secret.startsWith(SYMMETRIC_PREFIX) && base64After(secret, SYMMETRIC_PREFIX) !== null;
}

/** The `whpk_…` that verifies what a `whsk_…` signs. */
export function publicKeyFor(secret: string): string {
  return `${PUBLIC_KEY_PREFIX}${rawPublicKey(createPublicKey(secretKeyOf(secret))).toString('base64')}`;
}

/** A new `v1a` key pair: the sender keeps `secretKey`, the receiver configures `publicKey`. */
export function generateV1aKeyPair(): { secretKey: string; publicKey: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(PKCS8_ED25519_PREFIX.length);
  return { secretKey: `${SECRET_KEY_PREFIX}${seed.toString('base64')}`, publicKey: `${PUBLIC_KEY_PREFIX}${rawPublicKey(publicKey).toString('base64')}` };
}

/** The `v1a,<base64>` entry of `content` (`<webhook-id>.<webhook-timestamp>.<body>`) signed with an ed25519 private key. */
export function signV1a(key: KeyObject, content: string | Buffer): string {
  return `v1a,${sign(null, typeof content === 'string' ? Buffer.from(content, 'utf8') : content, key).toString('base64')}`;
}

/**
 * A `v1a` candidate: 64 bytes in canonical standard base64 only. Node decodes the other spellings
 * of the last character (its 4 padding bits set) to the same bytes, so they are refused by
 * re-encoding, as `v1` candidates are.
 */
export function decodeEd25519Signature(value: string): Buffer | null {
  if (!BASE64_ED25519_SIGNATURE.test(value)) return null;
  const bytes = Buffer.from(value, 'base64');
  return bytes.toString('base64') === value ? bytes : null;
}

/** Whether `signature` is an ed25519 signature of `content` by `key`. */
export function verifyEd25519(key: KeyObject, content: Buffer, signature: Buffer): boolean {
  return verify(null, content, key, signature);
}

/** Whether a prepared key is an ed25519 public key (a `whpk_`), not an HMAC key. */
export function isEd25519PublicKey(key: object): key is KeyObject {
  return key instanceof KeyObject && key.type === 'public' && key.asymmetricKeyType === 'ed25519';
}
