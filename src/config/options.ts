import type { CanActivate } from '@nestjs/common';
import type { Logger as PinoLogger } from 'pino';
import type { PaymentEventType } from '../common/host-events';
import type { CarrierAdapter } from './carrier-adapter';

import type { ProviderAdapter } from '../providers/provider';
import { BUILT_IN_PROVIDER_NAMES, type BuiltInProviderName } from '../providers';

/** The providers the module brings (a host adds its own with the `providers` option). */
export const PROVIDER_NAMES = BUILT_IN_PROVIDER_NAMES;
export type ProviderName = BuiltInProviderName;

/** A secret that stops verifying at `expiresAt` (a rotation that ends on schedule). */
export interface ExpiringSecret {
  secret: string;
  /** An ISO 8601 instant with a timezone (`2025-12-31T23:00:00Z`); from then on the secret no longer verifies. */
  expiresAt: string;
}

/** One webhook endpoint: `POST /webhooks/{id}`. */
export interface EndpointDefinition {
  /** The URL segment, `[a-z0-9-]{1,64}`. */
  id: string;
  /** A built-in provider's name, or that of a provider of the host's own (`providers` option). */
  provider: ProviderName | (string & {});
  /** Every live secret is accepted: this is how a rotation is rolled out; none for a provider that checks its deliveries another way (`mollie`). */
  secrets: Array<string | ExpiringSecret>;
  /**
   * The merchant's account as the provider knows it; part of the deduplication key. Exactly one
   * of `merchantAccountId` and `merchantAccountIds`.
   */
  merchantAccountId?: string;
  /**
   * The accounts one endpoint serves (a Stripe Connect platform, say), or `['*']` for any: the
   * account each body declares is its event's account. Providers stripe, factuarea, standard.
   */
  merchantAccountIds?: string[];
  /** Accepted clock skew of the signed timestamp, both directions; 0 turns the check off. Default 300. */
  toleranceSeconds?: number;
  /** Providers with an API (stripe): the API key the module reads it with. Never logged or shown. */
  apiKey?: string;
  /** The API's base URL; the provider's default (`https://api.stripe.com`) once validated. */
  apiBaseUrl?: string;
  /**
   * (v4) Ask the provider about a payment of this endpoint still `pending`, `processing` or
   * `authorized` this long after its last change (30 to 86400; needs API credentials):
   * docs/operations.md#when-webhooks-stop.
   */
  pollAfterSeconds?: number;
  /** (v4) The endpoint is `silent` after this long without an authentic delivery (at least 60): docs/operations.md#endpoint-health. */
  silenceAlertSeconds?: number;
  /** A provider's own fields (its `endpointFields`: Adyen's `capture`, Stripe's `payloadStyle`…). */
  [field: string]: unknown;
}

/** A carrier the fulfillment relay calls. */
export interface CarrierDefinition {
  name: string;
  url: string;
  apiKey?: string;
  timeoutMs?: number;
}

/**
 * An HTTP endpoint of the host's (or anyone's) that receives the module's events,
 * signed as Standard Webhooks with `secret`.
 */
export interface EventSinkDefinition {
  /** Unique; also names its outbox messages (`<event id>:<name>`). */
  name: string;
  url: string;
  /**
   * As Standard Webhooks keys are written: `whsec_<base64>` (deliveries signed `v1`, HMAC-SHA256) or
   * `whsk_<base64>`, an ed25519 private key (signed `v1a`; the receiver verifies with its `whpk_`).
   */
  secret: string;
  /** The event types it receives, or '*'; default all. */
  types?: string[] | '*';
  /** Default 10000. */
  timeoutMs?: number;
}

export interface ResolvedEventSink {
  name: string;
  url: string;
  secret: string;
  types: PaymentEventType[] | '*';
  timeoutMs: number;
}

