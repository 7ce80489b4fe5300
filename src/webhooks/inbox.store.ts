import { Injectable } from '@nestjs/common';
import type { Pool } from 'pg';
import type { EntityManager } from 'typeorm';
import { idsOfRows } from '../database/bulk-sql';
import { DeferredWrite, deferWrites } from '../database/transaction';
import { DomainError } from '../common/domain-error';
import { canMove, IllegalMove } from '../common/lifecycle';
import { keysetQuery, Page, PageQuery, toPage, whereClause } from '../common/pagination';
import {
  DeliverySource,
  INBOX_LIFECYCLE,
  InboxStatus,
  ProcessingResult,
  PURGEABLE,
  REOPENABLE,
} from './inbox.state';

/** What a statement runs on: a transaction's EntityManager, or the DataSource for a statement of its own. */
export type Runner = Pick<EntityManager, 'query'>;

/** A row of webhook_inbox: one delivery, as the receive path recorded it and as its processing left it. */
export interface Delivery {
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
   * (an account outside its list, or other than its one account), so that such an event, recorded to
   * be rejected (`account_mismatch`, whatever its body reads as later), never takes the
   * key of the account it names: that account's real event, delivered through an endpoint that
   * serves it, is then a new event, not a duplicate.
   */
  keyScope: string;
  /** The kept headers (a JSON object; signature values are redacted when shown). */
  headers: Record<string, string>;
  body: string;
  status: InboxStatus;
  outcome: string | null;
  attempts: number;
  lastError: string | null;
  receivedAt: Date;
  processedAt: Date | null;
}

/**
 * A delivery to record: what the receive path knows of it. The rest starts as a new row does
 * (`received`, no attempt). The headers travel as JSON text: the batcher weighs them, and the
 * statement casts them.
 */
export type NewDelivery = Pick<
  Delivery,
  'id' | 'endpointId' | 'provider' | 'merchantAccountId' | 'eventId' | 'eventType' | 'resourceId' | 'deliveryId' | 'apiVersion' | 'source' | 'keyScope' | 'body'
> & {
  headers: string;
  /** The `traceparent` of the event's receipt span; null when nothing traced it. */
  traceContext: string | null;
};

/** The deduplication key of a row, and its id: what a batch insert returns for each row it wrote. */
export type RecordedKey = Pick<Delivery, 'id' | 'provider' | 'merchantAccountId' | 'eventId' | 'keyScope'>;

/** What the processing transaction reads of a row it locks. */
export type DeliveryToProcess = Pick<
  Delivery,
  'id' | 'endpointId' | 'provider' | 'merchantAccountId' | 'eventId' | 'eventType' | 'resourceId' | 'keyScope' | 'body' | 'status'
> & {
  /** The `traceparent` of its receipt span, which its processing spans link to. */
  traceContext: string | null;
};

/** A delivery as the archive lists it: everything but its key scope, headers and body. */
export type ArchivedDelivery = Omit<Delivery, 'keyScope' | 'headers' | 'body'>;

/** A delivery as the archive shows it alone: with its headers and body. */
export type ArchivedDeliveryDetail = ArchivedDelivery & Pick<Delivery, 'headers' | 'body'>;

/** The deliveries of one provider payment: what parking, releasing and re-running select on. */
export interface ResourceKey {
  provider: string;
  merchantAccountId: string;
  resourceId: string;
}

/** What the payments a transaction touched ask of their deliveries (see `reopenTooEarlyAndFindWaiting`). */
export interface PaymentFollowUp extends ResourceKey {
  /** The payment was registered: its deliveries waiting for it are looked for. */
  release: boolean;
  /** The payment moved: its deliveries rejected as too early are opened again. */
  reopen: boolean;
}

/** The archive's filters, each optional; every one has an index. */
export interface ArchiveFilter {
  status?: string;
  endpointId?: string;
  provider?: string;
  eventType?: string;
  eventId?: string;
  resourceId?: string;
  receivedFrom?: Date;
  receivedBefore?: Date;
}

/** A gauge of the inbox, read at scrape time (`MetricsService.readFromDatabase`), with its help text. */
export const INBOX_GAUGES = {
  pw_inbox_backlog: 'Deliveries recorded and not processed yet',
  pw_inbox_oldest_unprocessed_age_seconds: 'Age of the oldest delivery not processed yet (0 when none)',
} as const;
export type InboxGauge = keyof typeof INBOX_GAUGES;

