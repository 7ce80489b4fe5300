import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { EndpointDefinition } from '../config/options';
import { parseIsoInstant } from '../config/validate';
import { PROVIDERS, ProviderAdapter } from './providers';

/** An endpoint ready for the receive path: adapter looked up, keys decoded once. */
export interface ResolvedEndpoint {
  id: string;
  provider: ProviderAdapter;
  /** The one account of a single-account endpoint; null on a `merchantAccountIds` endpoint. */
  merchantAccountId: string | null;
  /** The accounts a multi-account endpoint serves (`'*'`: any); null on a single-account endpoint. */
  merchantAccountIds: string[] | '*' | null;
  toleranceSeconds: number;
  keys: Buffer[];
  /** Per key: the unix millisecond from which it no longer verifies, or null (never expires). */
  expiresAtMs: Array<number | null>;
}

export function resolveEndpoint(definition: EndpointDefinition): ResolvedEndpoint {
  const provider = PROVIDERS[definition.provider];
  const ids = definition.merchantAccountIds;
  return {
    id: definition.id,
    provider,
    merchantAccountId: ids === undefined ? (definition.merchantAccountId ?? null) : null,
    merchantAccountIds: ids === undefined ? null : ids.includes('*') ? '*' : [...ids],
    toleranceSeconds: definition.toleranceSeconds ?? 300,
    keys: definition.secrets.map((entry) => provider.key(typeof entry === 'string' ? entry : entry.secret)),
    expiresAtMs: definition.secrets.map((entry) => (typeof entry === 'string' ? null : parseIsoInstant(entry.expiresAt))),
  };
}

/**
 * The merchant account of an event received on `endpoint`: the endpoint's own, or on a
 * multi-account endpoint the account the body declares (null when it declares none).
 */
export function eventAccount(endpoint: ResolvedEndpoint, declared: string | null): string | null {
  return endpoint.merchantAccountId ?? declared;
}

/** Whether a multi-account endpoint serves `account` (a single-account endpoint: its own only). */
export function servesAccount(endpoint: Pick<ResolvedEndpoint, 'merchantAccountId' | 'merchantAccountIds'>, account: string): boolean {
  if (endpoint.merchantAccountIds === '*') return true;
  if (endpoint.merchantAccountIds !== null) return endpoint.merchantAccountIds.includes(account);
  return endpoint.merchantAccountId === account;
}

export type SignatureFailure = 'missing_signature' | 'invalid_signature' | 'timestamp_out_of_tolerance';

export type Verification =
  | { ok: true; /** index of the configured secret that matched (rotation metrics) */ secretIndex: number }
  | { ok: false; error: SignatureFailure };

/**
 * Checks a delivery's signature over its raw bytes: one HMAC per live configured secret (an
 * expired one is skipped, from its `expiresAt` on), each compared with every `v1` candidate in
 * constant time; then the signed timestamp, in both directions (checks 3–5 of
 * docs/webhooks.md#checks-and-answers).
 */
export function verifySignature(
  endpoint: ResolvedEndpoint,
  headers: IncomingHttpHeaders,
  rawBody: Buffer,
  nowSeconds: number,
  /** The same moment in milliseconds, which the secrets' expiry is compared with; default nowSeconds × 1000. */
  nowMs: number = nowSeconds * 1000,
): Verification {
  const parts = endpoint.provider.signature(headers);
  if (!parts) return { ok: false, error: 'missing_signature' };

  let secretIndex = -1;
  if (parts.candidates.length > 0) {
    for (let i = 0; i < endpoint.keys.length && secretIndex < 0; i++) {
      // An expired secret no longer verifies, and costs no HMAC.
      const expiresAt = endpoint.expiresAtMs[i];
      if (expiresAt != null && nowMs >= expiresAt) continue;
      const expected = createHmac('sha256', endpoint.keys[i]).update(parts.prefix).update(rawBody).digest();
      for (const candidate of parts.candidates) {
        // Candidates are decoded to 32 bytes by the adapter, so the lengths are equal.
        if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) {
          secretIndex = i;
          break;
        }
      }
    }
  }
  if (secretIndex < 0) return { ok: false, error: 'invalid_signature' };

  if (endpoint.toleranceSeconds > 0 && parts.timestamp !== null) {
    if (Math.abs(nowSeconds - parts.timestamp) > endpoint.toleranceSeconds) {
      return { ok: false, error: 'timestamp_out_of_tolerance' };
    }
  }
  return { ok: true, secretIndex };
}
