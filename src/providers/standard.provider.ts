import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderEvent, ProviderEventKind } from '../common/provider-event';
import {
  asObject,
  EnvelopeIdentity,
  header,
  isoDate,
  LiveKey,
  minor,
  optionalId,
  parseUnixSeconds,
  RawDelivery,
  readJsonObject,
  ReceiveContext,
  ReceiveResult,
  requireId,
  SignatureParts,
  text,
} from './provider';
import { HmacProvider, hmacProvider, matchHmac, withinTolerance } from './hmac';
import {
  decodeEd25519Signature,
  isEd25519PublicKey,
  PUBLIC_KEY_PREFIX,
  publicKeyOf,
  publicKeyProblem,
  SECRET_KEY_PREFIX,
  SYMMETRIC_PREFIX,
  verifyEd25519,
} from './standard-keys';

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** The floor on a `whsec_` key: it only catches a placeholder or a truncated paste. */
export const MIN_KEY_BYTES = 8;
const BASE64_SHA256 = /^[A-Za-z0-9+/]{43}=$/;

/**
 * A `v1` candidate in standard base64 (docs/webhooks.md#standard-webhooks), canonical only: 32 bytes take 43
 * characters and `=`, and the last character's 2 padding bits must be zero. Node decodes the
 * other three spellings to the same bytes, so they are refused by re-encoding.
 */
function decodeBase64Signature(value: string): Buffer | null {
  if (!BASE64_SHA256.test(value)) return null;
  const bytes = Buffer.from(value, 'base64');
  return bytes.toString('base64') === value ? bytes : null;
}

/** The service's native event types (docs/webhooks.md#standard-webhooks), as the payment event each is. */
const KINDS: ReadonlyMap<string, ProviderEventKind> = new Map([
  ['payment.pending', 'pending'],
  ['payment.processing', 'processing'],
  ['payment.authorized', 'authorized'],
  ['payment.succeeded', 'succeeded'],
  ['payment.failed', 'failed'],
  ['payment.canceled', 'canceled'],
  ['payment.expired', 'expired'],
  ['payment.refunded', 'refunded'],
  ['payment.disputed', 'disputed'],
  ['payment.dispute_won', 'dispute_won'],
  ['payment.dispute_lost', 'dispute_lost'],
]);

/**
 * The `v1a` entries of one header that are checked (each costs an ed25519 verification per
 * `whpk_` key, about 0.2 ms): the first eight; any further one is ignored, as an entry of an
 * unknown version is.
 */
export const MAX_V1A_ENTRIES = 8;

/** A `webhook-signature` header read: the `v1` candidates (HMAC-SHA256) and the `v1a` ones (ed25519). */
export interface StandardSignatureParts extends SignatureParts {
  /** Decoded `v1a` signatures (64 bytes each); empty when the header has no usable `v1a` entry. */
  v1a: Buffer[];
}

/**
 * `webhook-id`, `webhook-timestamp` and `webhook-signature` (space-separated `<version>,<base64>`
 * entries): null when one is absent or an entry has no version (`missing_signature`). A candidate
 * that is not canonical base64 of its version's length is dropped, and so are other versions.
 */
function parseSignature(headers: IncomingHttpHeaders): StandardSignatureParts | null {
  const id = header(headers, 'webhook-id');
  const raw = header(headers, 'webhook-timestamp');
  const timestamp = parseUnixSeconds(raw);
  const value = header(headers, 'webhook-signature');
  if (!id || timestamp === null || value === undefined || value.trim() === '') return null;
  const candidates: Buffer[] = [];
  const v1a: Buffer[] = [];
  for (const entry of value.trim().split(/\s+/)) {
    const comma = entry.indexOf(',');
    if (comma <= 0) return null;
    const version = entry.slice(0, comma);
    const signature = entry.slice(comma + 1);
    const decoded = version === 'v1' ? decodeBase64Signature(signature) : version === 'v1a' ? decodeEd25519Signature(signature) : null;
    if (!decoded) continue;
    // A sender signs with a key or two (three during a move); past MAX_V1A_ENTRIES a header only
    // costs the receiver verifications, so the rest is not checked.
    if (version === 'v1') candidates.push(decoded);
    else if (v1a.length < MAX_V1A_ENTRIES) v1a.push(decoded);
  }
  return { timestamp, prefix: `${id}.${raw}.`, candidates, v1a };
}

/**
 * The index of a live key that verifies a candidate of its kind, or -1: first the `v1a`
 * candidates against each `whpk_` key (one ed25519 verification per key and candidate, only when
 * the header has `v1a` entries), then the `v1` candidates against each `whsec_` key (one HMAC per
 * key, as for every HMAC provider). A key never verifies a candidate of the other kind, so one
 * header may carry both during a move; a verified `v1a` is the one counted, so the rotation
 * metrics show when the `whsec_` is no longer needed.
 */