const RECEIVED: InboxStatus = 'received';

/**
 * The moves the statements below make from a status they name in SQL rather than read first: each
 * is checked against the lifecycle once, when the module loads, so a table that stops allowing one
 * stops the start instead of being bypassed.
 */
const FIXED_MOVES: Array<[InboxStatus, InboxStatus]> = [
  // recordFailure: a delivery's last failed attempt.
  [RECEIVED, 'failed'],
  // reopenTooEarlyAndFindWaiting: a delivery rejected as too early gets its turn.
  ['rejected', RECEIVED],
  // releaseParked (WAITS_FOR_REGISTRATION): parked, or refused for an account not expected yet.
  ['unmatched', RECEIVED],
];
for (const [from, to] of FIXED_MOVES) if (!canMove(INBOX_LIFECYCLE, from, to)) throw new IllegalMove(INBOX_LIFECYCLE, from, to);
if (!INBOX_LIFECYCLE.initial.includes(RECEIVED)) throw new Error(`a delivery cannot be recorded ${RECEIVED}`);

/** What a delivery opened again looks like: `received`, its last end forgotten (its attempts kept). */
const REOPENED = `status = '${RECEIVED}', outcome = NULL, processed_at = NULL`;

/** The rows a processing transaction marks: those it processes (and locked), which no reaction of it touches (`deferWrites`' keys). */
const IN_PROCESS_ROWS = 'webhook_inbox: the deliveries in process';
/** The rows a processing transaction's reactions reopen: never those it processes. */
const OTHER_ROWS = 'webhook_inbox: the other deliveries of a payment';

/**
 * What a registration of a delivery's payment lets through, as a condition on a row (`w.` columns):
 * a delivery parked `unmatched` (no payment to apply it to yet), or one `rejected` as
 * `account_mismatch` because its order did not expect its account yet — a registration under that
 * account is what makes the order expect it. Only events keyed in their own account (`key_scope`
 * empty): one its endpoint does not serve stays rejected.
 */
const WAITS_FOR_REGISTRATION = `(w.status = 'unmatched' OR (w.status = 'rejected' AND w.outcome = 'account_mismatch' AND w.key_scope = ''))`;

const INSERT_COLUMNS =
  'id, endpoint_id, provider, merchant_account_id, event_id, event_type, resource_id, delivery_id, api_version, source, headers, body, key_scope, trace_context, received_at';
/** The deduplication key: (provider, merchant account, event id), in the scope of its row. */
const EVENT_KEY = 'provider, merchant_account_id, event_id, key_scope';

/** A new row's fields in column order: how a batch travels to its statement, and one row's parameters. */
function insertValues(row: NewDelivery): Array<string | null> {
  return [row.id, row.endpointId, row.provider, row.merchantAccountId, row.eventId, row.eventType, row.resourceId, row.deliveryId, row.apiVersion, row.source, row.headers, row.body, row.keyScope, row.traceContext];
}

// One statement for a whole batch: a duplicate costs an index probe and writes nothing; the new
// rows come back. The batch travels as one JSON array of rows in column order (see insertValues),
// which both sides encode and decode natively; named keys would repeat every name in every row.
const INSERT_BATCH_SQL = `
  INSERT INTO webhook_inbox (${INSERT_COLUMNS})
  SELECT (r->>0)::uuid, r->>1, r->>2, r->>3, r->>4, r->>5, r->>6, r->>7, r->>8, r->>9, (r->>10)::jsonb, r->>11, r->>12, r->>13,
         pw_uuid7_time((r->>0)::uuid)
    FROM jsonb_array_elements($1::jsonb) AS r
  ON CONFLICT (${EVENT_KEY}) DO NOTHING
  RETURNING id, provider, merchant_account_id AS "merchantAccountId", event_id AS "eventId", key_scope AS "keyScope"`;

// The same for one row.
const INSERT_ONE_SQL = `
  INSERT INTO webhook_inbox (${INSERT_COLUMNS})
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12, $13, $14, pw_uuid7_time($1))
  ON CONFLICT (${EVENT_KEY}) DO NOTHING
  RETURNING id, event_id`;

