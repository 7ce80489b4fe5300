import { describeThrown, ignoreLate, isThenable, providerTable, type ProviderAdapter, type ProviderEndpoint } from '../providers';
import { PUBLIC_KEY_PREFIX, SECRET_KEY_PREFIX, secretKeyProblem } from '../providers/standard-keys';
import { parseRedisSeeds } from '../common/redis-connection';
import { isPaymentEventType, PAYMENT_EVENT_TYPES, type PaymentEventType } from '../common/host-events';
import { formatAddressRange, parseAddressRange } from '../common/ip-address';
import {
  CarrierDefinition,
  DEFAULT_TUNING,
  EndpointDefinition,
  PaymentWebhooksOptions,
  ResolvedEventSink,
  ResolvedOptions,
  TuningOptions,
} from './options';

/**
 * A configuration problem. `setting` names the variable (or option) at fault; the message
 * never carries a secret value.
 */
export class ConfigurationError extends Error {
  constructor(
    readonly setting: string,
    readonly problem: string,
  ) {
    super(`${setting}: ${problem}`);
    this.name = 'ConfigurationError';
  }
}

const ENDPOINT_ID = /^[a-z0-9-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** JSON.parse whose error never echoes the input (V8 quotes a snippet of it, which may hold a secret). */
export function parseJsonSetting(setting: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const position = /position (\d+)/.exec(String((err as Error).message))?.[1];
    throw new ConfigurationError(setting, `is not valid JSON${position ? ` (error at character ${position})` : ''}`);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function nonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.trim().length > 0;
}

/** An ISO 8601 instant: a date, a time, and a timezone (`Z` or an offset). */
const ISO_INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})$/i;
const SECRET_KEYS = ['secret', 'expiresAt'];
/**
 * Minimum lengths: a webhook secret is the provider's, so the floor only catches a
 * placeholder or a truncated paste (the contract's own example, `s3cr3t-new`, has 10); the admin
 * token and an event sink's key are the operator's own choice, so theirs are firmer.
 */
export const MIN_WEBHOOK_SECRET_CHARS = 8;
export const MIN_STANDARD_KEY_BYTES = 8;
export const MIN_ADMIN_TOKEN_CHARS = 10;
export const MIN_SINK_KEY_BYTES = 16;

/** Unix milliseconds of an ISO 8601 instant with a timezone, or null. */
export function parseIsoInstant(value: unknown): number | null {
  if (typeof value !== 'string') return null;
  const m = ISO_INSTANT.exec(value);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map((v) => (v === undefined ? 0 : Number(v)));
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) return null;
  const ms = Date.parse(value.replace(/([+-]\d{2})(\d{2})$/, '$1:$2'));
  return Number.isFinite(ms) ? ms : null;
}

/**
 * Endpoint definitions, against the providers the module knows (`table`: the built-in ones and the
 * host's own). `nowMs` decides which secrets have already expired: an endpoint whose every secret
 * has is refused.
 */
