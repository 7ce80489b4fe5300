import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { JobName } from '../jobs/queues';
import { JobProducer } from '../jobs/job-producer';
import type { IncomingHttpHeaders } from 'node:http';
import { Pool } from 'pg';
import type { ResolvedOptions } from '../config/options';
import { pgConnection } from '../database/data-source';
import { PW_OPTIONS } from '../config/tokens';
import { ItemFailed, MicroBatcher } from '../common/micro-batcher';
import { uuid7 } from '../common/uuid7';
import type { DeliverySource } from './inbox.state';
import { InboxStore, NewDelivery } from './inbox.store';
import type { EnvelopeIdentity } from './providers';
import { eventAccount, servesAccount, type ResolvedEndpoint } from './signature-verifier';
import { WebhookError } from './webhook.errors';

export interface IngestAnswer {
  status: 'accepted' | 'duplicate';
  eventId: string;
}

/** What the statement gave one row: its new id, null for a duplicate, or the error that kept it out. */
type InsertResult = string | null | ItemFailed;
type RowOutcome = IngestAnswer['status'];

/** The deduplication key: (provider, merchant account, event id), in the scope of its row. */
function eventKey(row: Pick<NewDelivery, 'provider' | 'merchantAccountId' | 'eventId' | 'keyScope'>): string {
  return `${row.provider}\u0000${row.merchantAccountId}\u0000${row.eventId}\u0000${row.keyScope}`;
}

/** The 400 detail of a body that declares no account on an endpoint of many. */
const MANY_ACCOUNTS_NONE_DECLARED = 'the endpoint serves many merchant accounts and the body declares none';

/** Headers every delivery keeps besides its provider's own. */
const COMMON_HEADERS = ['content-type', 'user-agent'];

/**
 * The receive path's durable part: one parameterised INSERT on a pool of its own (so busy
 * workers never delay an answer), then a best-effort enqueue on the producer's lane that fails
 * fast while Redis is away (the sweeper covers what it misses).
 */
@Injectable()
export class InboxIngestService implements OnApplicationShutdown {
  private readonly logger = new Logger('WebhookIngest');
  private readonly pool: Pool;
  private readonly batcher: MicroBatcher<NewDelivery, RowOutcome>;

  constructor(
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    private readonly inbox: InboxStore,
    private readonly jobs: JobProducer,
  ) {
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
    const row: NewDelivery = {
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
    let status: RowOutcome;
    try {
      status = await this.batcher.submit(row);
    } catch (err) {
      this.logger.warn(`delivery to ${endpoint.id} not recorded: ${(err as Error)?.message ?? String(err)}`);
      throw new WebhookError('unavailable');
    }
    return { status, eventId: identity.eventId };
  }

  /**
   * Inserts a batch in one statement, enqueues the new rows in one call, then answers each. The
   * same event twice in one batch is inserted once; the later copies are duplicates of it.
   */
  private async recordBatch(rows: NewDelivery[]): Promise<Array<RowOutcome | ItemFailed>> {
    const firstOfKey = new Map<string, NewDelivery>();
    for (const row of rows) if (!firstOfKey.has(eventKey(row))) firstOfKey.set(eventKey(row), row);
    // In key order: two batches holding the same events then take their index locks in the same
    // order and cannot deadlock.
    const toInsert = [...firstOfKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row);
    const byKey = toInsert.length === 1 ? await this.insertOne(toInsert[0]) : await this.insertMany(toInsert);
    const newIds = [...byKey.values()].filter((r): r is string => typeof r === 'string');
    if (newIds.length > 0) await this.enqueue(newIds);
    return rows.map((row) => {
      const result = byKey.get(eventKey(row));
      if (result instanceof ItemFailed) return result;
      return firstOfKey.get(eventKey(row)) === row && typeof result === 'string' ? 'accepted' : 'duplicate';
    });
  }

  /** Per key: the new row's id, null for a duplicate, or the error that kept the row out. */
  private async insertMany(rows: NewDelivery[]): Promise<Map<string, InsertResult>> {
    let written;
    try {
      const insert = () => this.inbox.insertBatch(this.pool, rows);
      // A deadlock or serialization failure is a race with another batch: run it once more.
      written = await insert().catch((err) => (/^40(P01|001)$/.test(String(err?.code)) ? insert() : Promise.reject(err)));
    } catch (err) {
      // A row the database refuses (a data or constraint error, not an outage) must not take its
      // batch-mates down with it: insert them one by one, so only that row fails.
      if (!/^(22|23)/.test(String((err as { code?: unknown }).code ?? ''))) throw err;
      const byKey = new Map<string, InsertResult>();
      for (const row of rows) for (const [key, result] of await this.insertOne(row)) byKey.set(key, result);
      return byKey;
    }
    const byKey = new Map<string, InsertResult>(rows.map((row) => [eventKey(row), null]));
    for (const recorded of written) byKey.set(eventKey(recorded), recorded.id);
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