const TO_PROCESS_COLUMNS = `id, endpoint_id AS "endpointId", provider, merchant_account_id AS "merchantAccountId",
  event_id AS "eventId", event_type AS "eventType", resource_id AS "resourceId", key_scope AS "keyScope", body, status,
  trace_context AS "traceContext"`;

const ARCHIVE_COLUMNS = `id, endpoint_id AS "endpointId", provider, merchant_account_id AS "merchantAccountId",
  event_id AS "eventId", event_type AS "eventType", resource_id AS "resourceId", delivery_id AS "deliveryId",
  api_version AS "apiVersion", source, status, outcome, attempts, last_error AS "lastError", received_at AS "receivedAt", processed_at AS "processedAt"`;

/** The smallest UUIDv7 of a millisecond: ids and received_at share one clock (see the migration). */
function idFloor(ms: number): string {
  const hex = Math.max(0, ms).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}

/** The archive's filter as conditions, each served by an index. */
function archiveConditions(filter: ArchiveFilter): Array<[sql: string, value: unknown]> {
  const { receivedFrom: from, receivedBefore: to } = filter;
  return [
    ['status = ?', filter.status],
    ['endpoint_id = ?', filter.endpointId],
    ['provider = ?', filter.provider],
    ['event_type = ?', filter.eventType],
    ['event_id = ?', filter.eventId],
    ['resource_id = ?', filter.resourceId],
    // The window on received_at, and the same window on the id, so the primary key serves it.
    ['received_at >= ?', from],
    ['id >= ?', from && idFloor(Math.floor(from.getTime()))],
    ['received_at < ?', to],
    ['id < ?', to && idFloor(Math.ceil(to.getTime()) + 1)],
  ];
}

/**
 * The one owner of table webhook_inbox: every statement on it is here, each one use of the inbox
 * (record, lock, finish, fail, reopen, release, sweep, list, purge, count). A status written is
 * one the delivery lifecycle (inbox.state.ts) allows from the status the statement reads or guards.
 * Stateless: each method runs on the runner it is given (the receive path's pool, a transaction, or
 * the DataSource), so the command line can use it without a Nest application.
 */
@Injectable()
export class InboxStore {
  /**
   * Records a batch in one statement (`pw_inbox_insert_batch`, on the receive path's own pool);
   * returns the rows written, a duplicate of a recorded event being left out.
   */
  async insertBatch(pool: Pool, rows: readonly NewDelivery[]): Promise<RecordedKey[]> {
    const result = await pool.query<RecordedKey>({ name: 'pw_inbox_insert_batch', text: INSERT_BATCH_SQL, values: [JSON.stringify(rows.map(insertValues))] });
    return result.rows;
  }

  /** Records one delivery (`pw_inbox_insert_one`); returns its id, or null for a duplicate. */
  async insertOne(pool: Pool, row: NewDelivery): Promise<string | null> {
    const result = await pool.query<{ id: string }>({ name: 'pw_inbox_insert_one', text: INSERT_ONE_SQL, values: insertValues(row) });
    return result.rows[0]?.id ?? null;
  }

  /**
   * Locks deliveries for their processing transaction, in id order (so two transactions take their
   * locks in the same order), in one statement however many. A row purged meanwhile is not there.
   */
  async lockForProcessing(em: EntityManager, ids: readonly string[]): Promise<DeliveryToProcess[]> {
    return em.query(`SELECT ${TO_PROCESS_COLUMNS} FROM webhook_inbox WHERE id = ANY($1) ORDER BY id FOR UPDATE`, [ids]);
  }

