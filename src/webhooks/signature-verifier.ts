import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { EndpointDefinition } from '../config/options';
import { PROVIDERS, ProviderAdapter } from './providers';

/** An endpoint ready for the receive path: adapter looked up, keys decoded once. */
export interface ResolvedEndpoint {
  id: string;
  provider: ProviderAdapter;
  merchantAccountId: string;
  toleranceSeconds: number;
  keys: Buffer[];
}

export function resolveEndpoint(definition: EndpointDefinition): ResolvedEndpoint {
  const provider = PROVIDERS[definition.provider];
  return {
    id: definition.id,
    provider,
    merchantAccountId: definition.merchantAccountId,
    toleranceSeconds: definition.toleranceSeconds ?? 300,
    keys: definition.secrets.map((secret) => provider.key(secret)),
  };
}

export type SignatureFailure = 'missing_signature' | 'invalid_signature' | 'timestamp_out_of_tolerance';

export type Verification =
  | { ok: true; /** index of the configured secret that matched (rotation metrics) */ secretIndex: number }
  | { ok: false; error: SignatureFailure };

/**
 * Checks a delivery's signature over its raw bytes: one HMAC per configured secret, each
 * compared with every `v1` candidate in constant time; then the signed timestamp, in both
 * directions (CONTRACT §2, checks 3–5).
 */
export function verifySignature(
  endpoint: ResolvedEndpoint,
  headers: IncomingHttpHeaders,
  rawBody: Buffer,
  nowSeconds: number,
): Verification {
  const parts = endpoint.provider.signature(headers);
  if (!parts) return { ok: false, error: 'missing_signature' };

  let secretIndex = -1;
  if (parts.candidates.length > 0) {
    for (let i = 0; i < endpoint.keys.length && secretIndex < 0; i++) {
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
