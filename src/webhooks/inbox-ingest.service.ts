import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { QueueName, JobName } from '../jobs/queues';
import { Queue } from 'bullmq';
import type { IncomingHttpHeaders } from 'node:http';
import { Pool } from 'pg';
import type { ResolvedOptions } from '../config/options';
import { withTimeout } from '../common/with-timeout';
import { pgConnection } from '../database/data-source';
import { PW_OPTIONS } from '../config/tokens';
import { MicroBatcher } from '../common/micro-batcher';
import { moduleRedisConnection, ModuleRedisConnection, releaseRedisConnection } from '../common/redis-connection';
import { uuid7 } from '../common/uuid7';
import { processDeliveryJobOptions, ProcessDeliveryData } from './inbox.queue';
import type { EnvelopeIdentity } from './providers';
import { eventAccount, servesAccount, type ResolvedEndpoint } from './signature-verifier';
import { WebhookError } from './webhook.errors';

/** How a delivery reached the inbox: pushed by the provider, or pulled back by a backfill (CONTRACT §4). */
export type DeliverySource = 'webhook' | 'backfill';

export interface IngestAnswer {
  status: 'accepted' | 'duplicate';
  eventId: string;
}

/** A delivery to record, one field per column. */
interface InboxRow {
  id: string;
  endpointId: string;
  provider: string;
  merchantAccountId: string;
  eventId: string;
  eventType: string;
  resourceId: string | null;
  deliveryId: string | null;
  apiVersion: string | null;
  source: DeliverySource;
  /**
   * Part of the key: `''` for an event its endpoint serves; the endpoint's id for one it does not
   * (an account outside its list), so that such an event, recorded to be rejected, never takes the
   * key of the account it names: that account's real event, delivered through an endpoint that
   * serves it, is then a new event, not a duplicate.
   */
  keyScope: string;
  /** The kept headers, as JSON text. */
  headers: string;
  body: string;
}

/** The row's fields in column order: how a batch travels to the statement, and one row's parameters. */
function values(row: InboxRow): Array<string | null> {
  return [row.id, row.endpointId, row.provider, row.merchantAccountId, row.eventId, row.eventType, row.resourceId, row.deliveryId, row.apiVersion, row.source, row.headers, row.body, row.keyScope];
}

const COLUMNS =
  'id, endpoint_id, provider, merchant_account_id, event_id, event_type, resource_id, delivery_id, api_version, source, headers, body, key_scope, received_at';
const KEY = 'provider, merchant_account_id, event_id, key_scope';

// One statement for a whole batch: a duplicate costs an index probe and writes nothing; the new
// rows come back. The batch travels as one JSON array of rows in column order (see values()),
// which both sides encode and decode natively; named keys would repeat every name in every row.
const INSERT_BATCH_SQL = `
  INSERT INTO webhook_inbox (${COLUMNS})
  SELECT (r->>0)::uuid, r->>1, r->>2, r->>3, r->>4, r->>5, r->>6, r->>7, r->>8, r->>9, (r->>10)::jsonb, r->>11, r->>12,
         pw_uuid7_time((r->>0)::uuid)
    FROM jsonb_array_elements($1::jsonb) AS r
  ON CONFLICT (${KEY}) DO NOTHING
  RETURNING id, ${KEY}`;

// The same for one row: used to isolate a row the batch statement refused.
const INSERT_ONE_SQL = `
  INSERT INTO webhook_inbox (${COLUMNS})
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12, $13, pw_uuid7_time($1))
  ON CONFLICT (${KEY}) DO NOTHING
  RETURNING id, event_id`;
/** A row the database did not take. A class of our own: `instanceof Error` fails across realms (Jest's vm). */
class NotRecorded {
  constructor(readonly cause: unknown) {}
  get message(): string {
    return (this.cause as Error)?.message ?? String(this.cause);
  }
}
type InsertResult = string | null | NotRecorded;
type RowOutcome = 'accepted' | 'duplicate' | NotRecorded;

/** The deduplication key: (provider, merchant account, event id), in the scope of its row. */
function keyOf(row: InboxRow): string {
  return eventKey(row.provider, row.merchantAccountId, row.eventId, row.keyScope);
}

function eventKey(provider: string, merchantAccountId: string, eventId: string, keyScope: string): string {
  return `${provider}\u0000${merchantAccountId}\u0000${eventId}\u0000${keyScope}`;
}