  /**
   * Writes how the processing of locked deliveries ended (status, outcome, processed_at, one more
   * attempt, no error), in one statement for one row or many, deferred to run with the
   * transaction's other writes (`deferWrites`). Each move must be one the lifecycle allows from the
   * status read under the lock.
   */
  async markFinished(
    em: EntityManager,
    finished: ReadonlyArray<{ delivery: Pick<Delivery, 'id' | 'status'>; result: ProcessingResult; resourceId?: string }>,
  ): Promise<void> {
    if (finished.length === 0) return;
    for (const { delivery, result } of finished) {
      if (!canMove(INBOX_LIFECYCLE, delivery.status, result.status)) throw new IllegalMove(INBOX_LIFECYCLE, delivery.status, result.status);
    }
    // `resourceId`: the payment a row turned out to be about, where it named none (a thin
    // notification of a charge) or named a capture of it (a PayPal refund), so that what looks for
    // that payment's deliveries finds it; without one the row keeps what it names.
    await deferWrites(em, [
      {
        // The rows the transaction processes (locked by it), which the reactions never touch.
        key: IN_PROCESS_ROWS,
        sql: `UPDATE webhook_inbox w
                 SET status = r.status, outcome = r.outcome, processed_at = now(), attempts = w.attempts + 1, last_error = NULL,
                     resource_id = COALESCE(r.resource, w.resource_id)
                FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, status text, outcome text, resource text)
               WHERE w.id = r.id AND w.id = ${idsOfRows('$1::jsonb')}`,
        params: [
          JSON.stringify(
            finished.map(({ delivery, result, resourceId }) => ({ id: delivery.id, status: result.status, outcome: result.outcome, resource: resourceId ?? null })),
          ),
        ],
      },
    ]);
  }

  /**
   * Records a failed attempt and its error (`<code>: <message>`). On the last attempt a delivery
   * still `received` becomes `failed`, with the error's code as its outcome; a final one keeps its status.
   */
  async recordFailure(runner: Runner, id: string, error: { code: string; text: string }, finalAttempt: boolean, resourceId?: string): Promise<void> {
    // `resourceId`: what the attempt learnt the row is about (see markFinished), kept even though it failed.
    await runner.query(
      `UPDATE webhook_inbox
          SET attempts = attempts + 1,
              last_error = $2,
              status = CASE WHEN $3 AND status = '${RECEIVED}' THEN 'failed' ELSE status END,
              outcome = CASE WHEN $3 AND status = '${RECEIVED}' THEN $4 ELSE outcome END,
              resource_id = COALESCE($5, resource_id)
        WHERE id = $1`,
      [id, error.text, finalAttempt, error.code, resourceId ?? null],
    );
  }

  /**
   * For the payments a transaction touched: opens again their deliveries rejected as too early
   * (`illegal_transition`: a refund before its capture) where the payment moved, and looks, without
   * a lock, for deliveries waiting for a payment just registered (nearly always none), deferred to
   * run with the transaction's other writes (`deferWrites`). `exceptIds`: the deliveries the
   * transaction is processing itself, left alone. `then` gets the ids reopened, and the payments
   * some delivery waits for.
   */
  async reopenTooEarlyAndFindWaiting(
    em: EntityManager,
    payments: readonly PaymentFollowUp[],
    exceptIds: readonly string[],
    then: (found: { reopened: string[]; waiting: ResourceKey[] }) => unknown,
  ): Promise<void> {
    // Each payment's deliveries are looked up by its resource id alone, one probe of the index on
    // it (`OFFSET 0` keeps the planner from turning the probes into a join), then matched on the
    // whole key. A join of the list against the table, or a lookup led by provider and account,
    // is what a planner without fresh statistics picks, and under a backlog of thousands that
    // scan would cost every processing transaction.
    const ofPayments = (which: 'reopen' | 'release') => `
         FROM jsonb_to_recordset($1::jsonb) AS k(provider text, account text, resource text, ${which} boolean)
         CROSS JOIN LATERAL (
           SELECT w.id, w.provider, w.merchant_account_id, w.status, w.outcome, w.key_scope FROM webhook_inbox w
            WHERE w.resource_id = k.resource
           OFFSET 0) d
        WHERE k.${which} AND d.provider = k.provider AND d.merchant_account_id = k.account AND NOT (d.id = ANY($2::uuid[]))`;
    const keys = (which: 'reopen' | 'release') =>
      JSON.stringify(payments.filter((p) => p[which]).map((p) => ({ provider: p.provider, account: p.merchantAccountId, resource: p.resourceId, [which]: true })));
    const found = { reopened: [] as string[], waiting: [] as ResourceKey[] };
    const writes: DeferredWrite[] = [];
    if (payments.some((p) => p.reopen)) {
      writes.push({
        key: OTHER_ROWS,
        sql: `UPDATE webhook_inbox w SET ${REOPENED}
               WHERE w.id IN (SELECT d.id ${ofPayments('reopen')} AND d.status = 'rejected' AND d.outcome = 'illegal_transition')
           RETURNING w.id`,
        params: [keys('reopen'), exceptIds],
        then: (rows) => {
          found.reopened = rows.map((r) => r.id as string);
        },
      });
    }
    if (payments.some((p) => p.release)) {
      writes.push({
        key: OTHER_ROWS,
        sql: `SELECT DISTINCT k.provider, k.account, k.resource ${ofPayments('release')}
                AND (d.status = '${RECEIVED}' OR ${WAITS_FOR_REGISTRATION.replace(/\bw\./g, 'd.')})`,
        params: [keys('release'), exceptIds],
        then: (rows) => {
          found.waiting = rows.map((r) => ({ provider: r.provider, merchantAccountId: r.account, resourceId: r.resource }));
        },
      });
    }
    if (writes.length === 0) return;
    // The last to run hands over what both found.
    const last = writes[writes.length - 1];
    const own = last.then!;
    last.then = async (rows) => {
      own(rows);
      await then(found);
    };
    await deferWrites(em, writes);
  }