export function validateEndpoints(
  setting: string,
  value: unknown,
  nowMs: number = Date.now(),
  table: ReadonlyMap<string, ProviderAdapter> = providerTable(),
): EndpointDefinition[] {
  if (!Array.isArray(value)) throw new ConfigurationError(setting, 'must be a JSON array of endpoint definitions');
  const named = new Set<string>();
  const endpoints = value.map((raw, index) => {
    const where = `endpoint #${index + 1}`;
    if (!isObject(raw)) throw new ConfigurationError(setting, `${where} must be an object`);
    const { id, provider: name, secrets, merchantAccountId, merchantAccountIds, toleranceSeconds, apiKey, apiBaseUrl, pollAfterSeconds, silenceAlertSeconds } = raw;
    if (typeof id !== 'string' || !ENDPOINT_ID.test(id)) {
      throw new ConfigurationError(setting, `${where}: "id" must match [a-z0-9-]{1,64}`);
    }
    const label = `endpoint "${id}"`;
    if (named.has(id)) throw new ConfigurationError(setting, `duplicate endpoint id "${id}"`);
    named.add(id);
    const provider = typeof name === 'string' ? table.get(name) : undefined;
    if (!provider) {
      throw new ConfigurationError(
        setting,
        `${label}: unknown provider ${JSON.stringify(String(name))} (expected one of ${[...table.keys()].join(', ')})`,
      );
    }
    const validated = validateSecrets(setting, label, provider, secrets);
    const live = validated.filter((entry) => typeof entry === 'string' || Date.parse(entry.expiresAt) > nowMs);
    if (provider.secrets === 'required' && live.length === 0) {
      throw new ConfigurationError(setting, `${label}: every secret has already expired ("expiresAt" is in the past)`);
    }
    const accounts = validateAccounts(setting, label, provider, merchantAccountId, merchantAccountIds);
    if (
      toleranceSeconds !== undefined &&
      (typeof toleranceSeconds !== 'number' || !Number.isInteger(toleranceSeconds) || toleranceSeconds < 0)
    ) {
      throw new ConfigurationError(setting, `${label}: "toleranceSeconds" must be a non-negative integer`);
    }
    if ((apiKey !== undefined || apiBaseUrl !== undefined) && !provider.usesApi) {
      const withApi = [...table.values()].filter((p) => p.usesApi).map((p) => p.name);
      throw new ConfigurationError(setting, `${label}: "apiKey" and "apiBaseUrl" are for ${spokenList(withApi)} endpoints only`);
    }
    if (apiKey !== undefined && !nonEmptyString(apiKey)) {
      throw new ConfigurationError(setting, `${label}: "apiKey" must be a non-empty string`);
    }
    if (apiBaseUrl !== undefined && !isHttpUrl(apiBaseUrl)) {
      throw new ConfigurationError(setting, `${label}: "apiBaseUrl" must be an http(s) URL`);
    }
    const settings: Record<string, unknown> = {};
    for (const field of provider.endpointFields ?? []) if (raw[field] !== undefined) settings[field] = raw[field];
    const problem = hookAnswer(setting, label, provider, 'checkEndpoint', typeof apiKey === 'string' ? apiKey : undefined, () =>
      provider.checkEndpoint?.({
        ...(apiKey === undefined ? {} : { apiKey: apiKey as string }),
        ...(apiBaseUrl === undefined ? {} : { apiBaseUrl: apiBaseUrl as string }),
        settings,
      }),
    );
    if (problem) throw new ConfigurationError(setting, `${label}: ${problem}`);
    const definition: EndpointDefinition = {
      id,
      provider: provider.name,
      secrets: validated,
      ...accounts,
      toleranceSeconds: (toleranceSeconds as number | undefined) ?? 300,
      ...settings,
    };
    if (apiKey !== undefined) definition.apiKey = apiKey as string;
    if (provider.usesApi && (apiKey !== undefined || apiBaseUrl !== undefined)) {
      definition.apiBaseUrl = ((apiBaseUrl as string | undefined) ?? provider.usesApi.defaultBaseUrl).replace(/\/+$/, '');
    }
    if (silenceAlertSeconds !== undefined) {
      if (!isWholeAtLeast(silenceAlertSeconds, 60)) throw new ConfigurationError(setting, `${label}: "silenceAlertSeconds" must be an integer of at least 60`);
      definition.silenceAlertSeconds = silenceAlertSeconds;
    }
    if (pollAfterSeconds !== undefined) {
      if (!isWholeAtLeast(pollAfterSeconds, 30) || pollAfterSeconds > MAX_POLL_AFTER_SECONDS) {
        throw new ConfigurationError(setting, `${label}: "pollAfterSeconds" must be an integer from 30 to ${MAX_POLL_AFTER_SECONDS} (a day)`);
      }
      if (!provider.readPayment) {
        throw new ConfigurationError(setting, `${label}: "pollAfterSeconds": provider "${provider.name}" has no payment status read, so its payments cannot be polled`);
      }
      const endpoint: ProviderEndpoint = {
        id,
        merchantAccountId: typeof merchantAccountId === 'string' ? merchantAccountId : null,
        ...(definition.apiKey === undefined ? {} : { apiKey: definition.apiKey }),
        ...(definition.apiBaseUrl === undefined ? {} : { apiBaseUrl: definition.apiBaseUrl }),
        settings,
      };
      if (!provider.readPayment.ready(endpoint)) {
        throw new ConfigurationError(setting, `${label}: "pollAfterSeconds" needs the endpoint's API credentials (${provider.name === 'paypal' ? '"clientId" and "clientSecret"' : '"apiKey"'})`);
      }
      definition.pollAfterSeconds = pollAfterSeconds;
    }
    return definition;
  });
  // Once every definition is well-formed: the floor on each secret's length, never its value.
  for (const endpoint of endpoints) {
    const provider = table.get(endpoint.provider)!;
    endpoint.secrets.forEach((entry, i) => {
      const secret = typeof entry === 'string' ? entry : entry.secret;
      const where = `endpoint "${endpoint.id}": secret #${i + 1}`;
      const problem = provider.weakSecret ? hookAnswer(setting, where, provider, 'weakSecret', secret, () => provider.weakSecret!(secret)) : secretTooShort(secret);
      if (problem) throw new ConfigurationError(setting, `${where} ${problem}`);
    });
  }
  return endpoints;
}

