import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Queue } from 'bullmq';
import type { IncomingHttpHeaders } from 'node:http';
import { Pool } from 'pg';
import type { ResolvedOptions } from '../config/options';
import { withTimeout } from '../common/with-timeout';
import { PW_OPTIONS } from '../payment-webhooks.constants';
import { InboxJob, InboxQueue, processDeliveryJobOptions, ProcessDeliveryData } from './inbox.queue';
import type { EnvelopeIdentity } from './providers';
import type { ResolvedEndpoint } from './signature-verifier';
import { WebhookError } from './webhook.errors';

export interface IngestAnswer {
  status: 'accepted' | 'duplicate';
  eventId: string;
}

// One statement: a duplicate costs an index probe and writes nothing; a new row comes back.
const INSERT_SQL = `
  INSERT INTO webhook_inbox
    (endpoint_id, provider, merchant_account_id, event_id, event_type, resource_id, delivery_id, headers, body)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
  ON CONFLICT (provider, merchant_account_id, event_id) DO NOTHING
  RETURNING id`;

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

  constructor(@Inject(PW_OPTIONS) private readonly options: ResolvedOptions) {
    const { tuning } = options;
    this.pool = new Pool({
      connectionString: options.databaseUrl,
      max: tuning.ingestPoolSize,
      connectionTimeoutMillis: tuning.ingestTimeoutMs,
      query_timeout: tuning.ingestTimeoutMs,
      application_name: 'payment-webhooks-ingest',
    });
    // An idle connection dropped by the server must not crash the process; the next query reconnects.
    this.pool.on('error', (err) => this.logger.warn(`idle database connection lost: ${err.message}`));
    this.queue = new Queue<ProcessDeliveryData>(InboxQueue.Name, {
      prefix: options.queuePrefix,
      connection: { url: options.redisUrl, enableOfflineQueue: false, maxRetriesPerRequest: 1 },
    });
    this.queue.on('error', (err) => this.logger.warn(`inbox queue connection: ${err.message}`));
  }

  async record(
    endpoint: ResolvedEndpoint,
    identity: EnvelopeIdentity,
    headers: IncomingHttpHeaders,
    body: string,
  ): Promise<IngestAnswer> {
    let insertedId: string | undefined;
    try {
      const result = await this.pool.query<{ id: string }>({
        name: 'pw_inbox_insert',
        text: INSERT_SQL,
        values: [
          endpoint.id,
          endpoint.provider.name,
          endpoint.merchantAccountId,
          identity.eventId,
          identity.eventType,
          identity.resourceId,
          identity.deliveryId,
          storedHeaders(endpoint, headers),
          body,
        ],
      });
      insertedId = result.rows[0]?.id;
    } catch (err) {
      this.logger.warn(`delivery to ${endpoint.id} not recorded: ${(err as Error).message}`);
      throw new WebhookError('unavailable');
    }
    if (insertedId === undefined) return { status: 'duplicate', eventId: identity.eventId };
    await this.enqueue(insertedId);
    return { status: 'accepted', eventId: identity.eventId };
  }

  /** Best effort and bounded: the row is committed, so a lost job only delays processing. */
  private async enqueue(inboxId: string): Promise<void> {
    try {
      await withTimeout(
        this.queue.add(InboxJob.ProcessDelivery, { inboxId }, processDeliveryJobOptions(inboxId, this.options.tuning)),
        this.options.tuning.enqueueTimeoutMs,
        'enqueue',
      );
    } catch (err) {
      this.logger.warn(`delivery ${inboxId} recorded, not enqueued (the sweeper will): ${(err as Error).message}`);
    }
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([this.queue.close(), this.pool.end()]);
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
