import type { IncomingHttpHeaders } from 'node:http';
import { liveKeys, type ResolvedEndpoint } from '../config/endpoints';
import { checkHmac, HmacProvider } from '../providers';

export { liveKeys, resolveEndpoint, type ResolvedEndpoint } from '../config/endpoints';
export { eventAccount, servesAccount } from '../providers';

export type SignatureFailure = 'missing_signature' | 'invalid_signature' | 'timestamp_out_of_tolerance';

export type Verification =
  | { ok: true; /** index of the configured secret that matched (rotation metrics) */ secretIndex: number }
  | { ok: false; error: SignatureFailure };

/**
 * Checks the signature of a delivery to an endpoint of an HMAC provider over its raw bytes (checks
 * 3–5 of docs/webhooks.md#checks-and-answers): one HMAC per live configured secret (an expired one
 * is skipped, from its `expiresAt` on), each compared with every candidate in constant time; then
 * the signed timestamp, in both directions.
 */
export function verifySignature(
  endpoint: ResolvedEndpoint,
  headers: IncomingHttpHeaders,
  rawBody: Buffer,
  nowSeconds: number,
  /** The same moment in milliseconds, which the secrets' expiry is compared with; default nowSeconds × 1000. */
  nowMs: number = nowSeconds * 1000,
): Verification {
  const provider = endpoint.provider as HmacProvider;
  if (typeof provider.signature !== 'function') throw new Error(`provider "${provider.name}" is not of the HMAC scheme`);
  return checkHmac(provider, headers, rawBody, { keys: liveKeys(endpoint, nowMs), nowMs: nowSeconds * 1000, toleranceSeconds: endpoint.toleranceSeconds });
}