/** The longest `pollAfterSeconds`: a payment is polled for 7 days after its last change, a day is the longest useful first wait. */
const MAX_POLL_AFTER_SECONDS = 86_400;

/** A JSON number that is a whole number of at least `min`. */
function isWholeAtLeast(value: unknown, min: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min;
}

/**
 * What a provider's start-up hook (`checkSecret`, `weakSecret`, `checkEndpoint`) answered: its
 * problem, or null. It answers at once, with text or nothing: a promise (its rejection handled) or
 * a value of another kind stops the start, and so does a throw, whose message is shown without the
 * value the hook was given (`given`: the secret, or the API key).
 */
function hookAnswer(setting: string, where: string, provider: ProviderAdapter, hook: string, given: string | undefined, call: () => unknown): string | null {
  const refuse = (why: string): never => {
    throw new ConfigurationError(setting, `${where}: provider "${provider.name}" ${hook} ${why}`);
  };
  let answer: unknown;
  try {
    answer = call();
  } catch (err) {
    const message = describeThrown(err);
    return refuse(`threw: ${given ? message.split(given).join('[redacted]') : message}`);
  }
  if (answer === null || answer === undefined || answer === '') return null;
  if (typeof answer === 'string') return answer;
  ignoreLate(answer);
  let kind: string = typeof answer;
  try {
    if (isThenable(answer)) kind = 'a promise';
  } catch {
    // Its `then` cannot be read: an object.
  }
  return refuse(`must return its problem as text, or null, at once (it returned ${kind})`);
}

/** Why a well-formed secret is too short to be a real one, or null (the default floor). */
function secretTooShort(secret: string): string | null {
  return secret.length < MIN_WEBHOOK_SECRET_CHARS ? `is shorter than ${MIN_WEBHOOK_SECRET_CHARS} characters` : null;
}

/**
 * An endpoint's `secrets`: one or more for a provider that checks them (each a string or
 * `{ secret, expiresAt }`), none for one whose deliveries prove themselves another way.
 */
function validateSecrets(setting: string, label: string, provider: ProviderAdapter, secrets: unknown): EndpointDefinition['secrets'] {
  if (provider.secrets === 'none') {
    if (secrets === undefined || (Array.isArray(secrets) && secrets.length === 0)) return [];
    throw new ConfigurationError(setting, `${label}: ${provider.name} endpoints have no secrets (a delivery is checked with the provider itself); leave "secrets" out`);
  }
  // A string, or { secret, expiresAt }; anything else in the array is the old one-line error.
  if (!Array.isArray(secrets) || secrets.length === 0 || !secrets.every((s) => nonEmptyString(s) || isObject(s))) {
    throw new ConfigurationError(setting, `${label}: "secrets" must be a non-empty array of non-empty strings`);
  }
  return secrets.map((entry: unknown, i: number) => validateSecret(setting, label, provider, entry, i));
}

