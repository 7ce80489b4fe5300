import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { DomainError } from '../common/domain-error';
import { canMove, IllegalMove } from '../common/lifecycle';
import { keysetQuery, Page, PageQuery, toPage } from '../common/pagination';
import { PW_CONNECTION } from '../database/data-source';
import { rowsReturned } from '../database/returning';
import { idsOfRows } from '../database/bulk-sql';
import { deferWrites } from '../database/transaction';
import { MetricsService } from '../observability/metrics.service';
import { OUTBOX_CHANNEL_SQL } from './outbox-channel';
import { canRetry, OUTBOX_LIFECYCLE, OutboxStatus } from './outbox.state';

/** A message to write, its id already made (time-ordered: messages are written in id order). */
export interface MessageToWrite {
  id: string;
  type: string;
  payload: Record<string, unknown>;
  idempotencyKey: string;
  orderingKey?: string;
  /** The `traceparent` of the span that wrote it (a delivery's processing, an operator's action). */
  traceContext?: string | null;
}

/** A message this worker has just claimed, with the call trace an earlier attempt left. */
export interface ClaimedMessage {
  id: string;
  type: string;
  payload: Record<string, unknown>;
  attempts: number;
  idempotencyKey: string;
  lastCallAt: Date | null;
  /** The `traceparent` of the span that wrote it, which its dispatch spans belong to; null when none traced it. */
  traceContext: string | null;
}

/** What decides when a message may be claimed, on the database's clock (`now`). */
export interface ClaimSchedule {
  status: OutboxStatus;
  nextAttemptAt: Date;
  leaseUntil: Date | null;
  now: Date;
}

/** How one attempt leaves its message. */
export interface AttemptRecord {
  id: string;
  status: OutboxStatus;
  attempts: number;
  /** Storable text (see storableText), or null for a dispatched message. */
  lastError: string | null;
  /** From now until the next attempt, for a message left pending. */
  delayMs: number;
  /** Keep `last_call_at`: the call got no clear answer, so its effect may exist. */
  keepCallTrace: boolean;
}

/** A message as the operator's list shows it. */
export interface OutboxListItem {
  id: string;
  type: string;
  idempotencyKey: string;
  status: OutboxStatus;
  attempts: number;
  lastError: string | null;
  createdAt: Date;
  dispatchedAt: Date | null;
}

/** Where every message starts; checked against the lifecycle when the module loads. */
const WRITTEN_STATUS: OutboxStatus = 'pending';
if (!OUTBOX_LIFECYCLE.initial.includes(WRITTEN_STATUS)) throw new Error(`an outbox message cannot start ${WRITTEN_STATUS}`);

/** The only messages retention deletes: pending and dead ones still have something to do. */
const PURGED_STATUS: OutboxStatus = 'dispatched';

/**
 * The one owner of table outbox_message: every statement on it is here, each as one use of the
 * outbox (write, claim, record, sweep, retry, list, purge, count). Statuses written are ones the
 * lifecycle (outbox.state.ts) allows from the status the statement guards.
 */
