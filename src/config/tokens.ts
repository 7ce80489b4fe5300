/** Injection token of the module's resolved options (`ResolvedOptions`). */
export const PW_OPTIONS = 'PAYMENT_WEBHOOKS_OPTIONS';
/** Injection token of the raw options given to `forRootAsync`, before validation. */
export const PW_RAW_OPTIONS = 'PAYMENT_WEBHOOKS_RAW_OPTIONS';
/** Every provider the module knows, by name (`ReadonlyMap<string, ProviderAdapter>`): the built-in ones and the host's own. */
export const PW_PROVIDERS = 'PAYMENT_WEBHOOKS_PROVIDERS';
/** The `@nestjs/bullmq` config key of the module's queues, apart from a host's own. */
export const BULL_CONFIG_KEY = 'payment-webhooks';
/** Injection token of the host's own carrier adapters (module option `carrierAdapters`). */
export const PW_CARRIER_ADAPTERS = 'PAYMENT_WEBHOOKS_CARRIER_ADAPTERS';
/** Injection token of the names an order's `carrier` may take: configured HTTP carriers and the host's adapters. */
export const PW_CARRIER_NAMES = 'PAYMENT_WEBHOOKS_CARRIER_NAMES';
/** Injection token of the guard protecting the admin and host routes (module option `adminGuard`). */
export const PW_ADMIN_GUARD = 'PAYMENT_WEBHOOKS_ADMIN_GUARD';
/** Injection token of the module's pino logger (option `logger`, else JSON lines on stdout). */
export const PW_LOGGER = 'PAYMENT_WEBHOOKS_LOGGER';
/** Injection token of the process's ReceivePressure (ingest before drain). */
export const PW_RECEIVE_PRESSURE = 'PAYMENT_WEBHOOKS_RECEIVE_PRESSURE';
/** Injection token of the clock (tests replace it). */
export const CLOCK = 'PAYMENT_WEBHOOKS_CLOCK';

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