/** One entry of `secrets`: the provider's rules on the secret; an `expiresAt` that is an instant. */
function validateSecret(
  setting: string,
  label: string,
  provider: ProviderAdapter,
  entry: unknown,
  i: number,
): string | { secret: string; expiresAt: string } {
  const where = `${label}: secret #${i + 1}`;
  let secret: string;
  let expiresAt: string | undefined;
  if (typeof entry === 'string') {
    secret = entry;
  } else {
    const object = entry as Record<string, unknown>;
    const unknown = Object.keys(object).filter((k) => !SECRET_KEYS.includes(k));
    if (unknown.length > 0) {
      // Key names only, never a value.
      throw new ConfigurationError(
        setting,
        `${where} has unknown key ${unknown.map((k) => JSON.stringify(k.slice(0, 40))).join(', ')} (known: secret, expiresAt)`,
      );
    }
    if (!nonEmptyString(object.secret)) throw new ConfigurationError(setting, `${where}: "secret" must be a non-empty string`);
    if (parseIsoInstant(object.expiresAt) === null) {
      throw new ConfigurationError(setting, `${where}: "expiresAt" must be an ISO 8601 instant with a timezone, such as 2026-01-31T00:00:00Z`);
    }
    secret = object.secret;
    expiresAt = object.expiresAt as string;
  }
  // The provider's words, never the secret's value.
  const problem = hookAnswer(setting, where, provider, 'checkSecret', secret, () => provider.checkSecret?.(secret));
  if (problem) throw new ConfigurationError(setting, `${where} ${problem}`);
  return expiresAt === undefined ? secret : { secret, expiresAt };
}

/** Exactly one of `merchantAccountId` and `merchantAccountIds` (the latter where events declare their account). */
function validateAccounts(
  setting: string,
  label: string,
  provider: ProviderAdapter,
  merchantAccountId: unknown,
  merchantAccountIds: unknown,
): { merchantAccountId: string } | { merchantAccountIds: string[] } {
  if (merchantAccountIds === undefined) {
    if (!nonEmptyString(merchantAccountId)) {
      throw new ConfigurationError(setting, `${label}: "merchantAccountId" is required`);
    }
    return { merchantAccountId };
  }
  if (merchantAccountId !== undefined) {
    throw new ConfigurationError(setting, `${label}: set "merchantAccountId" or "merchantAccountIds", not both`);
  }
  if (!provider.declaresAccount) {
    throw new ConfigurationError(
      setting,
      `${label}: "merchantAccountIds" is not available for ${provider.name} (its bodies declare no account); use "merchantAccountId"`,
    );
  }
  if (!Array.isArray(merchantAccountIds) || merchantAccountIds.length === 0 || !merchantAccountIds.every(nonEmptyString)) {
    throw new ConfigurationError(setting, `${label}: "merchantAccountIds" must be a non-empty array of non-empty strings, or ["*"]`);
  }
  if (merchantAccountIds.includes('*') && merchantAccountIds.length > 1) {
    throw new ConfigurationError(setting, `${label}: "merchantAccountIds" holds "*" (any account) with other accounts; use ["*"] alone`);
  }
  return { merchantAccountIds: [...new Set(merchantAccountIds as string[])] };
}