  /**
   * In the caller's transaction: deliveries of one provider payment parked as `unmatched` (or
   * refused for an account not expected yet) become `received` again, and the ids of every delivery
   * of that payment still waiting are returned, to be requeued (expedited) after the commit.
   * `exceptIds` leaves out the deliveries being processed. With `skipLocked`, rows another
   * transaction holds are passed over: `skipped` says whether any were, so the caller can look
   * again once it holds nothing.
   */
  async releaseParked(
    em: EntityManager,
    key: ResourceKey,
    { exceptIds = [], skipLocked = false }: { exceptIds?: readonly string[]; skipLocked?: boolean } = {},
  ): Promise<{ ids: string[]; skipped: boolean }> {
    // The payment's deliveries by its resource id first (see reopenTooEarlyAndFindWaiting: never a
    // scan of the account's deliveries, whatever the planner's statistics say).
    const where = `w.id IN (SELECT r.id FROM (SELECT id, provider, merchant_account_id FROM webhook_inbox WHERE resource_id = $3 OFFSET 0) r
                             WHERE r.provider = $1 AND r.merchant_account_id = $2)
          AND (w.status = '${RECEIVED}' OR ${WAITS_FOR_REGISTRATION}) AND NOT (w.id = ANY($4::uuid[]))`;
    const params = [key.provider, key.merchantAccountId, key.resourceId, exceptIds];
    if (skipLocked) {
      // Nearly always nothing waits for a payment being registered: one look, no lock, says so.
      const [{ waiting }]: Array<{ waiting: number }> = await em.query(`SELECT count(*)::int AS waiting FROM webhook_inbox w WHERE ${where}`, params);
      if (waiting === 0) return { ids: [], skipped: false };
    }
    // Lock first: a worker whose last attempt is parking one of these right now is waited for,
    // and its row is then seen as `unmatched` (and released) rather than missed as `received`.
    // Inbox rows are locked before orders everywhere, so this wait cannot close a cycle; a
    // transaction that holds an order already skips the rows other workers hold instead.
    const rows: Array<{ id: string; status: InboxStatus }> = await em.query(
      `SELECT id, status FROM webhook_inbox w WHERE ${where} ORDER BY id FOR UPDATE${skipLocked ? ' SKIP LOCKED' : ''}`,
      params,
    );
    await this.reopen(em, rows.filter((r) => r.status !== RECEIVED).map((r) => r.id));
    const [{ waiting }]: Array<{ waiting: number }> = skipLocked
      ? await em.query(`SELECT count(*)::int AS waiting FROM webhook_inbox w WHERE ${where}`, params)
      : [{ waiting: rows.length }];
    return { ids: rows.map((r) => r.id), skipped: waiting > rows.length };
  }

  /**
   * An operator's replay, in the caller's transaction: a delivery that can still change (one the
   * lifecycle lets move back to `received`) is opened again; a processed or ignored one is left as
   * it is. Returns whether it was reopened. A delivery whose processing holds its row right now
   * answers DELIVERY.BUSY rather than wait, so two runs never overlap.
   */
  async reopenForReplay(em: EntityManager, id: string): Promise<boolean> {
    let rows: Array<{ status: InboxStatus }>;
    try {
      rows = await em.query(`SELECT status FROM webhook_inbox WHERE id = $1 FOR UPDATE NOWAIT`, [id]);
    } catch (err) {
      if ((err as { code?: string }).code === '55P03') {
        throw new DomainError('DELIVERY.BUSY', 'busy', 'the delivery is being processed right now; try again shortly');
      }
      throw err;
    }
    if (rows.length === 0) throw new DomainError('DELIVERY.NOT_FOUND', 'no such delivery');
    if (!canMove(INBOX_LIFECYCLE, rows[0].status, RECEIVED)) return false;
    await this.reopen(em, [id]);
    return true;
  }

