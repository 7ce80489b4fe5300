import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { retryDelayMs } from '../common/backoff';
import { MicroBatcher } from '../common/micro-batcher';
import type { ResolvedOptions } from '../config/options';
import { PW_CONNECTION } from '../database/data-source';
import { rowsReturned } from '../database/returning';
import { runTransaction } from '../database/transaction';
import { MetricsService } from '../observability/metrics.service';
import { PW_OPTIONS } from '../config/tokens';
import { OutboxAttempt, OutboxHandlers } from './outbox-handler';
import { AttemptDecision, decideAttempt, HandlerOutcome } from './outbox.state';

/** What the processor does with the message's job next. */
export type DispatchStep =
  | { done: true; outcome: 'dispatched' | 'dead' | 'nothing_to_do' }
  | { done: false; retryAt: Date; why: 'backoff' | 'not_due' | 'leased' | 'ordered' };

interface ClaimedRow {
  id: string;
  type: string;
  payload: Record<string, unknown>;
  attempts: number;
  idempotencyKey: string;
  lastCallAt: Date | null;
}

/** An attempt's end, to be recorded. */
interface Recording {
  attempt: OutboxAttempt;
  outcome: HandlerOutcome;
  maxAttempts: number;
}

/** What could not be recorded even on its own: thrown to the queue by `dispatch`. */
class Failed {
  constructor(readonly error: unknown) {}
}

function stepOf(decision: AttemptDecision, delay: number): DispatchStep {
  if (decision.status === 'dispatched') return { done: true, outcome: 'dispatched' };
  if (decision.status === 'dead') return { done: true, outcome: 'dead' };
  return { done: false, retryAt: new Date(Date.now() + delay), why: 'backoff' };
}

/** How soon a message waiting for an earlier one of its ordering key looks again. */
const ORDERED_RECHECK_MS = 100;

/**
 * Delivers one outbox message, whatever its type: claims it (a lease, checked on every write),
 * hands it to its type's handler for the one side effect, and records what happened in one
 * transaction: attempts, backoff with jitter, the attempt budget, the dead letter with its reason.
 */
@Injectable()
export class OutboxDispatcher {
  private readonly logger = new Logger('OutboxDispatcher');
  /** This process, as a lease owner. */
  readonly owner = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