/** The 400 detail of a body that declares no account on an endpoint of many. */
const MANY_ACCOUNTS_NONE_DECLARED = 'the endpoint serves many merchant accounts and the body declares none';

/** Headers every delivery keeps besides its provider's own. */
const COMMON_HEADERS = ['content-type', 'user-agent'];

/**
 * The receive path's durable part: one parameterised INSERT on a pool of its own (so busy
 * workers never delay an answer), then a best-effort enqueue on a producer connection that
 * fails fast while Redis is away (the sweeper covers what it misses).
 */
@Injectable()
export class InboxIngestService implements OnApplicationShutdown {
  private readonly logger = new Logger('WebhookIngest');
  private readonly pool: Pool;
  private readonly queue: Queue<ProcessDeliveryData>;
  /** The queue's connection: options (BullMQ's own client), or a Cluster this service closes. */
  private readonly redis: ModuleRedisConnection;
  private readonly batcher: MicroBatcher<InboxRow, RowOutcome>;

  constructor(@Inject(PW_OPTIONS) private readonly options: ResolvedOptions) {
    const { tuning } = options;
    this.pool = new Pool({
      ...pgConnection(options.databaseUrl, options.schema),
      max: tuning.ingestPoolSize,
      connectionTimeoutMillis: tuning.ingestTimeoutMs,
      query_timeout: tuning.ingestTimeoutMs,
      application_name: 'payment-webhooks-ingest',
    });
    // An idle connection dropped by the server must not crash the process; the next query reconnects.
    this.pool.on('error', (err) => this.logger.warn(`idle database connection lost: ${err.message}`));
    this.redis = moduleRedisConnection(options, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    this.queue = new Queue<ProcessDeliveryData>(QueueName.Inbox, { prefix: options.queuePrefix, connection: this.redis });
    this.queue.on('error', (err) => this.logger.warn(`inbox queue connection: ${err.message}`));
    this.batcher = new MicroBatcher((rows) => this.recordBatch(rows), {
      maxBatch: tuning.ingestBatchSize,
      maxInFlight: tuning.ingestPoolSize,
      // While the database stalls, a delivery waiting for its turn answers 503 within the bound,
      // not after the queue in front of it; and one statement never carries more than 8 MiB.
      maxWaitMs: tuning.ingestTimeoutMs,
      weigh: (row) => row.body.length + row.headers.length,
      maxWeight: 8 * 1024 * 1024,
    });
  }

  /** Records one authentic delivery; resolves once its row is committed (or found committed). */
  async record(
    endpoint: ResolvedEndpoint,
    identity: EnvelopeIdentity,
    headers: IncomingHttpHeaders,
    body: string,
    source: DeliverySource = 'webhook',
  ): Promise<IngestAnswer> {
    const merchantAccountId = eventAccount(endpoint, identity.account);
    // An endpoint of many accounts keys each event on the account its body declares: none, no key.
    if (merchantAccountId === null) throw new WebhookError('malformed_payload', MANY_ACCOUNTS_NONE_DECLARED);
    const row: InboxRow = {
      keyScope: servesAccount(endpoint, merchantAccountId) ? '' : endpoint.id,
      id: uuid7(),
      endpointId: endpoint.id,
      provider: endpoint.provider.name,
      merchantAccountId,
      eventId: identity.eventId,
      eventType: identity.eventType,
      resourceId: identity.resourceId,
      deliveryId: identity.deliveryId,
      apiVersion: identity.apiVersion,
      source,
      headers: storedHeaders(endpoint, headers),
      body,
    };
    let outcome: RowOutcome;
    try {
      outcome = await this.batcher.submit(row);
    } catch (err) {
      outcome = new NotRecorded(err);
    }
    if (outcome instanceof NotRecorded) {
      this.logger.warn(`delivery to ${endpoint.id} not recorded: ${outcome.message}`);
      throw new WebhookError('unavailable');
    }
    return { status: outcome, eventId: identity.eventId };
  }

  /**
   * Inserts a batch in one statement, enqueues the new rows in one call, then answers each. The
   * same event twice in one batch is inserted once; the later copies are duplicates of it.
   */
  private async recordBatch(rows: InboxRow[]): Promise<RowOutcome[]> {
    const first = new Map<string, InboxRow>();
    for (const row of rows) if (!first.has(keyOf(row))) first.set(keyOf(row), row);
    // In key order: two batches holding the same events then take their index locks in the same
    // order and cannot deadlock.
    const unique = [...first.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
    const results = unique.length === 1 ? await this.insertOne(unique[0]) : await this.insertMany(unique);
    const newIds = [...results.values()].filter((r): r is string => typeof r === 'string');
    if (newIds.length > 0) await this.enqueue(newIds);
    return rows.map((row) => {
      const result = results.get(keyOf(row));
      if (result instanceof NotRecorded) return result;
      return first.get(keyOf(row)) === row && typeof result === 'string' ? 'accepted' : 'duplicate';
    });
  }

  /** Per key: the new row's id, null for a duplicate, or the error that kept the row out. */
  private async insertMany(rows: InboxRow[]): Promise<Map<string, InsertResult>> {
    let returned;
    try {
      const run = () =>
        this.pool.query<{ id: string; provider: string; merchant_account_id: string; event_id: string; key_scope: string }>({
          name: 'pw_inbox_insert_batch',
          text: INSERT_BATCH_SQL,
          values: [JSON.stringify(rows.map(values))],
        });
      // A deadlock or serialization failure is a race with another batch: run it once more.
      returned = await run().catch((err) => (/^40(P01|001)$/.test(String(err?.code)) ? run() : Promise.reject(err)));
    } catch (err) {
      // A row the database refuses (a data or constraint error, not an outage) must not take its
      // batch-mates down with it: insert them one by one, so only that row fails.
      if (!/^(22|23)/.test(String((err as { code?: unknown }).code ?? ''))) throw err;
      const results = new Map<string, InsertResult>();
      for (const row of rows) for (const [key, result] of await this.insertOne(row)) results.set(key, result);
      return results;
    }
    const results = new Map<string, InsertResult>(rows.map((row) => [keyOf(row), null]));
    for (const r of returned.rows) results.set(eventKey(r.provider, r.merchant_account_id, r.event_id, r.key_scope), r.id);
    return results;
  }

  private async insertOne(row: InboxRow): Promise<Map<string, InsertResult>> {
    try {
      const result = await this.pool.query<{ id: string }>({ name: 'pw_inbox_insert_one', text: INSERT_ONE_SQL, values: values(row) });
      return new Map([[keyOf(row), result.rows[0]?.id ?? null]]);
    } catch (err) {
      return new Map([[keyOf(row), new NotRecorded(err)]]);
    }
  }

  /** Best effort and bounded: the rows are committed, so a lost job only delays processing. */
  private async enqueue(inboxIds: string[]): Promise<void> {
    const { tuning } = this.options;
    try {
      await withTimeout(
        this.queue.addBulk(
          inboxIds.map((inboxId) => ({
            name: JobName.ProcessDelivery,
            data: { inboxId },
            opts: processDeliveryJobOptions(inboxId, tuning),
          })),
        ),
        tuning.enqueueTimeoutMs,
        'enqueue',
      );
    } catch (err) {
      this.logger.warn(`${inboxIds.length} deliveries recorded, not enqueued (the sweeper will): ${(err as Error).message}`);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    // While Redis is away a graceful close cannot reach it (this connection queues nothing):
    // drop it instead, or its reconnect timer would keep the process alive.
    // A Cluster given to the queue is this service's to close (BullMQ leaves it open), then too.
    const closeQueue = withTimeout(this.queue.close(), 2_000, 'queue close').catch(() => {
      releaseRedisConnection(this.redis);
      return this.queue.disconnect();
    });
    await Promise.allSettled([closeQueue.finally(() => releaseRedisConnection(this.redis)), this.pool.end()]);
  }
}

function storedHeaders(endpoint: ResolvedEndpoint, headers: IncomingHttpHeaders): string {
  const kept: Record<string, string> = {};
  for (const name of endpoint.provider.storedHeaders) addHeader(kept, headers, name);
  for (const name of COMMON_HEADERS) addHeader(kept, headers, name);
  return JSON.stringify(kept);
}

function addHeader(kept: Record<string, string>, headers: IncomingHttpHeaders, name: string): void {
  const value = headers[name];
  if (value !== undefined) kept[name] = Array.isArray(value) ? value.join(', ') : value;
}
