import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { QueueName } from '../../common/queues';
import type { ResolvedOptions } from '../../config/options';
import { PW_CONNECTION } from '../../database/data-source';
import { rowsReturned } from '../../database/returning';
import { PW_OPTIONS } from '../../payment-webhooks.constants';
import { EndpointRegistry } from '../../webhooks/endpoint-registry';
import { InboxIngestService } from '../../webhooks/inbox-ingest.service';
import type { BackfillRequest, BackfillStarted, BackfillView } from './backfill.dto';
import {
  AccountCursor,
  backfillUserAgent,
  BackfillRow,
  createBackfill,
  findBackfill,
  RunBackfillData,
  runBackfillJob,
} from './backfill.store';
import { DEFAULT_STRIPE_API, EventsApiError, StripeEventsClient } from './stripe-events';

/**
 * Backfill (CONTRACT §4): walks Stripe's Events API page by page and records every event through
 * the receive path's own insert (InboxIngestService.record, source `backfill`), so it is keyed,
 * deduplicated and processed exactly as a webhook. Progress is saved per page, in one guarded
 * UPDATE (counts and cursor together), after the page's events are committed: a crash re-lists at
 * most the unfinished page, whose events are then found recorded. So that the counts stay those of
 * an uninterrupted run, a page's `accepted` is read from the inbox (rows of this backfill, by the
 * user agent it records them with), not from what record() answered this time.
 */
@Injectable()
export class BackfillService {
  private readonly logger = new Logger('Backfill');

  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    @InjectQueue(QueueName.Backfill) private readonly queue: Queue<RunBackfillData>,
    private readonly registry: EndpointRegistry,
    private readonly ingest: InboxIngestService,
  ) {}

  async start(request: BackfillRequest): Promise<BackfillStarted> {
    const id = await createBackfill(this.dataSource, this.options.endpoints, request, Date.now());
    await this.enqueue(id);
    return { id, status: 'running' };
  }

  get(id: string): Promise<BackfillView> {
    return findBackfill(this.dataSource, id);
  }

  /** Best effort: a backfill left without its job is enqueued again by the sweep (BackfillProcessor). */
  async enqueue(id: string): Promise<void> {
    const job = runBackfillJob(id, this.options.tuning);
    await this.queue.add(job.name, job.data, job.opts).catch((err: Error) => {
      this.logger.warn(`backfill ${id} recorded, not enqueued (the sweep will): ${err.message}`);
    });
  }

  /** Enqueues every running backfill again (a no-op for one whose job exists). */
  async sweep(): Promise<number> {
    const rows: Array<{ id: string }> = await this.dataSource.query(`SELECT id FROM backfills WHERE status = 'running'`);
    for (const { id } of rows) await this.enqueue(id);
    return rows.length;
  }

  /** Records that a backfill cannot go on; the reason is shown as its `error`. */
  async fail(id: string, reason: string): Promise<void> {
    await this.dataSource.query(
      `UPDATE backfills SET status = 'failed', error = $2, updated_at = now() WHERE id = $1 AND status = 'running'`,
      [id, reason.slice(0, 2_000)],
    );
    this.logger.warn(`backfill ${id} failed: ${reason}`);
  }

  /**
   * Walks what is left of a backfill, to its end. Throws on a database or Redis failure (the job is
   * retried and resumes from the saved cursor); an answer of the API that the client's retries did
   * not cure ends it `failed` with Stripe's message.
   */
  async run(id: string): Promise<void> {
    const [row]: BackfillRow[] = await this.dataSource.query(`SELECT * FROM backfills WHERE id = $1`, [id]);
    if (!row || row.status !== 'running') return;
    const definition = this.options.endpoints.find((e) => e.id === row.endpoint_id);
    const endpoint = this.registry.get(row.endpoint_id);
    if (!definition?.apiKey || !endpoint) {
      return this.fail(id, `endpoint ${row.endpoint_id} is no longer configured as a stripe endpoint with an apiKey`);
    }
    const client = new StripeEventsClient(definition.apiKey, definition.apiBaseUrl ?? DEFAULT_STRIPE_API);
    // Stripe's `created` is whole seconds: created ≥ since ⇔ created ≥ ⌈since⌉, likewise for until.
    const gte = Math.ceil(new Date(row.since).getTime() / 1000);
    const lt = Math.ceil(new Date(row.until).getTime() / 1000);
    const userAgent = backfillUserAgent(id);
    let cursors = row.cursors;

    for (let index = 0; index < row.accounts.length; index++) {
      const account = row.accounts[index];
      const merchantAccountId = endpoint.merchantAccountId ?? account ?? '';
      while (!cursors[index].done) {
        let page;
        try {
          page = await client.page(gte, lt, cursors[index].startingAfter, account);
        } catch (err) {
          if (err instanceof EventsApiError) return this.fail(id, err.message);
          throw err;
        }
        await Promise.all(
          page.events.map((event) => {
            // A connected account's event says whose it is; should one not, it is that account's (we asked with its header).
            const body = account !== null && typeof event.account !== 'string' ? { ...event, account } : event;
            const identity = endpoint.provider.identify(body as Record<string, unknown>, {});
            return this.ingest.record(endpoint, identity, { 'user-agent': userAgent }, JSON.stringify(body), 'backfill');
          }),
        );
        const ids = page.events.map((e) => e.id);
        const [{ mine }]: Array<{ mine: number }> = ids.length
          ? await this.dataSource.query(
              `SELECT count(*)::int AS mine FROM webhook_inbox
                WHERE provider = $1 AND merchant_account_id = $2 AND event_id = ANY($3)
                  AND source = 'backfill' AND headers->>'user-agent' = $4`,
              [endpoint.provider.name, merchantAccountId, ids, userAgent],
            )
          : [{ mine: 0 }];
        const next = cursors.map((c, i): AccountCursor =>
          i === index ? { startingAfter: ids.at(-1) ?? c.startingAfter, done: !page.hasMore || ids.length === 0 } : c,
        );
        // Guarded by the cursor this run read: a second runner of the same backfill (a job taken
        // back while its first holder still ran) can never count a page twice.
        const saved = await rowsReturned(
          this.dataSource,
          `UPDATE backfills
              SET cursors = $3::jsonb, listed = listed + $4, accepted = accepted + $5, duplicates = duplicates + $6, updated_at = now()
            WHERE id = $1 AND status = 'running' AND cursors = $2::jsonb
          RETURNING id`,
          [id, JSON.stringify(cursors), JSON.stringify(next), ids.length, mine, ids.length - mine],
        );
        if (saved.length !== 1) {
          this.logger.warn(`backfill ${id}: its progress moved elsewhere; this run stops`);
          return;
        }
        cursors = next;
      }
    }
    await this.dataSource.query(
      `UPDATE backfills SET status = 'done', updated_at = now() WHERE id = $1 AND status = 'running' AND cursors = $2::jsonb`,
      [id, JSON.stringify(cursors)],
    );
  }
}
