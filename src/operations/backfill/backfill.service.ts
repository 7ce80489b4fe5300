import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { DomainError, FieldError, ValidationFailed } from '../../common/domain-error';
import { JobName, QueueName } from '../../common/queues';
import { uuid7 } from '../../common/uuid7';
import type { EndpointDefinition, ResolvedOptions, TuningOptions } from '../../config/options';
import { PW_CONNECTION } from '../../database/data-source';
import { rowsReturned } from '../../database/returning';
import { PW_OPTIONS } from '../../payment-webhooks.constants';
import { EndpointRegistry } from '../../webhooks/endpoint-registry';
import { InboxIngestService } from '../../webhooks/inbox-ingest.service';
import type { BackfillRequest, BackfillStarted, BackfillStatus, BackfillView } from './backfill.dto';
import { DEFAULT_STRIPE_API, EventsApiError, StripeEventsClient } from './stripe-events';

export interface RunBackfillData {
  backfillId: string;
}

/** Where one account's walk stands: the `starting_after` of the next page, and whether it is walked. */
interface AccountCursor {
  startingAfter: string | null;
  done: boolean;
}

interface BackfillRow {
  id: string;
  endpoint_id: string;
  status: BackfillStatus;
  since: Date;
  until: Date;
  /** null: the endpoint's own account, listed without Stripe-Account. */
  accounts: Array<string | null>;
  cursors: AccountCursor[];
  listed: number;
  accepted: number;
  duplicates: number;
  error: string | null;
}

/**
 * The job of a backfill: its id is the backfill's, so the route, the start-up sweep and BullMQ's
 * stalled-job recovery can all enqueue it without doubling. Removed once finished, so a backfill
 * still `running` (its job lost) can be enqueued again; the row decides what is left to do.
 */
export function runBackfillJob(backfillId: string, tuning: Pick<TuningOptions, 'inboxBackoffMs'>) {
  return {
    name: JobName.RunBackfill,
    data: { backfillId } satisfies RunBackfillData,
    opts: {
      jobId: backfillId,
      attempts: BACKFILL_ATTEMPTS,
      backoff: { type: 'exponential', delay: tuning.inboxBackoffMs, jitter: 0.5 },
      removeOnComplete: true,
      removeOnFail: true,
    },
  };
}

/** Runs of a backfill's job before the backfill is `failed` (a database or Redis that stays away). */
export const BACKFILL_ATTEMPTS = 8;

const INSERT_SQL = `
  INSERT INTO backfills (id, endpoint_id, since, until, accounts, cursors)
  VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb)`;

/**
 * Validates a backfill request against the configured endpoints and records it `running`. The
 * unique partial index on running backfills decides whether another one runs for the endpoint
 * (BACKFILL.RUNNING), not a look before the insert. Shared by the route and the command line.
 */
export async function createBackfill(
  dataSource: DataSource,
  endpoints: EndpointDefinition[],
  request: BackfillRequest,
  nowMs: number,
): Promise<string> {
  const definition = endpoints.find((e) => e.id === request.endpointId);
  const fail = (field: string, message: string): never => {
    throw new ValidationFailed([{ field, message } satisfies FieldError]);
  };
  if (!definition) fail('endpointId', `no endpoint ${request.endpointId} is configured`);
  if (definition!.provider !== 'stripe') fail('endpointId', `endpoint ${request.endpointId} is not a stripe endpoint; only stripe endpoints can be backfilled`);
  if (!definition!.apiKey) fail('endpointId', `endpoint ${request.endpointId} has no apiKey to read the Stripe events API with`);

  const since = Date.parse(request.since);
  const until = request.until === undefined ? nowMs : Date.parse(request.until);
  if (since >= until) {
    if (request.until === undefined) fail('since', 'since must be in the past (until defaults to now)');
    fail('until', 'until must be after since');
  }

  const accounts = backfillAccounts(definition!, request.accounts, fail);
  const id = uuid7();
  try {
    await dataSource.query(INSERT_SQL, [
      id,
      definition!.id,
      new Date(since).toISOString(),
      new Date(until).toISOString(),
      JSON.stringify(accounts),
      JSON.stringify(accounts.map((): AccountCursor => ({ startingAfter: null, done: false }))),
    ]);
  } catch (err) {
    if ((err as { code?: string }).code === '23505' && /backfills_one_running/.test(String((err as { constraint?: string }).constraint ?? (err as Error).message))) {
      throw new DomainError(
        'BACKFILL.RUNNING',
        `a backfill of ${definition!.id} is running`,
        `a backfill of endpoint ${definition!.id} is running; wait for it to end (GET /admin/backfill/{id})`,
      );
    }
    throw err;
  }
  return id;
}

/** The accounts walked: [null] on a single-account endpoint (no Stripe-Account), else the chosen connected accounts. */
function backfillAccounts(definition: EndpointDefinition, requested: string[] | undefined, fail: (f: string, m: string) => never): Array<string | null> {
  const listed = definition.merchantAccountIds;
  if (listed === undefined) {
    const own = definition.merchantAccountId;
    const stranger = requested?.find((a) => a !== own);
    if (stranger !== undefined) fail('accounts', `account ${stranger} is not served by endpoint ${definition.id} (it serves ${own})`);
    return [null];
  }
  const any = listed.includes('*');
  if (requested === undefined) {
    if (any) fail('accounts', `accounts is required: endpoint ${definition.id} serves any account ("*")`);
    return [...new Set(listed)];
  }
  const stranger = requested.find((a) => !any && !listed.includes(a));
  if (stranger !== undefined) fail('accounts', `account ${stranger} is not in the merchantAccountIds of endpoint ${definition.id}`);
  return [...new Set(requested)];
}

export async function findBackfill(dataSource: DataSource, id: string): Promise<BackfillView> {
  const [row]: BackfillRow[] = await dataSource.query(`SELECT * FROM backfills WHERE id = $1`, [id]);
  if (!row) throw new DomainError('BACKFILL.NOT_FOUND', `no backfill ${id}`);
  return view(row);
}

function view(row: BackfillRow): BackfillView {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    status: row.status,
    since: new Date(row.since).toISOString(),
    until: new Date(row.until).toISOString(),
    listed: row.listed,
    accepted: row.accepted,
    duplicates: row.duplicates,
    error: row.error,
  };
}

/** The user agent a backfill records its events with: how a page's count tells its own rows from any other. */
export function backfillUserAgent(backfillId: string): string {
  return `payment-webhooks-backfill/${backfillId}`;
}

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