/** What `PaymentWebhooksModule.forRoot()` takes. The standalone app builds it from the environment. */
export interface PaymentWebhooksOptions {
  /** PostgreSQL URL. */
  databaseUrl: string;
  /**
   * The PostgreSQL schema holding every table of the module, its migrations table included;
   * created when missing. Nothing is written to any other schema. Default `payment_webhooks`.
   */
  schema?: string;
  /**
   * Redis URL for BullMQ. With `redisCluster`, the seed nodes of the cluster:
   * `redis://host:port[,host:port…]`.
   */
  redisUrl: string;
  /**
   * Redis is a Redis Cluster: every connection of the module is an ioredis `Cluster` on the seeds
   * of `redisUrl`, and `queuePrefix` must hold a hash tag (`{pw}`). Default false.
   */
  redisCluster?: boolean;
  /**
   * BullMQ key prefix, so two deployments (or test runs) can share one Redis. It may hold one hash
   * tag (`{pw}`), which a Redis Cluster requires. Default `pw`, or `{pw}` with `redisCluster`.
   */
  queuePrefix?: string;
  /**
   * Path prefix of every route of the module (webhooks, orders, admin, docs, health, metrics):
   * `/pay` gives `/pay/webhooks/{endpointId}`. Composes with the host's `setGlobalPrefix()`.
   * Default none.
   */
  routePrefix?: string;
  endpoints?: EndpointDefinition[];
  carriers?: CarrierDefinition[];
  /** Default carrier call timeout. Default 10000. */
  carrierTimeoutMs?: number;
  /** Carrier calls in all before an outbox message is dead. Default 15. */
  carrierMaxAttempts?: number;
  /** HTTP sinks that receive the module's events, signed. */
  eventSinks?: EventSinkDefinition[];
  /** Deliveries of one event to one subscriber or sink, the first included, before its message is dead. Default 15. */
  eventMaxAttempts?: number;
  /** (v4) Calls to a provider's API for one payment command, the first included, before it ends failed. Default 15. */
  commandMaxAttempts?: number;
  /** Bearer token of the admin and host API; none disables those routes (503). */
  adminToken?: string | null;
  /** Run the queue workers, sweepers and relays in this process. Default true. */
  runWorkers?: boolean;
  /**
   * Prepare each of the module's statements once per database connection (PostgreSQL parses and
   * plans it once). Off behind a pooler that cannot keep prepared statements (PgBouncer in
   * transaction mode, unless it is 1.21 or later with `max_prepared_statements` set). Default true.
   */
  preparedStatements?: boolean;
  /** Deliveries in a final status older than this many days are purged; at least 7. Default 90. */
  inboxRetentionDays?: number;
  /** Larger webhook bodies answer 413. Default 1 MiB. */
  webhookMaxBodyBytes?: number;
  /** Apply pending migrations when the module starts. Default true. */
  migrationsRun?: boolean;
  /**
   * The reverse proxies in front of the service (nginx, an ingress, a cloud load balancer): addresses
   * and CIDR ranges, IPv4 or IPv6 (`['10.0.0.0/8', '::1']`). For a request from one of them the
   * client is the last address of `X-Forwarded-For` that is not itself one of them, and the
   * per-client limits apply to that client; their own connections are not held to one address's
   * share. `X-Forwarded-For` from any other address is ignored. Default none.
   */
  trustedProxies?: string[];
  /** Tuning knobs; the defaults suit production. */
  tuning?: Partial<TuningOptions>;
  /**
   * Carriers of the host's own (a license issuer, a digital-goods service), next to the HTTP
   * carriers of `carriers`; an order names one by its `name`.
   */
  carrierAdapters?: CarrierAdapter[];
  /**
   * Providers of the host's own, by name, usable in `endpoints` like the built-in ones
   * (docs/providers.md). A name of a built-in provider is refused.
   */
  providers?: ProviderAdapter[];
  /**
   * Replaces the admin-token check on every route but webhooks and health (the host's own
   * authentication). `/docs` and `/docs-json` keep the token check (they are served outside Nest's
   * guards).
   */
  adminGuard?: CanActivate;
  /** A pino logger for the module's structured logs; by default JSON lines on stdout. */
  logger?: PinoLogger;
}

