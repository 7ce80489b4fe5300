import type { DataSource } from 'typeorm';
import { DomainError, FieldError, ValidationFailed } from '../../common/domain-error';
import { JobName } from '../../jobs/queues';
import { uuid7 } from '../../common/uuid7';
import type { EndpointDefinition, TuningOptions } from '../../config/options';
import type { BackfillRequest, BackfillStatus, BackfillView } from './backfill.dto';

/**
 * A backfill's row (table backfills) and its job: what the route, the workers and the command line
 * share. Plain functions on a DataSource, so the command line needs no Nest application.
 */

export interface RunBackfillData {
  backfillId: string;
}

/** Where one account's walk stands: the `starting_after` of the next page, and whether it is walked. */
export interface AccountCursor {
  startingAfter: string | null;
  done: boolean;
  /**
   * Events listed after `startingAfter` that the last saved page counted already (refused, their
   * ids unprintable, so none could be the cursor): the next page lists them first, uncounted.
   */
  skip?: number;
}

export interface BackfillRow {
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
  refused: number;
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

export function view(row: BackfillRow): BackfillView {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    status: row.status,
    since: new Date(row.since).toISOString(),
    until: new Date(row.until).toISOString(),
    listed: row.listed,
    accepted: row.accepted,
    duplicates: row.duplicates,
    refused: row.refused,
    error: row.error,
  };
}

/** The user agent a backfill records its events with: how a page's count tells its own rows from any other. */
export function backfillUserAgent(backfillId: string): string {
  return `payment-webhooks-backfill/${backfillId}`;
}