export function validateCarriers(setting: string, value: unknown): CarrierDefinition[] {
  if (!Array.isArray(value)) throw new ConfigurationError(setting, 'must be a JSON array of carrier definitions');
  const named = new Set<string>();
  return value.map((raw, index) => {
    const where = `carrier #${index + 1}`;
    if (!isObject(raw)) throw new ConfigurationError(setting, `${where} must be an object`);
    const { name, url, apiKey, timeoutMs } = raw;
    if (!nonEmptyString(name)) throw new ConfigurationError(setting, `${where}: "name" is required`);
    if (named.has(name)) throw new ConfigurationError(setting, `duplicate carrier name "${name}"`);
    named.add(name);
    if (!isHttpUrl(url)) throw new ConfigurationError(setting, `carrier "${name}": "url" must be an http(s) URL`);
    if (apiKey !== undefined && !nonEmptyString(apiKey)) {
      throw new ConfigurationError(setting, `carrier "${name}": "apiKey" must be a non-empty string`);
    }
    if (timeoutMs !== undefined && !isPositiveInteger(timeoutMs)) {
      throw new ConfigurationError(setting, `carrier "${name}": "timeoutMs" must be a positive integer`);
    }
    return { name, url: url.replace(/\/+$/, ''), apiKey: apiKey as string | undefined, timeoutMs: timeoutMs as number | undefined };
  });
}

/** Event sinks: a name, an http(s) URL and a Standard Webhooks signing secret each (`whsec_` or `whsk_`). */
export function validateEventSinks(setting: string, value: unknown): ResolvedEventSink[] {
  if (!Array.isArray(value)) throw new ConfigurationError(setting, 'must be a JSON array of event sinks');
  const named = new Set<string>();
  return value.map((raw, index) => {
    const where = `sink #${index + 1}`;
    if (!isObject(raw)) throw new ConfigurationError(setting, `${where} must be an object`);
    const { name, url, secret, types, timeoutMs } = raw;
    if (typeof name !== 'string' || !/^[A-Za-z0-9_.:-]{1,64}$/.test(name)) {
      throw new ConfigurationError(setting, `${where}: "name" is required (1–64 letters, digits, _ . : -)`);
    }
    if (named.has(name)) throw new ConfigurationError(setting, `duplicate sink name "${name}"`);
    named.add(name);
    if (!isHttpUrl(url)) throw new ConfigurationError(setting, `sink "${name}": "url" must be an http(s) URL`);
    // `whsec_` signs `v1` (HMAC-SHA256), `whsk_` (an ed25519 private key) signs `v1a`.
    const signsV1a = typeof secret === 'string' && secret.startsWith(SECRET_KEY_PREFIX);
    if (typeof secret === 'string' && secret.startsWith(PUBLIC_KEY_PREFIX)) {
      throw new ConfigurationError(setting, `sink "${name}": "secret" is a public key ("${PUBLIC_KEY_PREFIX}"): a sink signs, with the private key ("${SECRET_KEY_PREFIX}"), and its receiver verifies with the "${PUBLIC_KEY_PREFIX}"`);
    }
    if (typeof secret !== 'string' || !(signsV1a || secret.startsWith('whsec_'))) {
      throw new ConfigurationError(setting, `sink "${name}": "secret" must be a Standard Webhooks secret starting with "whsec_" or "${SECRET_KEY_PREFIX}"`);
    }
    const signingKeyProblem = signsV1a ? secretKeyProblem(secret) : null;
    if (signingKeyProblem) throw new ConfigurationError(setting, `sink "${name}": "secret" ${signingKeyProblem}`);
    const key = secret.slice('whsec_'.length);
    if (!signsV1a && (!BASE64.test(key) || Buffer.from(key, 'base64').length === 0)) {
      throw new ConfigurationError(setting, `sink "${name}": "secret" is not base64 after "whsec_"`);
    }
    let received: PaymentEventType[] | '*' = '*';
    if (types !== undefined && types !== '*' && !(Array.isArray(types) && types.length === 1 && types[0] === '*')) {
      if (!Array.isArray(types) || types.length === 0) {
        throw new ConfigurationError(setting, `sink "${name}": "types" must be a non-empty array of event types`);
      }
      const unknown = types.filter((t) => !isPaymentEventType(t));
      if (unknown.length > 0) {
        throw new ConfigurationError(
          setting,
          `sink "${name}": unknown event type ${unknown.map((t) => JSON.stringify(String(t))).join(', ')} (known: ${PAYMENT_EVENT_TYPES.join(', ')})`,
        );
      }
      received = [...new Set(types as PaymentEventType[])];
    }
    if (timeoutMs !== undefined && !isPositiveInteger(timeoutMs)) {
      throw new ConfigurationError(setting, `sink "${name}": "timeoutMs" must be a positive integer`);
    }
    if (!signsV1a && Buffer.from(key, 'base64').length < MIN_SINK_KEY_BYTES) {
      throw new ConfigurationError(setting, `sink "${name}": "secret" decodes to fewer than ${MIN_SINK_KEY_BYTES} bytes after "whsec_"`);
    }
    return { name, url, secret, types: received, timeoutMs: (timeoutMs as number | undefined) ?? 10_000 };
  });
}