  /**
   * For the sweeper: up to `limit` deliveries still `received` `olderThanMs` after they arrived, in
   * id order after `afterId` (a cursor, so passes walk the whole backlog).
   */
  async stillReceived(em: EntityManager, { olderThanMs, afterId, limit }: { olderThanMs: number; afterId: string | null; limit: number }): Promise<string[]> {
    const rows: Array<{ id: string }> = await em.query(
      `SELECT id FROM webhook_inbox
        WHERE status = '${RECEIVED}' AND received_at < now() - make_interval(secs => $1::double precision / 1000)
          AND id > COALESCE($3::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
        ORDER BY id
        LIMIT $2`,
      [olderThanMs, limit, afterId],
    );
    return rows.map((r) => r.id);
  }

  /**
   * One page of the archive, newest first, keyset on the time-ordered id. Every filter has an index
   * (status, endpoint, event type, event id, resource id with the id; provider through the unique
   * event key, which it leads; a time window through the primary key).
   */
  async archivePage(runner: Runner, filter: ArchiveFilter, page: PageQuery): Promise<Page<ArchivedDelivery>> {
    const { text, params, limit } = keysetQuery(`SELECT ${ARCHIVE_COLUMNS} FROM webhook_inbox`, archiveConditions(filter), page);
    const rows: ArchivedDelivery[] = await runner.query(text, params);
    return toPage(rows, limit, (row) => row);
  }

  /** The ids of up to `limit` deliveries the archive's filter selects, in id order (a bulk replay's selection). */
  async idsMatching(runner: Runner, filter: ArchiveFilter, limit: number): Promise<string[]> {
    const { where, params } = whereClause(archiveConditions(filter));
    const rows: Array<{ id: string }> = await runner.query(
      `SELECT id FROM webhook_inbox ${where} ORDER BY id LIMIT $${params.push(limit)}`,
      params,
    );
    return rows.map((r) => r.id);
  }

  /** How many deliveries the archive's filter selects. */
  async countMatching(runner: Runner, filter: ArchiveFilter): Promise<number> {
    const { where, params } = whereClause(archiveConditions(filter));
    const [{ n }]: Array<{ n: number }> = await runner.query(`SELECT count(*)::int AS n FROM webhook_inbox ${where}`, params);
    return n;
  }

  /**
   * An operator's replay of many deliveries, in the caller's transaction and in one statement: those
   * that can still change (failed, unmatched, rejected) are opened again, those still `received` are
   * kept; processed and ignored ones, unknown ids, and deliveries whose processing holds their row
   * right now (skipped, never waited for) are left out. Returns the ids to run now: the reopened and
   * the received.
   */
  async reopenManyForReplay(em: EntityManager, ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rows: Array<{ id: string }> = await em.query(
      `WITH picked AS (
         SELECT id, status FROM webhook_inbox WHERE id = ANY($1::uuid[]) AND status = ANY($2) ORDER BY id FOR UPDATE SKIP LOCKED
       ), reopened AS (
         UPDATE webhook_inbox w SET ${REOPENED} FROM picked WHERE w.id = picked.id AND picked.status <> '${RECEIVED}'
       )
       SELECT id FROM picked ORDER BY id`,
      [ids, [RECEIVED, ...REOPENABLE]],
    );
    return rows.map((r) => r.id);
  }

  /** One delivery of the archive, with its headers and body; undefined when there is none. */
  async archivedDelivery(runner: Runner, id: string): Promise<ArchivedDeliveryDetail | undefined> {
    const [row]: ArchivedDeliveryDetail[] = await runner.query(`SELECT ${ARCHIVE_COLUMNS}, headers, body FROM webhook_inbox WHERE id = $1`, [id]);
    return row;
  }

