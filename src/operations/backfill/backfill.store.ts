import type { EntityManager } from 'typeorm';
import { DomainError, FieldError, ValidationFailed } from '../../common/domain-error';
import { canMove, IllegalMove } from '../../common/lifecycle';
import { JobName } from '../../jobs/queues';
import { uuid7 } from '../../common/uuid7';
import type { EndpointDefinition, TuningOptions } from '../../config/options';
import { rowsReturned } from '../../database/returning';
import type { BackfillRequest, BackfillView } from './backfill.dto';
import { BACKFILL_LIFECYCLE, type BackfillStatus } from './backfill.state';

/**
 * The one owner of table backfills: a backfill's row and its job, what the route, the workers and
 * the command line share. Plain functions on a runner (the DataSource), so the command line needs
 * no Nest application. A status written is one the backfill lifecycle (backfill.state.ts) allows
 * from the status the statement guards.
 */

/** What a statement runs on: the DataSource (each statement commits on its own), or a transaction. */
type Runner = Pick<EntityManager, 'query'>;

/** Where a backfill starts, the one status whose walk may go on, and the one its ends are written from. */
const RUNNING: BackfillStatus = 'running';
if (!BACKFILL_LIFECYCLE.initial.includes(RUNNING)) throw new Error(`a backfill cannot start ${RUNNING}`);
// The ends below are written from RUNNING (the statements guard it): checked against the lifecycle
// once, when the module loads, so a table that stops allowing one stops the start.
for (const end of ['done', 'failed'] as const) {
  if (!canMove(BACKFILL_LIFECYCLE, RUNNING, end)) throw new IllegalMove(BACKFILL_LIFECYCLE, RUNNING, end);
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

const INSERT_SQL = `
  INSERT INTO backfills (id, endpoint_id, since, until, accounts, cursors)
  VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb)`;

/**
 * Validates a backfill request against the configured endpoints and records it `running`. The
 * unique partial index on running backfills decides whether another one runs for the endpoint
 * (BACKFILL.RUNNING), not a look before the insert. Shared by the route and the command line.
 */
export async function createBackfill(
  runner: Runner,
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
    await runner.query(INSERT_SQL, [
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

/** A backfill's row; undefined when there is none. */
export async function loadBackfill(runner: Runner, id: string): Promise<BackfillRow | undefined> {
  const [row]: BackfillRow[] = await runner.query(`SELECT id, endpoint_id, status, since, until, accounts, cursors, listed, accepted, duplicates, refused, error, created_at, updated_at FROM backfills WHERE id = $1`, [id]);
  return row;
}

export async function findBackfill(runner: Runner, id: string): Promise<BackfillView> {
  const row = await loadBackfill(runner, id);
  if (!row) throw new DomainError('BACKFILL.NOT_FOUND', `no backfill ${id}`);
  return view(row);
}

/** The ids of the backfills still running (each should have a job). */
export async function runningBackfillIds(runner: Runner): Promise<string[]> {
  const rows: Array<{ id: string }> = await runner.query(`SELECT id FROM backfills WHERE status = '${RUNNING}'`);
  return rows.map((r) => r.id);
}

/** Ends a running backfill `failed`, with the reason shown as its `error` (a backfill already ended is left). */
export async function failBackfill(runner: Runner, id: string, reason: string): Promise<void> {
  await runner.query(`UPDATE backfills SET status = 'failed', error = $2, updated_at = now() WHERE id = $1 AND status = '${RUNNING}'`, [
    id,
    reason.slice(0, 2_000),
  ]);
}

/** A page's progress: the cursors after it, and what its events turned out to be. */
export interface PageProgress {
  cursors: AccountCursor[];
  listed: number;
  accepted: number;
  duplicates: number;
  refused: number;
}

/**
 * Saves a page's progress (counts and cursor together, one statement), guarded by the cursors this
 * run read: a second runner of the same backfill (a job taken back while its first holder still
 * ran) can never count a page twice. Returns whether it was saved (false: the walk moved on elsewhere).
 */
export async function saveBackfillProgress(runner: Runner, id: string, readCursors: AccountCursor[], page: PageProgress): Promise<boolean> {
  const saved = await rowsReturned(
    runner,
    `UPDATE backfills
        SET cursors = $3::jsonb, listed = listed + $4, accepted = accepted + $5, duplicates = duplicates + $6,
            refused = refused + $7, updated_at = now()
      WHERE id = $1 AND status = '${RUNNING}' AND cursors = $2::jsonb
    RETURNING id`,
    [id, JSON.stringify(readCursors), JSON.stringify(page.cursors), page.listed, page.accepted, page.duplicates, page.refused],
  );
  return saved.length === 1;
}

/** Ends a backfill `done` once its window is walked, guarded by the cursors this run saved last. */
export async function finishBackfill(runner: Runner, id: string, cursors: AccountCursor[]): Promise<void> {
  await runner.query(`UPDATE backfills SET status = 'done', updated_at = now() WHERE id = $1 AND status = '${RUNNING}' AND cursors = $2::jsonb`, [
    id,
    JSON.stringify(cursors),
  ]);
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