export function isHttpUrl(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value > 0;
}

function checkUrl(setting: string, value: unknown, protocols: string[]): string {
  if (typeof value !== 'string') throw new ConfigurationError(setting, 'is required');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigurationError(setting, 'is not a valid URL');
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigurationError(setting, `must start with ${protocols.map((p) => `${p}//`).join(' or ')}`);
  }
  return value;
}

function checkPositiveInteger(setting: string, value: unknown, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  if (!isPositiveInteger(value)) throw new ConfigurationError(setting, 'must be a positive integer');
  if (value < min) throw new ConfigurationError(setting, `must be at least ${min}`);
  return value;
}

/**
 * Validates module options (the same rules as the environment) and fills defaults.
 * `names` maps each option to the name it is reported under (the environment variable, for the
 * standalone app).
 */
export function resolveOptions(
  options: PaymentWebhooksOptions,
  names: Partial<Record<keyof PaymentWebhooksOptions, string>> = {},
): ResolvedOptions {
  const name = (key: keyof PaymentWebhooksOptions) => names[key] ?? key;
  const redisCluster = checkBoolean(name('redisCluster'), options.redisCluster, false);
  const queuePrefix = checkQueuePrefix(name('queuePrefix'), options.queuePrefix, redisCluster);
  const adminToken = options.adminToken && options.adminToken.length > 0 ? options.adminToken : null;
  const carriers = validateCarriers(name('carriers'), options.carriers === undefined ? [] : options.carriers);
  // Checked here, before any connection opens: a module that fails to start must leave nothing behind.
  const carrierNames = new Set(carriers.map((c) => c.name));
  for (const adapter of options.carrierAdapters ?? []) {
    if (!adapter || typeof adapter.name !== 'string' || typeof adapter.ship !== 'function') {
      throw new ConfigurationError('carrierAdapters', 'each adapter needs a name and a ship() method');
    }
    if (carrierNames.has(adapter.name)) {
      throw new ConfigurationError('carrierAdapters', `two carriers are named "${adapter.name}"`);
    }
    carrierNames.add(adapter.name);
  }
  let providers: ReadonlyMap<string, ProviderAdapter>;
  try {
    providers = providerTable(options.providers ?? []);
  } catch (err) {
    throw new ConfigurationError(name('providers'), (err as Error).message);
  }
  const webhookMaxBodyBytes = checkPositiveInteger(name('webhookMaxBodyBytes'), options.webhookMaxBodyBytes, 1_048_576);
  const resolved: ResolvedOptions = {
    databaseUrl: checkUrl(name('databaseUrl'), options.databaseUrl, ['postgres:', 'postgresql:']),
    schema: checkSchema(name('schema'), options.schema),
    routePrefix: checkRoutePrefix(name('routePrefix'), options.routePrefix),
    redisUrl: redisCluster ? checkClusterUrl(name('redisUrl'), options.redisUrl) : checkUrl(name('redisUrl'), options.redisUrl, ['redis:', 'rediss:']),
    redisCluster,
    queuePrefix,
    endpoints: validateEndpoints(name('endpoints'), options.endpoints === undefined ? [] : options.endpoints, Date.now(), providers),
    carriers,
    carrierTimeoutMs: checkPositiveInteger(name('carrierTimeoutMs'), options.carrierTimeoutMs, 10_000),
    carrierMaxAttempts: checkPositiveInteger(name('carrierMaxAttempts'), options.carrierMaxAttempts, 15),
    eventSinks: validateEventSinks(name('eventSinks'), options.eventSinks === undefined ? [] : options.eventSinks),
    eventMaxAttempts: checkPositiveInteger(name('eventMaxAttempts'), options.eventMaxAttempts, 15),
    commandMaxAttempts: checkPositiveInteger(name('commandMaxAttempts'), options.commandMaxAttempts, 15),
    adminToken,
    runWorkers: options.runWorkers ?? true,
    preparedStatements: options.preparedStatements ?? true,
    inboxRetentionDays: checkPositiveInteger(name('inboxRetentionDays'), options.inboxRetentionDays, 90, 7),
    webhookMaxBodyBytes,
    migrationsRun: options.migrationsRun ?? true,
    trustedProxies: checkTrustedProxies(name('trustedProxies'), options.trustedProxies),
    tuning: validateTuning(name('tuning'), options.tuning ?? {}, webhookMaxBodyBytes),
  };
  // Last, so that a short token never hides another problem; the value is never named.
  if (adminToken !== null && adminToken.length < MIN_ADMIN_TOKEN_CHARS) {
    throw new ConfigurationError(name('adminToken'), `is shorter than ${MIN_ADMIN_TOKEN_CHARS} characters`);
  }
  return resolved;
}