@Injectable()
export class OutboxStore implements OnModuleInit {
  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly metrics: MetricsService,
  ) {}

  onModuleInit(): void {
    this.metrics.readFromDatabase(
      { pw_outbox_backlog: 'Outbox messages pending', pw_outbox_dead: 'Outbox messages dead (need an operator)' },
      async () => {
        const { pending, dead } = await this.backlog();
        return { pw_outbox_backlog: pending, pw_outbox_dead: dead };
      },
    );
  }

  /**
   * Writes messages in the caller's transaction, in one statement, in id order, deferred to run
   * with the transaction's other writes (`deferWrites`); a message whose idempotency key exists
   * already is not written. Unless `notify` is false (the writer's process hands them to its own
   * dispatcher once committed), the same statement announces each one written (pg_notify), which
   * PostgreSQL delivers only if the transaction commits. `then` gets the ids written.
   */
  async write(em: EntityManager, messages: readonly MessageToWrite[], { notify = true } = {}, then: (written: string[]) => unknown): Promise<void> {
    await deferWrites(em, [
      {
        key: 'outbox_message',
        sql: `INSERT INTO outbox_message (id, type, payload, idempotency_key, ordering_key, trace_context, status, attempts, next_attempt_at, created_at)
              SELECT r.id, r.type, r.payload, r.idempotency_key, r.ordering_key, r.trace_context, '${WRITTEN_STATUS}', 0, now(), now()
                FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, type text, payload jsonb, idempotency_key text, ordering_key text, trace_context text)
               ORDER BY r.id
              ON CONFLICT (idempotency_key) DO NOTHING
              RETURNING id${notify ? `, pg_notify(${OUTBOX_CHANNEL_SQL}, id::text) AS announced` : ''}`,
        params: [
          JSON.stringify(
            messages.map((m) => ({
              id: m.id,
              type: m.type,
              payload: m.payload,
              idempotency_key: m.idempotencyKey,
              ordering_key: m.orderingKey ?? null,
              trace_context: m.traceContext ?? null,
            })),
          ),
        ],
        then: (rows) => then(rows.map((r) => r.id as string)),
      },
    ]);
  }

  /**
   * Leases the messages that may be attempted now to `owner`, in one statement: pending, due, not
   * leased by a live worker, and not behind an earlier message of its ordering key still at its
   * first attempt. The claim leaves the trace that a call begins and returns the one an earlier
   * attempt left. One result per id, in order; undefined for a message not claimed.
   */
  async claim(ids: readonly string[], owner: string, leaseMs: number): Promise<Array<ClaimedMessage | undefined>> {
    const rows = await rowsReturned<ClaimedMessage>(
      this.dataSource,
      `UPDATE outbox_message m
          SET lease_owner = $2, lease_until = now() + make_interval(secs => $3::double precision / 1000), last_call_at = now()
         FROM (SELECT id, last_call_at AS previous FROM outbox_message WHERE id = ANY($1::uuid[]) ORDER BY id) p
        WHERE m.id = p.id AND m.status = 'pending' AND m.next_attempt_at <= now()
          AND (m.lease_until IS NULL OR m.lease_until < now())
          AND (m.ordering_key IS NULL OR NOT EXISTS (
                SELECT 1 FROM outbox_message e
                 WHERE e.ordering_key = m.ordering_key AND e.status = 'pending' AND e.attempts = 0 AND e.id < m.id))
      RETURNING m.id, m.type, m.payload, m.attempts, m.idempotency_key AS "idempotencyKey", p.previous AS "lastCallAt",
                m.trace_context AS "traceContext"`,
      [ids, owner, leaseMs],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.map((id) => byId.get(id));
  }

  /** Extends `owner`'s lease on a message it is still attempting. */
  async renewLease(id: string, owner: string, leaseMs: number): Promise<void> {
    await this.dataSource.query(
      `UPDATE outbox_message SET lease_until = now() + make_interval(secs => $3::double precision / 1000)
        WHERE id = $1 AND lease_owner = $2 AND status = 'pending'`,
      [id, owner, leaseMs],
    );
  }

  /** Why a message was not claimed: its status, when it is due, its lease; undefined when there is no such message. */
  async claimSchedule(id: string): Promise<ClaimSchedule | undefined> {
    const [row]: ClaimSchedule[] = await this.dataSource.query(
      `SELECT status, next_attempt_at AS "nextAttemptAt", lease_until AS "leaseUntil", now() AS now FROM outbox_message WHERE id = $1`,
      [id],
    );
    return row;
  }

  /**
   * Records attempts in the caller's transaction, in one statement: each message is written only
   * if it is still pending and leased to `owner` (a lease that lapsed may have been taken over:
   * the other worker records then). Deferred to run with the transaction's other writes
   * (`deferWrites`); `then` gets the ids written.
   */
  async recordAttempts(em: EntityManager, owner: string, records: readonly AttemptRecord[], then: (written: Set<string>) => unknown): Promise<void> {
    for (const r of records) if (!canMove(OUTBOX_LIFECYCLE, 'pending', r.status)) throw new IllegalMove(OUTBOX_LIFECYCLE, 'pending', r.status);
    await deferWrites(em, [
      {
        // Rows that exist (and are leased): never those a writer inserts.
        key: 'outbox_message: leased',
        sql: `UPDATE outbox_message m
          SET status = r.status, attempts = r.attempts, last_error = r.last_error, lease_owner = NULL, lease_until = NULL,
              dispatched_at = CASE WHEN r.status = 'dispatched' THEN now() ELSE m.dispatched_at END,
              next_attempt_at = CASE WHEN r.status = 'pending' THEN now() + make_interval(secs => r.delay_ms / 1000) ELSE m.next_attempt_at END,
              last_call_at = CASE WHEN r.keep_call_trace THEN m.last_call_at ELSE NULL END
         FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, status text, attempts int, last_error text, delay_ms double precision, keep_call_trace boolean)
        WHERE m.id = r.id AND m.id = ${idsOfRows('$1::jsonb')} AND m.status = 'pending' AND m.lease_owner = $2
      RETURNING m.id`,
        params: [
        JSON.stringify(
          records.map((r) => ({
            id: r.id,
            status: r.status,
            attempts: r.attempts,
            last_error: r.lastError,
            delay_ms: r.delayMs,
            keep_call_trace: r.keepCallTrace,
          })),
        ),
          owner,
        ],
        then: (rows) => then(new Set(rows.map((r) => r.id as string))),
      },
    ]);
  }

  /**
   * The relay's sweep: in one transaction, takes up to `limit` messages still pending `afterMs`
   * after they were due and not leased (`FOR UPDATE SKIP LOCKED`: relays of other processes take
   * others), and hands their ids to `enqueue` while they are held. Returns what `enqueue` answers.
   */
  async sweepDue(afterMs: number, limit: number, enqueue: (ids: string[]) => Promise<number>): Promise<number> {
    return this.dataSource.transaction(async (em) => {
      const rows: Array<{ id: string }> = await em.query(
        `SELECT id FROM outbox_message
          WHERE status = 'pending' AND next_attempt_at <= now() - make_interval(secs => $1::double precision / 1000)
            AND (lease_until IS NULL OR lease_until < now())
          ORDER BY next_attempt_at
          LIMIT $2
          FOR UPDATE SKIP LOCKED`,
        [afterMs, limit],
      );
      if (rows.length === 0) return 0;
      return enqueue(rows.map((r) => r.id));
    });
  }

  /**
   * An operator's retry, in the caller's transaction: the message (locked) goes back to pending,
   * due now, with a fresh attempt budget. Only a dead one may (OUTBOX.ILLEGAL_TRANSITION otherwise).
   * Returns what its handler needs to follow.
   */
  async retry(em: EntityManager, id: string): Promise<{ type: string; payload: Record<string, unknown> }> {
    const [message]: Array<{ status: OutboxStatus; type: string; payload: Record<string, unknown> }> = await em.query(
      `SELECT status, type, payload FROM outbox_message WHERE id = $1 FOR UPDATE`,
      [id],
    );
    if (!message) throw new DomainError('OUTBOX.NOT_FOUND', 'no such message');
    if (!canRetry(message.status)) {
      throw new DomainError('OUTBOX.ILLEGAL_TRANSITION', 'refused', `a ${message.status} message cannot be retried; only a dead one`);
    }
    await em.query(
      `UPDATE outbox_message SET status = 'pending', attempts = 0, next_attempt_at = now(), lease_owner = NULL, lease_until = NULL
        WHERE id = $1`,
      [id],
    );
    return { type: message.type, payload: message.payload };
  }

  /**
   * The message of an idempotency key, locked in the caller's transaction: the lock a dispatch's
   * claim also takes (its UPDATE), so what the caller decides from it cannot cross a claim. `begun`:
   * an attempt holds it now, or one began a call that may have happened, or it is dispatched.
   */
  async lockByKey(em: EntityManager, idempotencyKey: string): Promise<{ id: string; status: OutboxStatus; begun: boolean } | undefined> {
    const [row]: Array<{ id: string; status: OutboxStatus; begun: boolean }> = await em.query(
      `SELECT id, status,
              (status = 'dispatched' OR last_call_at IS NOT NULL OR (lease_until IS NOT NULL AND lease_until >= now())) AS begun
         FROM outbox_message WHERE idempotency_key = $1 FOR UPDATE`,
      [idempotencyKey],
    );
    return row;
  }

  /**
   * Gives up a pending message before any attempt began (what it was for was called off), in the
   * caller's transaction: `dead` with the reason, never attempted again unless an operator retries it.
   */
  async giveUp(em: EntityManager, id: string, reason: string): Promise<boolean> {
    if (!canMove(OUTBOX_LIFECYCLE, 'pending', 'dead')) throw new IllegalMove(OUTBOX_LIFECYCLE, 'pending', 'dead');
    const rows: unknown[] = await em.query(
      `UPDATE outbox_message SET status = 'dead', last_error = $2, lease_owner = NULL, lease_until = NULL
        WHERE id = $1 AND status = 'pending' RETURNING id`,
      [id, reason],
    );
    return rows.length > 0;
  }

  /** The operator's list: newest first, by status if asked, one keyset page. */
  async list(query: PageQuery & { status?: string }): Promise<Page<OutboxListItem>> {
    const { text, params, limit } = keysetQuery(
      `SELECT id, type, idempotency_key AS "idempotencyKey", status, attempts, last_error AS "lastError",
              created_at AS "createdAt", dispatched_at AS "dispatchedAt"
         FROM outbox_message`,
      [['status = ?', query.status]],
      query,
    );
    const rows: OutboxListItem[] = await this.dataSource.query(text, params);
    return toPage(rows, limit, (r) => r);
  }

  /**
   * Deletes dispatched messages created more than `days` days ago, `batchSize` at a time, each
   * batch a statement committed on its own (no long lock). Returns how many it deleted.
   */
  async purgeDispatched(days: number, batchSize: number): Promise<number> {
    let total = 0;
    for (;;) {
      const [{ n }]: Array<{ n: number }> = await this.dataSource.query(
        `WITH d AS (
           DELETE FROM outbox_message WHERE id IN (
             SELECT id FROM outbox_message
              WHERE status = '${PURGED_STATUS}' AND created_at < now() - make_interval(days => $1)
              LIMIT $2)
           RETURNING 1)
         SELECT count(*)::int AS n FROM d`,
        [days, batchSize],
      );
      total += n;
      if (n < batchSize) return total;
    }
  }

  /** Messages pending and dead, in one statement. */
  async backlog(): Promise<{ pending: number; dead: number }> {
    const [row]: Array<{ pending: number; dead: number }> = await this.dataSource.query(
      `SELECT (SELECT count(*) FROM outbox_message WHERE status = 'pending')::int AS pending,
              (SELECT count(*) FROM outbox_message WHERE status = 'dead')::int AS dead`,
    );
    return row;
  }
}