export function matchStandard(parts: StandardSignatureParts, body: Buffer, keys: readonly LiveKey[]): number {
  if (parts.v1a.length > 0) {
    let content: Buffer | undefined;
    for (const { index, key } of keys) {
      if (!isEd25519PublicKey(key)) continue;
      content ??= Buffer.concat([Buffer.from(parts.prefix, 'utf8'), body]);
      for (const candidate of parts.v1a) if (verifyEd25519(key, content, candidate)) return index;
    }
  }
  return matchHmac(parts, body, keys);
}

/** Why a `whsec_…` key is refused, or null. */
function symmetricKeyProblem(secret: string): string | null {
  const key = secret.slice(SYMMETRIC_PREFIX.length);
  return BASE64.test(key) && Buffer.from(key, 'base64').length > 0 ? null : `is not base64 after "${SYMMETRIC_PREFIX}"`;
}

/**
 * The `v1` scheme as an HMAC provider: its header reader, its key, its envelope. The standard
 * adapter below keeps it and adds the `v1a` keys and candidates.
 */
const symmetric = hmacProvider({
  name: 'standard',
  declaresAccount: true,
  storedHeaders: ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
  signatureHeaders: ['webhook-signature'],

  key: (secret) => Buffer.from(secret.slice(SYMMETRIC_PREFIX.length), 'base64'),

  checkSecret(secret) {
    if (secret.startsWith(SYMMETRIC_PREFIX)) return symmetricKeyProblem(secret);
    if (secret.startsWith(PUBLIC_KEY_PREFIX)) return publicKeyProblem(secret);
    if (secret.startsWith(SECRET_KEY_PREFIX)) {
      return `is a signing key ("${SECRET_KEY_PREFIX}"): an endpoint verifies "v1a" with its public key ("${PUBLIC_KEY_PREFIX}"); the signing key stays with the sender`;
    }
    return `must start with "${SYMMETRIC_PREFIX}" or "${PUBLIC_KEY_PREFIX}" (Standard Webhooks)`;
  },

  weakSecret(secret) {
    // A public key's length is fixed, and checked with its form.
    if (secret.startsWith(PUBLIC_KEY_PREFIX)) return null;
    const bytes = Buffer.from(secret.slice(SYMMETRIC_PREFIX.length), 'base64').length;
    return bytes < MIN_KEY_BYTES ? `decodes to fewer than ${MIN_KEY_BYTES} bytes after "${SYMMETRIC_PREFIX}"` : null;
  },

  signature: parseSignature,

  identify(body, headers): EnvelopeIdentity {
    return {
      eventId: requireId(header(headers, 'webhook-id'), 'webhook-id'),
      eventType: requireId(body.type, 'type'),
      resourceId: optionalId(asObject(body.data)?.payment_id, 'data.payment_id'),
      deliveryId: null,
      // A declared account is keyed on and compared: an unprintable one is malformed, not "none declared".
      account: optionalId(asObject(body.data)?.account_id, 'data.account_id'),
      apiVersion: null,
    };
  },

  normalize(body, eventType): ProviderEvent | null {
    const kind = KINDS.get(eventType);
    const envelope = asObject(body);
    const data = asObject(envelope?.data);
    const resourceId = text(data?.payment_id);
    if (!kind || !data || resourceId === null) return null;
    return {
      kind,
      resourceId,
      orderId: text(data.order_id),
      amount: minor(data.amount),
      currency: text(data.currency),
      refundedAmount: kind === 'refunded' ? minor(data.amount_refunded) : null,
      declaredAccount: text(data.account_id),
      occurredAt: isoDate(envelope?.timestamp),
    };
  },
});

/**
 * Standard Webhooks (docs/webhooks.md#standard-webhooks): `webhook-signature` entries `v1,<base64>`
 * (HMAC-SHA256 keyed with the base64 part of `whsec_…`) and `v1a,<base64>` (ed25519, checked with
 * the public key of `whpk_…`), over `<webhook-id>.<webhook-timestamp>.<body>`; an endpoint's
 * secrets may mix both kinds. The checks keep their order: the header, a candidate matching a live
 * key of its kind, the timestamp, then the body.
 */
export const standardProvider: Omit<HmacProvider, 'signature'> & { signature(headers: IncomingHttpHeaders): StandardSignatureParts | null } = {
  ...symmetric,
  signature: parseSignature,
  prepareKey: (secret) => (secret.startsWith(PUBLIC_KEY_PREFIX) ? publicKeyOf(secret) : symmetric.key(secret)),
  receive(delivery: RawDelivery, context: ReceiveContext): ReceiveResult {
    const parts = parseSignature(delivery.headers);
    if (!parts) return { ok: false, error: 'missing_signature' };
    const secretIndex = matchStandard(parts, delivery.body, context.keys);
    if (secretIndex < 0) return { ok: false, error: 'invalid_signature' };
    if (!withinTolerance(parts.timestamp, context)) return { ok: false, error: 'timestamp_out_of_tolerance' };
    const { text: json, body } = readJsonObject(delivery.body);
    return { ok: true, secretIndex, events: [{ ...symmetric.identify(body, delivery.headers), body: json }] };
  },
};