function checkBoolean(setting: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new ConfigurationError(setting, 'must be true or false');
  return value;
}

/**
 * BullMQ's key prefix. It may hold one Redis Cluster hash tag, `{…}` with something inside: the
 * part of every key that picks its slot, which keeps each queue's keys (its Lua scripts touch
 * several at once) in one slot. On a cluster it must hold one; unset, it is `{pw}` there and `pw`
 * on one server.
 */
function checkQueuePrefix(setting: string, value: unknown, cluster: boolean): string {
  if (value === undefined) return cluster ? '{pw}' : 'pw';
  if (typeof value !== 'string' || !/^[A-Za-z0-9_.:{}-]{1,64}$/.test(value)) {
    throw new ConfigurationError(setting, 'must be 1–64 characters of letters, digits, _ . : -');
  }
  const open = value.indexOf('{');
  const close = value.indexOf('}');
  const braces = value.replace(/[^{}]/g, '');
  if (braces !== '' && (braces !== '{}' || close < open + 2)) {
    throw new ConfigurationError(setting, 'may hold one hash tag only: a { and a later }, with something between them, such as {pw}');
  }
  if (cluster && braces === '') {
    throw new ConfigurationError(setting, 'must contain a hash tag such as {pw} on a Redis Cluster');
  }
  return value;
}

/** The seed nodes of a cluster: `redis://[user:password@]host:port[,host:port…]`. */
function checkClusterUrl(setting: string, value: unknown): string {
  if (typeof value !== 'string') throw new ConfigurationError(setting, 'is required');
  try {
    parseRedisSeeds(value);
  } catch (err) {
    throw new ConfigurationError(setting, (err as Error).message);
  }
  return value;
}

/** A plain PostgreSQL identifier: it is written into SQL (search_path, CREATE SCHEMA) unquoted. */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

function checkSchema(setting: string, value: unknown): string {
  if (value === undefined) return 'payment_webhooks';
  if (typeof value !== 'string' || !SCHEMA_NAME.test(value)) {
    throw new ConfigurationError(setting, 'must be a plain identifier: [a-z_][a-z0-9_]{0,62}');
  }
  if (value.startsWith('pg_')) throw new ConfigurationError(setting, 'must not start with "pg_" (reserved by PostgreSQL)');
  return value;
}

