import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { JobName } from '../jobs/queues';
import { JobProducer } from '../jobs/job-producer';
import type { IncomingHttpHeaders } from 'node:http';
import { Pool } from 'pg';
import type { ResolvedOptions } from '../config/options';
import { pgConnection } from '../database/data-source';
import { pgClientClass } from '../database/prepared-statements';
import { PW_OPTIONS } from '../config/tokens';
import { ItemFailed, MicroBatcher } from '../common/micro-batcher';
import { uuid7 } from '../common/uuid7';
import { activeTraceparent } from '../observability/tracing';
import type { DeliverySource } from './inbox.state';
import { InboxHandoff } from './inbox-handoff.service';
import { InboxStore, NewDelivery } from './inbox.store';
import type { KeyedEvent, RecordedEvent } from '../providers';
import type { ResolvedEndpoint } from './signature-verifier';
import { WebhookError } from './webhook.errors';

export type IngestAnswer = RecordedEvent;

/** What the statement gave one row: its new id, null for a duplicate, or the error that kept it out. */
type InsertResult = string | null | ItemFailed;
type RowOutcome = IngestAnswer['status'];

/** The deduplication key: (provider, merchant account, event id), in the scope of its row. */
function eventKey(row: Pick<NewDelivery, 'provider' | 'merchantAccountId' | 'eventId' | 'keyScope'>): string {
  return `${row.provider}\u0000${row.merchantAccountId}\u0000${row.eventId}\u0000${row.keyScope}`;
}

/** Headers every delivery keeps besides its provider's own. */
const COMMON_HEADERS = ['content-type', 'user-agent'];

/**
 * The receive path's durable part: one parameterised INSERT on a pool of its own (so busy
 * workers never delay an answer), then, where this process runs the workers, the first attempt
 * here (InboxHandoff), else a best-effort enqueue on the producer's lane that fails fast while
 * Redis is away (the sweeper covers what it misses).
 */
@Injectable()
export class InboxIngestService implements OnApplicationShutdown {
  private readonly logger = new Logger('WebhookIngest');
  private readonly pool: Pool;
  /** One input is one delivery: its rows (one, or a batch's items), recorded in the same statement. */
  private readonly batcher: MicroBatcher<NewDelivery[], RowOutcome[]>;

  constructor(
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    private readonly inbox: InboxStore,
    private readonly jobs: JobProducer,
    private readonly handoff: InboxHandoff,
  ) {
    const { tuning } = options;
    this.pool = new Pool({
      ...pgConnection(options.databaseUrl, options.schema),
      max: tuning.ingestPoolSize,
      connectionTimeoutMillis: tuning.ingestTimeoutMs,
      query_timeout: tuning.ingestTimeoutMs,
      application_name: 'payment-webhooks-ingest',
      Client: pgClientClass(options.preparedStatements),
    });
    // An idle connection dropped by the server must not crash the process; the next query reconnects.
    this.pool.on('error', (err) => this.logger.warn(`idle database connection lost: ${err.message}`));
    this.batcher = new MicroBatcher((rows) => this.recordBatch(rows), {
      maxBatch: tuning.ingestBatchSize,
      maxInFlight: tuning.ingestPoolSize,
      // While the database stalls, a delivery waiting for its turn answers 503 within the bound,
      // not after the queue in front of it; and one statement never carries more than 8 MiB.
      maxWaitMs: tuning.ingestTimeoutMs,
      weigh: (rows) => rows.reduce((sum, row) => sum + row.body.length + row.headers.length, 0),
      maxWeight: 8 * 1024 * 1024,
    });
  }

  /**
   * Records one authentic delivery's events, all in one statement (so in one transaction);
   * resolves once they are committed (or found committed), with how each was recorded.
   */
  async record(
    endpoint: ResolvedEndpoint,
    events: readonly KeyedEvent[],
    headers: IncomingHttpHeaders,
    source: DeliverySource = 'webhook',
    traceContexts?: ReadonlyArray<string | null>,
  ): Promise<IngestAnswer[]> {
    const kept = storedHeaders(endpoint, headers);
    // Each event's receipt span, else whatever span records it (a backfill's): what its processing links to.
    const traced = traceContexts === undefined ? activeTraceparent() : null;
    const rows = events.map(
      (event, i): NewDelivery => ({
        // An event of an account its endpoint does not serve never takes that account's key.
        keyScope: event.served ? '' : endpoint.id,
        id: uuid7(),
        endpointId: endpoint.id,
        provider: endpoint.provider.name,
        merchantAccountId: event.merchantAccountId,
        eventId: event.eventId,
        eventType: event.eventType,
        resourceId: event.resourceId,
        deliveryId: event.deliveryId,
        apiVersion: event.apiVersion,
        source,
        headers: kept,
        body: event.body,
        traceContext: traceContexts?.[i] ?? traced,
      }),
    );
    let statuses: RowOutcome[];
    try {
      statuses = await this.batcher.submit(rows);
    } catch (err) {
      this.logger.warn(`delivery to ${endpoint.id} not recorded: ${(err as Error)?.message ?? String(err)}`);
      throw new WebhookError('unavailable');
    }
    return statuses.map((status, i) => ({ status, eventId: events[i].eventId }));
  }

