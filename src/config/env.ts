import { readFileSync } from 'node:fs';
import { PaymentWebhooksOptions, ResolvedOptions } from './options';
import { ConfigurationError, parseJsonSetting, resolveOptions } from './validate';

export const HTTP_ADAPTERS = ['express', 'fastify'] as const;
export type HttpAdapterName = (typeof HTTP_ADAPTERS)[number];

export interface StandaloneConfig {
  port: number;
  /** The address to listen on (`HOST`); undefined: every interface. */
  host?: string;
  runHttp: boolean;
  /** The HTTP platform of the standalone service (`HTTP_ADAPTER`). */
  httpAdapter: HttpAdapterName;
  options: ResolvedOptions;
}

export const DEFAULT_DATABASE_URL = 'postgres://postgres:postgres@127.0.0.1:5432/payments';
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

type Env = Record<string, string | undefined>;

function present(env: Env, key: string): string | undefined {
  const value = env[key];
  return value === undefined || value.trim() === '' ? undefined : value;
}

function integer(env: Env, key: string): number | undefined {
  const value = present(env, key);
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value.trim()) || Number(value) <= 0 || !Number.isSafeInteger(Number(value))) {
    throw new ConfigurationError(key, 'must be a positive integer');
  }
  return Number(value);
}

function boolean(env: Env, key: string, fallback: boolean): boolean {
  const value = present(env, key)?.trim().toLowerCase();
  if (value === undefined) return fallback;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new ConfigurationError(key, 'must be true or false');
}