export interface TuningOptions {
  /** How often the inbox sweeper looks for rows with no job. */
  sweepIntervalMs: number;
  /** A `received` row older than this is re-enqueued by the sweeper. */
  sweepAfterMs: number;
  /** Rows the sweeper re-enqueues per pass. */
  sweepBatchSize: number;
  /** BullMQ attempts of one inbox job before the row is `failed`. */
  inboxAttempts: number;
  /** First backoff of a failed inbox job (exponential). */
  inboxBackoffMs: number;
  /** Attempts at an event whose payment is unknown before it is parked `unmatched` (a registration
   * releases it at once, so it need not wait long; at most `inboxAttempts`). */
  unmatchedAfterAttempts: number;
  /** Longest wait for one answer of a provider's API while processing (a thin notification's object). */
  providerApiTimeoutMs: number;
  /** Longest an adapter's `receive` may take on the webhook route (a provider that fetches included):
   * past it the delivery answers 503 `unavailable` and its unverified bytes are given back, whatever
   * the adapter does later. The 4.5 s default covers Mollie's 4 s fetch and, with the record's 3 s
   * and the enqueue's 1 s after it, keeps every answer under 8.5 s, inside the 10 s a provider waits. */
  receiveTimeoutMs: number;
  /** Longest an adapter's `normalize`, `fetchesState.wants` or `answer` may take when it returns a
   * promise (a value returned at once is never timed): past it the attempt fails
   * (`provider_adapter_timeout`), or the delivery answers 503. */
  adapterTimeoutMs: number;
  /** Jobs one process handles at once, per queue. */
  workerConcurrency: number;
  /** Most deliveries one processing transaction decides (deliveries taken at the same moment share one). */
  processingBatchSize: number;
  /** Processing transactions one process runs at once. */
  processingBatchesInFlight: number;
  /** In a process that also receives webhooks: jobs that run at once while the receive path is behind (ingest before drain). */
  busyWorkerSlots: number;
  /** Longest a job waits for a slot while the receive path is behind. */
  workerYieldMs: number;
  /** The receive path is behind while this many deliveries or more are in flight at once in the process. */
  receiveBacklog: number;
  /** The receive path is behind while the event loop runs this late or later (ms) with a delivery in flight. */
  receiveLagMs: number;
  /** Connections of the receive path's own pool (kept apart from the workers' pool); also the
   * number of insert batches in flight at once. */
  ingestPoolSize: number;
  /** Most deliveries one insert statement records. */
  ingestBatchSize: number;
  /** Bound on the receive path's wait for a connection and for its one statement. */
  ingestTimeoutMs: number;
  /** Bound on the receive path's wait for the enqueue (best effort). */
  enqueueTimeoutMs: number;
  /** First carrier retry delay (1 s); it doubles each attempt. */
  carrierBackoffBaseMs: number;
  /** Longest carrier retry delay (5 min). */
  carrierBackoffCapMs: number;
  /** A job whose worker died is taken back after its lock lapses (BullMQ lockDuration). */
  jobLockMs: number;
  /** How often workers look for jobs whose worker died (BullMQ stalledInterval). */
  stalledIntervalMs: number;
  /** (v4) How often each polling endpoint's run is started (docs/operations.md#when-webhooks-stop): a due payment waits at most about this long past its time. */
  pollSweepMs: number;
  /** The standalone HTTP server: longest a request may take to arrive in full (headers and body);
   * past it the connection answers 503 `unavailable` and closes (Node's requestTimeout). */
  httpRequestTimeoutMs: number;
  /** The standalone HTTP server: longest the request's headers may take to arrive (Node's headersTimeout). */
  httpHeadersTimeoutMs: number;
  /** The standalone HTTP server: how long an idle keep-alive connection is kept (Node's keepAliveTimeout). */
  httpKeepAliveTimeoutMs: number;
  /** Most connections the HTTP server holds at once; more are refused (Node's maxConnections). Lowered to
   * what the process's open-file limit allows; one address (but a trusted proxy) holds at most a quarter. */
  httpMaxConnections: number;
  /** Most bytes of webhook bodies that arrived but are not verified yet, in one process, at once
   * (declared lengths count for nothing): past it a delivery answers 503 `unavailable` at once, the
   * rest unread (the sender retries). */
  unverifiedBodyBudgetBytes: number;
  /** Most of that budget one client (a remote address, over any number of connections) may hold: past
   * it that client's delivery answers 503 `unavailable`. Unset: a quarter of the budget, never below
   * `webhookMaxBodyBytes` (nor above the budget). Set it to the budget to turn per-client shares off. */
  unverifiedBodyClientShareBytes: number;
  /** How often each process adds what it counted of its endpoints' deliveries to the database (and at shutdown):
   * docs/operations.md#endpoint-health. The receive path itself never writes it. */
  endpointHealthFlushMs: number;
  /** How often the workers look for endpoints that became silent (one check across every process). */
  silenceCheckIntervalMs: number;
  /** How long one second of an endpoint's `silenceAlertSeconds` lasts, in milliseconds: 1000. Tests shorten
   * it; the setting itself stays at least 60. */
  silenceAlertUnitMs: number;
}