  /**
   * Inserts the rows of a batch of deliveries in one statement, enqueues the new rows in one call,
   * then answers each delivery. The same event twice in one batch is inserted once; the later
   * copies are duplicates of it.
   */
  private async recordBatch(deliveries: NewDelivery[][]): Promise<Array<RowOutcome[] | ItemFailed>> {
    const firstOfKey = new Map<string, NewDelivery>();
    for (const rows of deliveries) for (const row of rows) if (!firstOfKey.has(eventKey(row))) firstOfKey.set(eventKey(row), row);
    // In key order: two batches holding the same events then take their index locks in the same
    // order and cannot deadlock.
    const toInsert = [...firstOfKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
    const byKey = toInsert.length === 1 ? await this.insertOne(toInsert[0]) : await this.insertMany(toInsert, deliveries);
    const newIds = [...byKey.values()].filter((r): r is string => typeof r === 'string');
    // Attempted here at once where this process runs the workers; the rest goes to the queue.
    const toQueue = newIds.length > 0 ? this.handoff.take(newIds) : newIds;
    if (toQueue.length > 0) await this.enqueue(toQueue);
    return deliveries.map((rows) => {
      const outcomes: RowOutcome[] = [];
      for (const row of rows) {
        const result = byKey.get(eventKey(row));
        if (result instanceof ItemFailed) return result;
        outcomes.push(firstOfKey.get(eventKey(row)) === row && typeof result === 'string' ? 'accepted' : 'duplicate');
      }
      return outcomes;
    });
  }

  /** Per key: the new row's id, null for a duplicate, or the error that kept the row out. */
  private async insertMany(rows: NewDelivery[], deliveries: NewDelivery[][]): Promise<Map<string, InsertResult>> {
    let written;
    try {
      const insert = () => this.inbox.insertBatch(this.pool, rows);
      // A deadlock or serialization failure is a race with another batch: run it once more.
      written = await insert().catch((err) => (/^40(P01|001)$/.test(String(err?.code)) ? insert() : Promise.reject(err)));
    } catch (err) {
      // A row the database refuses (a data or constraint error, not an outage) must not take its
      // batch-mates down with it: insert delivery by delivery, so only its delivery fails (and a
      // delivery of several events stays whole: all of it, or none).
      if (!/^(22|23)/.test(String((err as { code?: unknown }).code ?? ''))) throw err;
      return this.insertEachDelivery(rows, deliveries);
    }
    const byKey = new Map<string, InsertResult>(rows.map((row) => [eventKey(row), null]));
    for (const recorded of written) byKey.set(eventKey(recorded), recorded.id);
    return byKey;
  }

  /** The rows of each delivery in a statement of their own, each delivery's rows whole or not at all. */
  private async insertEachDelivery(rows: NewDelivery[], deliveries: NewDelivery[][]): Promise<Map<string, InsertResult>> {
    const toInsert = new Set(rows);
    const byKey = new Map<string, InsertResult>();
    for (const delivery of deliveries) {
      const own = delivery.filter((row) => toInsert.has(row));
      if (own.length === 0) continue;
      if (own.length === 1) {
        for (const [key, result] of await this.insertOne(own[0])) byKey.set(key, result);
        continue;
      }
      try {
        const written = await this.inbox.insertBatch(this.pool, own);
        for (const row of own) byKey.set(eventKey(row), null);
        for (const recorded of written) byKey.set(eventKey(recorded), recorded.id);
      } catch (err) {
        for (const row of own) byKey.set(eventKey(row), new ItemFailed(err));
      }
    }
    return byKey;
  }

  /** The same for one row: a batch of one, or a row isolated after the batch statement refused it. */
  private async insertOne(row: NewDelivery): Promise<Map<string, InsertResult>> {
    try {
      return new Map([[eventKey(row), await this.inbox.insertOne(this.pool, row)]]);
    } catch (err) {
      return new Map([[eventKey(row), new ItemFailed(err)]]);
    }
  }

  /** Best effort and bounded: the rows are committed, so a lost job only delays processing. */
  private async enqueue(inboxIds: string[]): Promise<void> {
    try {
      await this.jobs.addManyAtOnce(
        JobName.ProcessDelivery,
        inboxIds.map((inboxId) => ({ inboxId })),
      );
    } catch (err) {
      this.logger.warn(`${inboxIds.length} deliveries recorded, not enqueued (the sweeper will): ${(err as Error).message}`);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.end().catch(() => undefined);
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