  /** Claims and recordings of attempts made at the same moment share a statement (and a commit). */
  private readonly claims: MicroBatcher<string, ClaimedRow | undefined>;
  private readonly records: MicroBatcher<Recording, DispatchStep | Failed>;

  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly handlers: OutboxHandlers,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    private readonly metrics: MetricsService,
  ) {
    const { processingBatchSize: maxBatch, processingBatchesInFlight: maxInFlight } = options.tuning;
    this.claims = new MicroBatcher((ids) => this.claimMany(ids), { maxBatch, maxInFlight });
    this.records = new MicroBatcher((recordings) => this.recordMany(recordings), { maxBatch, maxInFlight });
  }

  async dispatch(messageId: string): Promise<DispatchStep> {
    const claimed = await this.claims.submit(messageId);
    if (!claimed) return this.whyNotClaimed(messageId);

    const attempt: OutboxAttempt = {
      id: claimed.id,
      type: claimed.type,
      payload: claimed.payload,
      idempotencyKey: claimed.idempotencyKey,
      attemptsBefore: claimed.attempts,
      previousCallAt: claimed.lastCallAt,
    };
    const handler = this.handlers.get(claimed.type);
    let outcome: HandlerOutcome;
    if (!handler) {
      outcome = { kind: 'dead', reason: `no handler for the message type "${claimed.type}"` };
    } else {
      // The lease is short and renewed while this worker lives: one that dies loses it within a
      // lease, and another worker takes the message over (BullMQ's stalled-job check brings the job).
      const renewal = setInterval(() => void this.renewLease(claimed.id), Math.max(100, this.leaseMs() / 3));
      try {
        outcome = await handler.handle(attempt);
      } catch (err) {
        outcome = { kind: 'retry', reason: `handler failed: ${(err as Error)?.message ?? String(err)}`, mayHaveHappened: true };
      } finally {
        clearInterval(renewal);
      }
    }
    // A reason is text from outside (an error's message, a carrier's code): made storable before it
    // is decided on, so that neither the message's row nor the handler's share refuses it.
    if (outcome.kind !== 'done') outcome = { ...outcome, reason: storableText(outcome.reason, 2_000) };
    const step = await this.records.submit({ attempt, outcome, maxAttempts: handler?.maxAttempts ?? 1 });
    if (step instanceof Failed) throw step.error;
    return step;
  }

  /**
   * Takes the message for this worker: pending, due, not leased by a live worker, and not behind an
   * earlier message of its ordering key still at its first attempt. One statement decides, and
   * leaves the trace that an attempt (a call) begins, returning the one an earlier attempt left.
   */
  private async claimMany(ids: string[]): Promise<Array<ClaimedRow | undefined>> {
    try {
      return await this.claimAll(ids);
    } catch (err) {
      // Two claims meeting on the same rows (a message enqueued twice) may deadlock: claim alone.
      if (ids.length === 1) throw err;
      return Promise.all(ids.map(async (id) => (await this.claimAll([id]))[0]));
    }
  }

  private async claimAll(ids: string[]): Promise<Array<ClaimedRow | undefined>> {
    const rows = await rowsReturned<ClaimedRow>(
      this.dataSource,
      `UPDATE outbox_message m
          SET lease_owner = $2, lease_until = now() + make_interval(secs => $3::double precision / 1000), last_call_at = now()
         FROM (SELECT id, last_call_at AS previous FROM outbox_message WHERE id = ANY($1::uuid[]) ORDER BY id) p
        WHERE m.id = p.id AND m.status = 'pending' AND m.next_attempt_at <= now()
          AND (m.lease_until IS NULL OR m.lease_until < now())
          AND (m.ordering_key IS NULL OR NOT EXISTS (
                SELECT 1 FROM outbox_message e
                 WHERE e.ordering_key = m.ordering_key AND e.status = 'pending' AND e.attempts = 0 AND e.id < m.id))
      RETURNING m.id, m.type, m.payload, m.attempts, m.idempotency_key AS "idempotencyKey", p.previous AS "lastCallAt"`,
      [ids, this.owner, this.leaseMs()],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.map((id) => byId.get(id));
  }

  /** As long as a job's lock: a worker that died is replaced on the same schedule for both. */
  private leaseMs(): number {
    return this.options.tuning.jobLockMs;
  }

  private async renewLease(id: string): Promise<void> {
    await this.dataSource
      .query(
        `UPDATE outbox_message SET lease_until = now() + make_interval(secs => $3::double precision / 1000)
          WHERE id = $1 AND lease_owner = $2 AND status = 'pending'`,
        [id, this.owner, this.leaseMs()],
      )
      .catch((err: Error) => this.logger.warn(`lease of outbox message ${id} not renewed: ${err.message}`));
  }

  private async whyNotClaimed(id: string): Promise<DispatchStep> {
    const [row]: Array<{ status: string; nextAttemptAt: Date; leaseUntil: Date | null; now: Date }> = await this.dataSource.query(
      `SELECT status, next_attempt_at AS "nextAttemptAt", lease_until AS "leaseUntil", now() AS now FROM outbox_message WHERE id = $1`,
      [id],
    );
    if (!row || row.status !== 'pending') return { done: true, outcome: 'nothing_to_do' };
    // Scheduling runs on the database's clock, the one the claim uses.
    const offset = Date.now() - row.now.getTime();
    const at = (d: Date) => new Date(d.getTime() + offset);
    if (row.nextAttemptAt > row.now) return { done: false, retryAt: at(row.nextAttemptAt), why: 'not_due' };
    if (row.leaseUntil && row.leaseUntil >= row.now) return { done: false, retryAt: at(new Date(row.leaseUntil.getTime() + 50)), why: 'leased' };
    return { done: false, retryAt: new Date(Date.now() + ORDERED_RECHECK_MS), why: 'ordered' };
  }

  /**
   * Records attempts that ended at the same moment in one transaction: one guarded write of their
   * messages, then each handler's share. If any part fails, nothing of it is kept, and each attempt
   * is recorded on its own (where a failing one is recorded as such), so none fails its batch-mates.
   */
  private async recordMany(recordings: Recording[]): Promise<Array<DispatchStep | Failed>> {
    const alone = (r: Recording) => this.record(r.attempt, r.outcome, r.maxAttempts).catch((err: unknown) => new Failed(err));
    if (recordings.length === 1) return [await alone(recordings[0])];
    const { carrierBackoffBaseMs, carrierBackoffCapMs } = this.options.tuning;
    const planned = recordings.map((r) => {
      const attempts = r.attempt.attemptsBefore + 1;
      const decision = decideAttempt(r.outcome, attempts, r.maxAttempts);
      const delay = decision.status === 'pending' ? retryDelayMs(attempts, carrierBackoffBaseMs, carrierBackoffCapMs, decision.retryAfterMs) : 0;
      return { ...r, attempts, decision, delay };
    });
    let steps: DispatchStep[];
    try {
      steps = await runTransaction(this.dataSource, async (em) => {
        const written = await rowsReturned<{ id: string }>(
          em,
          `UPDATE outbox_message m
              SET status = r.status, attempts = r.attempts, last_error = r.reason, lease_owner = NULL, lease_until = NULL,
                  dispatched_at = CASE WHEN r.status = 'dispatched' THEN now() ELSE m.dispatched_at END,
                  next_attempt_at = CASE WHEN r.status = 'pending' THEN now() + make_interval(secs => r.delay / 1000) ELSE m.next_attempt_at END,
                  last_call_at = CASE WHEN r.keep THEN m.last_call_at ELSE NULL END
             FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, status text, attempts int, reason text, delay double precision, keep boolean)
            WHERE m.id = r.id AND m.status = 'pending' AND m.lease_owner = $2
          RETURNING m.id`,
          [
            JSON.stringify(
              planned.map((p) => ({
                id: p.attempt.id,
                status: p.decision.status,
                attempts: p.attempts,
                reason: p.decision.status === 'dispatched' ? null : storableText(p.decision.reason, 1_000),
                delay: p.delay,
                keep: p.decision.status !== 'dispatched' && p.decision.keepCallTrace,
              })),
            ),
            this.owner,
          ],
        );
        const kept = new Set(written.map((w) => w.id));
        const out: DispatchStep[] = [];
        for (const p of planned) {
          if (!kept.has(p.attempt.id)) {
            out.push({ done: true, outcome: 'nothing_to_do' });
            continue;
          }
          await this.handlers.get(p.attempt.type)?.recorded?.(em, p.attempt, p.outcome, p.decision);
          out.push(stepOf(p.decision, p.delay));
        }
        return out;
      });
    } catch (err) {
      this.logger.debug?.(`${recordings.length} attempts recorded one by one: ${(err as Error)?.message ?? String(err)}`);
      return Promise.all(recordings.map(alone));
    }
    planned.forEach((p, i) => {
      if (steps[i].done && (steps[i] as { outcome: string }).outcome === 'nothing_to_do') return;
      this.counted(p.attempt, p.decision);
    });
    return steps;
  }

  private counted(attempt: OutboxAttempt, decision: AttemptDecision): void {
    // Counted by what the attempt came to (the one that spends the budget counts as dead), once it is recorded.
    this.metrics.outboxAttempts.labels(attempt.type, decision.status === 'dispatched' ? 'done' : decision.status === 'dead' ? 'dead' : 'retry').inc();
    if (decision.status === 'dead') this.logger.warn(`outbox message ${attempt.id} (${attempt.type}) is dead: ${decision.reason}`);
  }

  /**
   * Records the attempt under the message's row lock, if this worker still holds its lease (one
   * that lapsed may have been taken over: then the other worker records). If the outcome cannot be
   * recorded (the handler's own bookkeeping refuses it: a value PostgreSQL cannot store, a host's
   * in-transaction subscriber that throws), the attempt is recorded all the same, as a retry whose
   * effect may have happened, so the budget still runs out: in a transaction of its own whose
   * values are all this module's (the reason made storable), with the handler's share for that
   * retry (the dead letter's fulfillment `failed`); and should even that share fail, without it.
   */
  private async record(attempt: OutboxAttempt, outcome: HandlerOutcome, maxAttempts: number): Promise<DispatchStep> {
    const handler = this.handlers.get(attempt.type);
    const share = (o: HandlerOutcome) => async (em: EntityManager, decision: AttemptDecision) => {
      await handler?.recorded?.(em, attempt, o, decision);
    };
    try {
      return await this.recordOutcome(attempt, outcome, maxAttempts, share(outcome));
    } catch (err) {
      const reason = `the outcome could not be recorded (${errorCode(err)}): ${(err as Error)?.message ?? String(err)}`;
      const fallback: HandlerOutcome = { kind: 'retry', reason: storableText(reason, 500), mayHaveHappened: true };
      this.logger.warn(`outbox message ${attempt.id}: ${fallback.reason}`);
      try {
        return await this.recordOutcome(attempt, fallback, maxAttempts, share(fallback));
      } catch (again) {
        this.logger.warn(`outbox message ${attempt.id}: the attempt recorded without its handler's share (${errorCode(again)})`);
        return this.recordOutcome(attempt, fallback, maxAttempts, async () => undefined);
      }
    }
  }

  private async recordOutcome(
    attempt: OutboxAttempt,
    outcome: HandlerOutcome,
    maxAttempts: number,
    bookkeeping: (em: EntityManager, decision: AttemptDecision) => Promise<void>,
  ): Promise<DispatchStep> {
    // The lease kept everyone else off the message since the claim, so the attempt count read then
    // still holds; each write below also checks the lease, in case it lapsed and was taken over.
    const attempts = attempt.attemptsBefore + 1;
    const decision = decideAttempt(outcome, attempts, maxAttempts);
    const { carrierBackoffBaseMs, carrierBackoffCapMs } = this.options.tuning;
    const delay = decision.status === 'pending' ? retryDelayMs(attempts, carrierBackoffBaseMs, carrierBackoffCapMs, decision.retryAfterMs) : 0;
    const step = await runTransaction(this.dataSource, async (em): Promise<DispatchStep> => {
      const written = await rowsReturned<{ id: string }>(
        em,
        `UPDATE outbox_message
            SET status = $3, attempts = $4, last_error = $5, lease_owner = NULL, lease_until = NULL,
                dispatched_at = CASE WHEN $3 = 'dispatched' THEN now() ELSE dispatched_at END,
                next_attempt_at = CASE WHEN $3 = 'pending' THEN now() + make_interval(secs => $6::double precision / 1000) ELSE next_attempt_at END,
                last_call_at = CASE WHEN $7 THEN last_call_at ELSE NULL END
          WHERE id = $1 AND status = 'pending' AND lease_owner = $2
          RETURNING id`,
        [
          attempt.id,
          this.owner,
          decision.status,
          attempts,
          decision.status === 'dispatched' ? null : storableText(decision.reason, 1_000),
          delay,
          decision.status !== 'dispatched' && decision.keepCallTrace,
        ],
      );
      if (written.length === 0) return { done: true, outcome: 'nothing_to_do' };
      await bookkeeping(em, decision);
      return stepOf(decision, delay);
    });
    if (step.done && step.outcome === 'nothing_to_do') return step;
    this.counted(attempt, decision);
    return step;
  }
}

/** A PostgreSQL error's SQLSTATE, or `error`; only a code of the expected shape is repeated. */
function errorCode(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && /^[0-9A-Z_]{1,32}$/.test(code) ? code : 'error';
}

/**
 * Text that PostgreSQL stores and a terminal shows as text, whatever a handler or an error put in
 * it: control characters (NUL above all, which `text` refuses) become spaces, lone surrogates
 * U+FFFD, and it is cut to `max` characters without splitting a pair.
 */
export function storableText(text: string, max: number): string {
  let out = text.replace(/[\p{Cc}]/gu, ' ').replace(/\p{Cs}/gu, '\uFFFD');
  if (out.length > max) {
    out = out.slice(0, max);
    // A high surrogate left at the end lost its pair.
    if (/[\uD800-\uDBFF]$/.test(out)) out = out.slice(0, -1);
  }
  return out;
}
