import { describeThrown, ignoreLate, isThenable, LiveKey, ProviderAdapter, ProviderEndpoint, providerTable, ReceivingEndpoint } from '../providers';
import type { EndpointDefinition } from './options';
import { parseIsoInstant } from './validate';

/** An endpoint ready for the receive path: adapter looked up, keys decoded once. */
export interface ResolvedEndpoint extends ReceivingEndpoint {
  id: string;
  provider: ProviderAdapter;
  /** The one account of a single-account endpoint; null on a `merchantAccountIds` endpoint. */
  merchantAccountId: string | null;
  /** The accounts a multi-account endpoint serves (`'*'`: any); null on a single-account endpoint. */
  merchantAccountIds: string[] | '*' | null;
  toleranceSeconds: number;
  /** Each configured secret as its adapter's `prepareKey` decoded it (an HMAC key, a public key…). */
  keys: object[];
  /** Per key: the unix millisecond from which it no longer verifies, or null (never expires). */
  expiresAtMs: Array<number | null>;
  /** What the adapter sees of its endpoint (the API key and the provider's own fields). */
  settings: ProviderEndpoint;
}

const BUILT_IN = providerTable();

/** Resolves a validated definition against the providers the module knows (default: the built-in ones). */
export function resolveEndpoint(definition: EndpointDefinition, table: ReadonlyMap<string, ProviderAdapter> = BUILT_IN): ResolvedEndpoint {
  const provider = table.get(definition.provider);
  if (!provider) throw new Error(`endpoint "${definition.id}": unknown provider "${definition.provider}"`);
  const ids = definition.merchantAccountIds;
  const merchantAccountId = ids === undefined ? (definition.merchantAccountId ?? null) : null;
  const settings: Record<string, unknown> = {};
  for (const field of provider.endpointFields ?? []) if (definition[field] !== undefined) settings[field] = definition[field];
  return {
    id: definition.id,
    provider,
    merchantAccountId,
    merchantAccountIds: ids === undefined ? null : ids.includes('*') ? '*' : [...ids],
    toleranceSeconds: definition.toleranceSeconds ?? 300,
    keys: definition.secrets.map((entry, i) => preparedKey(definition.id, i, provider, typeof entry === 'string' ? entry : entry.secret)),
    expiresAtMs: definition.secrets.map((entry) => (typeof entry === 'string' ? null : parseIsoInstant(entry.expiresAt))),
    settings: {
      id: definition.id,
      merchantAccountId,
      ...(definition.apiKey === undefined ? {} : { apiKey: definition.apiKey }),
      ...(definition.apiBaseUrl === undefined ? {} : { apiBaseUrl: definition.apiBaseUrl }),
      settings,
    },
  };
}

/**
 * A secret as the adapter's `prepareKey` decodes it, once, at start: an object, returned at once.
 * A throw, a promise (its rejection handled) or anything else stops the start with one line, which
 * never shows the secret.
 */
function preparedKey(endpointId: string, index: number, provider: ProviderAdapter, secret: string): object {
  const where = `endpoint "${endpointId}": secret #${index + 1}: provider "${provider.name}" prepareKey`;
  let key: unknown;
  try {
    key = provider.prepareKey(secret);
  } catch (err) {
    throw new Error(`${where} threw: ${describeThrown(err).split(secret).join('[redacted]')}`);
  }
  let thenable = false;
  try {
    thenable = isThenable(key);
  } catch {
    // Its `then` cannot be read: refused below as any key that is not usable.
  }
  if (thenable) ignoreLate(key);
  if (thenable || typeof key !== 'object' || key === null) {
    throw new Error(`${where} must return the key (an object) at once (it returned ${thenable ? 'a promise' : key === null ? 'null' : typeof key})`);
  }
  return key;
}

/** The endpoint's keys that still verify at `nowMs`, in their configured order (an expired one costs nothing). */
export function liveKeys(endpoint: ResolvedEndpoint, nowMs: number): LiveKey[] {
  const live: LiveKey[] = [];
  endpoint.keys.forEach((key, index) => {
    const expiresAt = endpoint.expiresAtMs[index];
    if (expiresAt == null || nowMs < expiresAt) live.push({ index, key });
  });
  return live;
}

