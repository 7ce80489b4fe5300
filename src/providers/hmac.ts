import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderEvent } from '../common/provider-event';
import {
  EnvelopeIdentity,
  LiveKey,
  ProviderAdapter,
  ProviderEndpoint,
  readJsonObject,
  ReceiveContext,
  ReceiveResult,
  RawDelivery,
  SignatureParts,
} from './provider';

/**
 * The scheme most providers share: one event per delivery, signed with an HMAC-SHA256 over the raw
 * bytes (after a prefix: a timestamp, an id), candidates in a header, a timestamp within tolerance.
 * A provider of this kind says how its header reads and how its envelope names its event; the rest
 * is written once (`hmacProvider`).
 */
export interface HmacScheme
  extends Pick<ProviderAdapter, 'name' | 'storedHeaders' | 'signatureHeaders' | 'declaresAccount' | 'checkSecret' | 'weakSecret' | 'endpointFields' | 'checkEndpoint' | 'usesApi' | 'fetchesState' | 'commands' | 'readPayment' | 'healthAlert'> {
  /** The HMAC key of a configured secret. */
  key(secret: string): Buffer;
  /** Parses the signature headers; null when absent or unparseable (`missing_signature`). */
  signature(headers: IncomingHttpHeaders): SignatureParts | null;
  /**
   * Reads the identity of the parsed, verified body; throws MalformedPayloadError. `endpoint` is the
   * receiving endpoint (absent for an event a backfill listed from the provider's API).
   */
  identify(body: Record<string, unknown>, headers: IncomingHttpHeaders, endpoint?: ProviderEndpoint): EnvelopeIdentity;
  normalize(body: Record<string, unknown>, eventType: string, endpoint?: ProviderEndpoint): ProviderEvent | null;
}

/** A provider of the HMAC scheme, with its envelope reader kept (a backfill reads events it fetched itself). */
export type HmacProvider = ProviderAdapter & Pick<HmacScheme, 'identify' | 'signature' | 'key'>;

/**
 * The index of the first live key whose HMAC over `parts.prefix` + `body` equals a candidate, or -1:
 * one HMAC per key, each compared with every candidate in constant time (equal lengths: the
 * candidates are decoded to 32 bytes). A key that is not an HMAC key (a Standard Webhooks `whpk_`
 * public key beside `whsec_` keys) is skipped: it never verifies an HMAC.
 */
export function matchHmac(parts: SignatureParts, body: Buffer, keys: readonly LiveKey[]): number {
  if (parts.candidates.length === 0) return -1;
  for (const { index, key } of keys) {
    if (!Buffer.isBuffer(key)) continue;
    const expected = createHmac('sha256', key).update(parts.prefix).update(body).digest();
    for (const candidate of parts.candidates) {
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) return index;
    }
  }
  return -1;
}

/** Whether a signed timestamp is within `toleranceSeconds` of now, both directions (0: not checked). */
export function withinTolerance(timestamp: number | null, context: Pick<ReceiveContext, 'nowMs' | 'toleranceSeconds'>): boolean {
  if (context.toleranceSeconds <= 0 || timestamp === null) return true;
  return Math.abs(Math.floor(context.nowMs / 1000) - timestamp) <= context.toleranceSeconds;
}

/**
 * Checks 3–5 of docs/webhooks.md#checks-and-answers for a provider of this scheme: the signature
 * header present and parseable, a candidate matching a live key, the timestamp within tolerance.
 */
export function checkHmac(
  scheme: Pick<HmacScheme, 'signature'>,
  headers: IncomingHttpHeaders,
  body: Buffer,
  context: Pick<ReceiveContext, 'keys' | 'nowMs' | 'toleranceSeconds'>,
): { ok: true; secretIndex: number } | { ok: false; error: 'missing_signature' | 'invalid_signature' | 'timestamp_out_of_tolerance' } {
  const parts = scheme.signature(headers);
  if (!parts) return { ok: false, error: 'missing_signature' };
  const secretIndex = matchHmac(parts, body, context.keys);
  if (secretIndex < 0) return { ok: false, error: 'invalid_signature' };
  if (!withinTolerance(parts.timestamp, context)) return { ok: false, error: 'timestamp_out_of_tolerance' };
  return { ok: true, secretIndex };
}

/** A provider of the HMAC scheme: the receive path's checks and the envelope reader around the scheme's parts. */
export function hmacProvider(scheme: HmacScheme): HmacProvider {
  return {
    ...scheme,
    secrets: 'required',
    prepareKey: (secret) => scheme.key(secret),
    receive(delivery: RawDelivery, context: ReceiveContext): ReceiveResult {
      const verified = checkHmac(scheme, delivery.headers, delivery.body, context);
      if (!verified.ok) return verified;
      const { text, body } = readJsonObject(delivery.body);
      return { ok: true, secretIndex: verified.secretIndex, events: [{ ...scheme.identify(body, delivery.headers, context.endpoint), body: text }] };
    },
  };
}