/** One JSON setting given inline (`NAME`) or as a file (`NAME_FILE`); both at once is an error. */
function jsonInlineOrFile(env: Env, inline: string, file: string): { setting: string; value: unknown } | undefined {
  const text = present(env, inline);
  const path = present(env, file);
  if (text !== undefined && path !== undefined) {
    throw new ConfigurationError(`${inline} and ${file}`, 'both are set; set only one');
  }
  if (text !== undefined) return { setting: inline, value: parseJsonSetting(inline, text) };
  if (path !== undefined) {
    let content: string;
    try {
      content = readFileSync(path, 'utf8');
    } catch (err) {
      throw new ConfigurationError(file, `cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    return { setting: file, value: parseJsonSetting(file, content) };
  }
  return undefined;
}

/**
 * Reads and validates the environment of the standalone app. Throws a
 * ConfigurationError naming the variable; never echoes a secret.
 */
export function loadStandaloneConfig(env: Env = process.env): StandaloneConfig {
  const port = integer(env, 'PORT') ?? 3000;
  if (port > 65535) throw new ConfigurationError('PORT', 'must be at most 65535');
  // `[::1]` as a URL writes it is `::1` to listen on.
  const host = present(env, 'HOST')?.trim().replace(/^\[(.*)\]$/, '$1');
  if (host !== undefined && !/^[A-Za-z0-9.:[\]-]{1,253}$/.test(host)) {
    throw new ConfigurationError('HOST', 'must be an address or a host name to listen on (127.0.0.1, ::1, 0.0.0.0)');
  }

  const endpoints = jsonInlineOrFile(env, 'WEBHOOK_ENDPOINTS', 'WEBHOOK_ENDPOINTS_FILE');

  let carriersSetting = 'CARRIERS';
  let carriers: unknown = [];
  const carriersJson = present(env, 'CARRIERS');
  const carrierUrl = present(env, 'CARRIER_URL');
  if (carriersJson !== undefined && carrierUrl !== undefined) {
    throw new ConfigurationError('CARRIERS and CARRIER_URL', 'both are set; set only one');
  }
  if (carriersJson !== undefined) {
    carriers = parseJsonSetting('CARRIERS', carriersJson);
  } else if (carrierUrl !== undefined) {
    carriersSetting = 'CARRIER_URL';
    carriers = [{ name: 'default', url: carrierUrl, apiKey: present(env, 'CARRIER_API_KEY') }];
  } else if (present(env, 'CARRIER_API_KEY') !== undefined) {
    throw new ConfigurationError('CARRIER_API_KEY', 'is set without CARRIER_URL');
  }

  const httpAdapter = (present(env, 'HTTP_ADAPTER')?.trim().toLowerCase() ?? 'express') as HttpAdapterName;
  if (!HTTP_ADAPTERS.includes(httpAdapter)) {
    throw new ConfigurationError('HTTP_ADAPTER', `must be ${HTTP_ADAPTERS.join(' or ')}`);
  }

  const runHttp = boolean(env, 'RUN_HTTP', true);
  const runWorkers = boolean(env, 'RUN_WORKERS', true);
  if (!runHttp && !runWorkers) {
    throw new ConfigurationError('RUN_HTTP and RUN_WORKERS', 'are both false; the process would do nothing');
  }

  const options: PaymentWebhooksOptions = {
    databaseUrl: present(env, 'DATABASE_URL') ?? DEFAULT_DATABASE_URL,
    schema: present(env, 'DATABASE_SCHEMA'),
    routePrefix: present(env, 'ROUTE_PREFIX'),
    redisUrl: present(env, 'REDIS_URL') ?? DEFAULT_REDIS_URL,
    redisCluster: boolean(env, 'REDIS_CLUSTER', false),
    queuePrefix: present(env, 'QUEUE_PREFIX'),
    // `null` is passed on, so it is reported as "not an array" rather than read as "none".
    endpoints: (endpoints === undefined ? [] : endpoints.value) as PaymentWebhooksOptions['endpoints'],
    carriers: carriers as PaymentWebhooksOptions['carriers'],
    carrierTimeoutMs: integer(env, 'CARRIER_TIMEOUT_MS'),
    carrierMaxAttempts: integer(env, 'CARRIER_MAX_ATTEMPTS'),
    eventSinks: (present(env, 'EVENT_SINKS') === undefined ? [] : parseJsonSetting('EVENT_SINKS', env.EVENT_SINKS!)) as PaymentWebhooksOptions['eventSinks'],
    eventMaxAttempts: integer(env, 'EVENT_MAX_ATTEMPTS'),
    commandMaxAttempts: integer(env, 'COMMAND_MAX_ATTEMPTS'),
    adminToken: present(env, 'ADMIN_TOKEN'),
    runWorkers,
    inboxRetentionDays: integer(env, 'INBOX_RETENTION_DAYS'),
    webhookMaxBodyBytes: integer(env, 'WEBHOOK_MAX_BODY_BYTES'),
    migrationsRun: boolean(env, 'DB_MIGRATIONS_RUN', true),
    preparedStatements: boolean(env, 'DB_PREPARED_STATEMENTS', true),
    // A comma-separated list; an empty entry (`a,,b`, a trailing comma) is reported, not skipped.
    trustedProxies: present(env, 'TRUSTED_PROXIES')?.split(','),
    // Advanced: overrides of the tuning knobs (README "Tuning"), as a JSON object.
    tuning: present(env, 'PW_TUNING') === undefined ? undefined : (parseJsonSetting('PW_TUNING', env.PW_TUNING!) as PaymentWebhooksOptions['tuning']),
  };
  const resolved = resolveOptions(options, {
    databaseUrl: 'DATABASE_URL',
    schema: 'DATABASE_SCHEMA',
    routePrefix: 'ROUTE_PREFIX',
    redisUrl: 'REDIS_URL',
    redisCluster: 'REDIS_CLUSTER',
    queuePrefix: 'QUEUE_PREFIX',
    endpoints: endpoints?.setting ?? 'WEBHOOK_ENDPOINTS',
    carriers: carriersSetting,
    carrierTimeoutMs: 'CARRIER_TIMEOUT_MS',
    carrierMaxAttempts: 'CARRIER_MAX_ATTEMPTS',
    eventSinks: 'EVENT_SINKS',
    adminToken: 'ADMIN_TOKEN',
    eventMaxAttempts: 'EVENT_MAX_ATTEMPTS',
    commandMaxAttempts: 'COMMAND_MAX_ATTEMPTS',
    inboxRetentionDays: 'INBOX_RETENTION_DAYS',
    webhookMaxBodyBytes: 'WEBHOOK_MAX_BODY_BYTES',
    trustedProxies: 'TRUSTED_PROXIES',
    tuning: 'PW_TUNING',
  });
  return { port, ...(host === undefined || host === '' ? {} : { host }), runHttp, httpAdapter, options: resolved };
}