  /**
   * Retention: deletes the deliveries whose outcome is settled (PURGEABLE) and that were received
   * more than `olderThanDays` ago, `batchSize` at a time, each batch a statement committed on its
   * own (no long lock; the runner is the DataSource). Returns how many it deleted.
   */
  async purgeSettled(runner: Runner, { olderThanDays, batchSize }: { olderThanDays: number; batchSize: number }): Promise<number> {
    let total = 0;
    for (;;) {
      const [{ n }]: Array<{ n: number }> = await runner.query(
        `WITH d AS (
           DELETE FROM webhook_inbox WHERE id IN (
             SELECT id FROM webhook_inbox
              WHERE status = ANY($1) AND received_at < now() - make_interval(days => $2)
              LIMIT ${Math.trunc(batchSize)})
           RETURNING 1)
         SELECT count(*)::int AS n FROM d`,
        [PURGEABLE, olderThanDays],
      );
      total += n;
      if (n < batchSize) return total;
    }
  }

  /**
   * Which of `resourceIds` an event of `provider` recorded before names (`webhook_inbox_resource_id_idx`),
   * for one of `accounts` (null: any account).
   */
  async resourcesNamed(runner: Runner, { provider, accounts, resourceIds }: { provider: string; accounts: readonly string[] | null; resourceIds: readonly string[] }): Promise<string[]> {
    if (resourceIds.length === 0) return [];
    const rows: Array<{ resource_id: string }> = await runner.query(
      `SELECT DISTINCT resource_id FROM webhook_inbox
        WHERE resource_id = ANY($1::text[]) AND provider = $2 AND ($3::text[] IS NULL OR merchant_account_id = ANY($3::text[]))`,
      [resourceIds, provider, accounts],
    );
    return rows.map((r) => r.resource_id);
  }

  /**
   * Reconciliation: which of `eventIds` the account's inbox holds. An event recorded by an endpoint
   * that does not serve the account (its key scoped to that endpoint) was never that account's.
   */
  async recordedEventIds(runner: Runner, { provider, merchantAccountId, eventIds }: { provider: string; merchantAccountId: string; eventIds: readonly string[] }): Promise<string[]> {
    if (eventIds.length === 0) return [];
    const rows: Array<{ event_id: string }> = await runner.query(
      `SELECT event_id FROM webhook_inbox WHERE provider = $1 AND merchant_account_id = $2 AND event_id = ANY($3) AND key_scope = ''`,
      [provider, merchantAccountId, eventIds],
    );
    return rows.map((r) => r.event_id);
  }

  /**
   * A backfill's page: how many of these events (by account and event id) were recorded by the
   * backfill itself (`source` backfill, with its user agent), rather than found recorded already.
   */
  async countRecordedByBackfill(
    runner: Runner,
    { provider, events, userAgent }: { provider: string; events: ReadonlyArray<{ merchantAccountId: string; eventId: string }>; userAgent: string },
  ): Promise<number> {
    if (events.length === 0) return 0;
    const [{ mine }]: Array<{ mine: number }> = await runner.query(
      `SELECT count(*)::int AS mine FROM webhook_inbox
        WHERE provider = $1 AND (merchant_account_id, event_id) IN (SELECT * FROM unnest($2::text[], $3::text[]))
          AND source = 'backfill' AND headers->>'user-agent' = $4`,
      [provider, events.map((e) => e.merchantAccountId), events.map((e) => e.eventId), userAgent],
    );
    return mine;
  }

  /** The inbox gauges, in one statement: deliveries not processed yet, and the age of the oldest (0 when none). */
  async gauges(runner: Runner): Promise<Record<InboxGauge, number>> {
    const [row]: Array<Record<InboxGauge, number>> = await runner.query(`
      SELECT (SELECT count(*) FROM webhook_inbox WHERE status = '${RECEIVED}')::int AS pw_inbox_backlog,
             COALESCE(EXTRACT(EPOCH FROM now() - (SELECT min(received_at) FROM webhook_inbox WHERE status = '${RECEIVED}')), 0)::float8
               AS pw_inbox_oldest_unprocessed_age_seconds`);
    return row;
  }

  /**
   * Opens deliveries again (to `received`), each only from a status the lifecycle lets move back
   * (REOPENABLE): the one statement a replay and a release share.
   */
  private async reopen(em: EntityManager, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await em.query(`UPDATE webhook_inbox SET ${REOPENED} WHERE id = ANY($1) AND status = ANY($2)`, [ids, REOPENABLE]);
  }
}