export const DEFAULT_TUNING: TuningOptions = {
  sweepIntervalMs: 5_000,
  sweepAfterMs: 5_000,
  sweepBatchSize: 500,
  inboxAttempts: 10,
  inboxBackoffMs: 1_000,
  unmatchedAfterAttempts: 3,
  providerApiTimeoutMs: 5_000,
  receiveTimeoutMs: 4_500,
  adapterTimeoutMs: 1_000,
  workerConcurrency: 64,
  processingBatchSize: 32,
  processingBatchesInFlight: 4,
  busyWorkerSlots: 4,
  workerYieldMs: 250,
  receiveBacklog: 16,
  receiveLagMs: 20,
  ingestPoolSize: 2,
  ingestBatchSize: 100,
  ingestTimeoutMs: 3_000,
  enqueueTimeoutMs: 1_000,
  carrierBackoffBaseMs: 1_000,
  carrierBackoffCapMs: 300_000,
  jobLockMs: 10_000,
  stalledIntervalMs: 2_000,
  pollSweepMs: 15_000,
  httpRequestTimeoutMs: 8_000,
  httpHeadersTimeoutMs: 5_000,
  httpKeepAliveTimeoutMs: 5_000,
  httpMaxConnections: 4_096,
  unverifiedBodyBudgetBytes: 33_554_432,
  // A quarter of the budget; resolveOptions derives it from the budget and body limit when unset.
  unverifiedBodyClientShareBytes: 8_388_608,
  endpointHealthFlushMs: 5_000,
  silenceCheckIntervalMs: 30_000,
  silenceAlertUnitMs: 1_000,
};

export interface ResolvedOptions {
  databaseUrl: string;
  schema: string;
  /** `''` or `/segment[/segment…]`, no trailing slash. */
  routePrefix: string;
  redisUrl: string;
  redisCluster: boolean;
  queuePrefix: string;
  endpoints: EndpointDefinition[];
  carriers: CarrierDefinition[];
  carrierTimeoutMs: number;
  carrierMaxAttempts: number;
  eventSinks: ResolvedEventSink[];
  eventMaxAttempts: number;
  commandMaxAttempts: number;
  adminToken: string | null;
  runWorkers: boolean;
  preparedStatements: boolean;
  inboxRetentionDays: number;
  webhookMaxBodyBytes: number;
  migrationsRun: boolean;
  /** Validated ranges, written `address/prefix` (IPv4-mapped IPv6 as IPv4); empty: none. */
  trustedProxies: string[];
  tuning: TuningOptions;
}