/** `pay`, `/pay`, `/pay/` and `/api/pay` are all fine; the result is `''` or `/a[/b…]`. */
function checkRoutePrefix(setting: string, value: unknown): string {
  if (value === undefined || value === '' || value === '/') return '';
  if (typeof value !== 'string') throw new ConfigurationError(setting, 'must be a path such as /pay');
  const trimmed = value.replace(/^\/+|\/+$/g, '');
  if (!/^[A-Za-z0-9._~-]+(\/[A-Za-z0-9._~-]+)*$/.test(trimmed) || trimmed.split('/').some((s) => s === '.' || s === '..')) {
    throw new ConfigurationError(setting, 'must be a path of plain segments such as /pay (letters, digits, . _ ~ -)');
  }
  return `/${trimmed}`;
}

/**
 * The reverse proxies whose `X-Forwarded-For` is believed: a list of addresses and CIDR ranges,
 * each returned as `address/prefix` (an IPv4-mapped IPv6 address as the IPv4 one, since that is
 * how Node reports an IPv4 client on a dual-stack socket). A host name is refused: it would be
 * looked up, and a lookup is not a decision to trust.
 */
export function checkTrustedProxies(setting: string, value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ConfigurationError(setting, 'must be a list of addresses and CIDR ranges, such as 10.0.0.0/8,::1');
  const ranges = value.map((entry, i) => {
    if (typeof entry !== 'string' || entry.trim() === '') throw new ConfigurationError(setting, `entry #${i + 1} is empty or not a string`);
    const range = parseAddressRange(entry.trim());
    if (typeof range === 'string') throw new ConfigurationError(setting, `entry #${i + 1} ${JSON.stringify(entry.trim().slice(0, 60))} ${range}`);
    return formatAddressRange(range);
  });
  return [...new Set(ranges)];
}

/**
 * Tuning overrides: known keys only, each a positive integer. One client's share of the unverified
 * bytes is within their budget; unset, it is a quarter of the budget, but never less than one body
 * of the size limit (`maxBodyBytes`) unless the budget itself is less.
 */
export function validateTuning(setting: string, value: unknown, maxBodyBytes: number): TuningOptions {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigurationError(setting, 'must be an object of tuning values');
  }
  const known = Object.keys(DEFAULT_TUNING) as Array<keyof TuningOptions>;
  // Own keys only (JSON.parse makes `__proto__` an own key), each one of DEFAULT_TUNING's own:
  // `in` would let `constructor`, `toString` or `__proto__` through from Object.prototype.
  for (const key of Reflect.ownKeys(value)) {
    if (typeof key !== 'string' || !Object.hasOwn(DEFAULT_TUNING, key)) {
      throw new ConfigurationError(setting, `unknown tuning key ${JSON.stringify(String(key).slice(0, 40))} (known: ${known.join(', ')})`);
    }
    if (!isPositiveInteger((value as Record<string, unknown>)[key])) throw new ConfigurationError(setting, `"${key}" must be a positive integer`);
  }
  // Built key by key from the known list: nothing else, whatever the object's prototype holds.
  const given = value as Partial<Record<keyof TuningOptions, number>>;
  const tuning = {} as TuningOptions;
  for (const key of known) tuning[key] = Object.hasOwn(given, key) ? given[key]! : DEFAULT_TUNING[key];
  const budget = tuning.unverifiedBodyBudgetBytes;
  if (!Object.hasOwn(given, 'unverifiedBodyClientShareBytes')) {
    tuning.unverifiedBodyClientShareBytes = Math.min(budget, Math.max(Math.floor(budget / 4), maxBodyBytes));
  } else if (tuning.unverifiedBodyClientShareBytes > budget) {
    throw new ConfigurationError(setting, `"unverifiedBodyClientShareBytes" must not be above "unverifiedBodyBudgetBytes" (${budget})`);
  }
  return tuning;
}

/** `a`, `a and b`, `a, b and c`: names as a sentence lists them. */
function spokenList(names: readonly string[]): string {
  return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}
