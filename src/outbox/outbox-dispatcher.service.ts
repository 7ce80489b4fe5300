import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { retryDelayMs } from '../common/backoff';
import { codeOf } from '../common/domain-error';
import { ItemFailed, MicroBatcher } from '../common/micro-batcher';
import type { ResolvedOptions } from '../config/options';
import { PW_CONNECTION } from '../database/data-source';
import { flushWrites, runTransaction } from '../database/transaction';
import { MetricsService } from '../observability/metrics.service';
import { DispatchSpan, startDispatch } from '../observability/tracing';
import { PW_OPTIONS, PW_RECEIVE_PRESSURE } from '../config/tokens';
import type { ReceivePressure } from '../jobs/receive-pressure';
import { OutboxAttempt, OutboxHandlers } from './outbox-handler';
import { AttemptDecision, decideAttempt, HandlerOutcome } from './outbox.state';
import { AttemptRecord, ClaimedMessage, OutboxStore } from './outbox.store';

/** What the processor does with the message's job next. */
export type DispatchStep =
  | { done: true; outcome: 'dispatched' | 'dead' | 'nothing_to_do' }
  | { done: false; retryAt: Date; why: 'backoff' | 'not_due' | 'leased' | 'ordered' };

/** An attempt's end, to be recorded. */
interface Recording {
  attempt: OutboxAttempt;
  outcome: HandlerOutcome;
  maxAttempts: number;
  /** The attempt's span: what the handler's bookkeeping writes (an order.fulfilled event) is dispatched in its trace. */
  span?: DispatchSpan;
}

/** A recording with what it makes of the message: the attempt count, the decision, the delay to the next attempt. */
interface PlannedRecording extends Recording {
  attempts: number;
  decision: AttemptDecision;
  delayMs: number;
}

/** The handler's own bookkeeping of an attempt, in the transaction that records it. */
type Bookkeeping = (em: EntityManager, recording: PlannedRecording) => Promise<void>;

/** Another worker took the message over, or nothing is left to attempt (one object, compared by identity). */
const NOTHING_TO_DO: DispatchStep = Object.freeze({ done: true, outcome: 'nothing_to_do' });

function stepOf(decision: AttemptDecision, delayMs: number): DispatchStep {
  if (decision.status === 'dispatched') return { done: true, outcome: 'dispatched' };
  if (decision.status === 'dead') return { done: true, outcome: 'dead' };
  return { done: false, retryAt: new Date(Date.now() + delayMs), why: 'backoff' };
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
  private readonly claims: MicroBatcher<string, ClaimedMessage | undefined>;
  private readonly recordings: MicroBatcher<Recording, DispatchStep>;

  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly store: OutboxStore,
    private readonly handlers: OutboxHandlers,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    private readonly metrics: MetricsService,
    @Inject(PW_RECEIVE_PRESSURE) pressure: ReceivePressure,
  ) {
    const { processingBatchSize: maxBatch, processingBatchesInFlight } = options.tuning;
    // Ingest before drain, as the processing transactions: one claim and one recording at a time
    // while this process's receive path is behind (their batches grow instead).
    const maxInFlight = () => (pressure.behind ? 1 : processingBatchesInFlight);
    this.claims = new MicroBatcher((ids) => this.claimMany(ids), { maxBatch, maxInFlight });
    this.recordings = new MicroBatcher((recordings) => this.recordMany(recordings), { maxBatch, maxInFlight });
  }

  /** `trigger`: the `traceparent` of an operator's retry that asked for this attempt, when traced. */
  async dispatch(messageId: string, trigger?: string): Promise<DispatchStep> {
    const claimed = await this.claims.submit(messageId);
    if (!claimed) return this.whyNotClaimed(messageId);

    const attempt: OutboxAttempt = {
      id: claimed.id,
      type: claimed.type,
      payload: claimed.payload,
      idempotencyKey: claimed.idempotencyKey,
      attemptsBefore: claimed.attempts,
      previousCallAt: claimed.lastCallAt,
      traceContext: claimed.traceContext,
    };
    const handler = this.handlers.get(claimed.type);
    const span = startDispatch({ messageId: claimed.id, type: claimed.type, attempt: claimed.attempts + 1, traceContext: claimed.traceContext, trigger });
    let outcome: HandlerOutcome;
    if (!handler) {
      outcome = { kind: 'dead', reason: `no handler for the message type "${claimed.type}"` };
    } else {
      // The lease is short and renewed while this worker lives: one that dies loses it within a
      // lease, and another worker takes the message over (BullMQ's stalled-job check brings the job).
      const renewal = setInterval(() => void this.renewLease(claimed.id), Math.max(100, this.leaseMs() / 3));
      try {
        // The side effect's own calls (a carrier's, a sink's) carry the span's traceparent.
        outcome = await (span ? span.within(() => handler.handle(attempt)) : handler.handle(attempt));
      } catch (err) {
        outcome = { kind: 'retry', reason: `handler failed: ${(err as Error)?.message ?? String(err)}`, mayHaveHappened: true };
      } finally {
        clearInterval(renewal);
      }
    }
    // A reason is text from outside (an error's message, a carrier's code): made storable before it
    // is decided on, so that neither the message's row nor the handler's bookkeeping refuses it.
    if (outcome.kind !== 'done') outcome = { ...outcome, reason: storableText(outcome.reason, 2_000) };
    if (!span) return this.recordings.submit({ attempt, outcome, maxAttempts: handler?.maxAttempts ?? 1 });
    try {
      // Submitted in the span (and each recording's bookkeeping run in its own): what recording the
      // attempt writes, at once or at commit (an order.fulfilled event), is dispatched in its trace.
      const step = await span.within(() => this.recordings.submit({ attempt, outcome, maxAttempts: handler?.maxAttempts ?? 1, span }));
      // Another worker's message meanwhile (nothing_to_do) is no failure of this attempt.
      span.end(step.done ? step.outcome : 'retry', step.done ? step.outcome === 'dead' : true);
      return step;
    } catch (err) {
      span.end('not_recorded', true);
      throw err;
    }
  }

  /** Claims in one statement; two claims meeting on the same rows (a message enqueued twice) may deadlock: then each alone. */
  private async claimMany(ids: string[]): Promise<Array<ClaimedMessage | undefined>> {
    try {
      return await this.store.claim(ids, this.owner, this.leaseMs());
    } catch (err) {
      if (ids.length === 1) throw err;
      return Promise.all(ids.map(async (id) => (await this.store.claim([id], this.owner, this.leaseMs()))[0]));
    }
  }

  /** As long as a job's lock: a worker that died is replaced on the same schedule for both. */
  private leaseMs(): number {
    return this.options.tuning.jobLockMs;
  }

  private async renewLease(id: string): Promise<void> {
    await this.store
      .renewLease(id, this.owner, this.leaseMs())
      .catch((err: Error) => this.logger.warn(`lease of outbox message ${id} not renewed: ${err.message}`));
  }

  private async whyNotClaimed(id: string): Promise<DispatchStep> {
    const schedule = await this.store.claimSchedule(id);
    if (!schedule || schedule.status !== 'pending') return NOTHING_TO_DO;
    // Scheduling runs on the database's clock, the one the claim uses.
    const { nextAttemptAt, leaseUntil, now } = schedule;
    const offset = Date.now() - now.getTime();
    const local = (d: Date) => new Date(d.getTime() + offset);
    if (nextAttemptAt > now) return { done: false, retryAt: local(nextAttemptAt), why: 'not_due' };
    if (leaseUntil && leaseUntil >= now) return { done: false, retryAt: local(new Date(leaseUntil.getTime() + 50)), why: 'leased' };
    return { done: false, retryAt: new Date(Date.now() + ORDERED_RECHECK_MS), why: 'ordered' };
  }

  /**
   * Records attempts that ended at the same moment in one transaction. If any part fails, nothing
   * of it is kept, and each attempt is recorded on its own (where a failing one is recorded as
   * such), so none fails its batch-mates; one that cannot be recorded even alone fails its own call.
   */
  private async recordMany(recordings: Recording[]): Promise<Array<DispatchStep | ItemFailed>> {
    const alone = (r: Recording) => this.record(r.attempt, r.outcome, r.maxAttempts, r.span).catch((err: unknown) => new ItemFailed(err));
    if (recordings.length === 1) return [await alone(recordings[0])];
    try {
      return await this.recordTogether(recordings.map((r) => this.plan(r)), this.handlerBookkeeping);
    } catch (err) {
      this.logger.debug?.(`${recordings.length} attempts recorded one by one: ${(err as Error)?.message ?? String(err)}`);
      return Promise.all(recordings.map(alone));
    }
  }

  /**
   * Records one attempt. If its outcome cannot be recorded (the handler's own bookkeeping refuses
   * it: a value PostgreSQL cannot store, a host's in-transaction subscriber that throws), the
   * attempt is recorded all the same, as a retry whose effect may have happened, so the budget
   * still runs out: with the handler's bookkeeping of that retry (the dead letter's fulfillment
   * `failed`), and should even that fail, without it.
   */
  private async record(attempt: OutboxAttempt, outcome: HandlerOutcome, maxAttempts: number, span?: DispatchSpan): Promise<DispatchStep> {
    const recordAlone = async (o: HandlerOutcome, bookkeeping: Bookkeeping) =>
      (await this.recordTogether([this.plan({ attempt, outcome: o, maxAttempts, span })], bookkeeping))[0];
    try {
      return await recordAlone(outcome, this.handlerBookkeeping);
    } catch (err) {
      const reason = `the outcome could not be recorded (${codeOf(err, 'error')}): ${(err as Error)?.message ?? String(err)}`;
      const fallback: HandlerOutcome = { kind: 'retry', reason: storableText(reason, 500), mayHaveHappened: true };
      this.logger.warn(`outbox message ${attempt.id}: ${fallback.reason}`);
      try {
        return await recordAlone(fallback, this.handlerBookkeeping);
      } catch (again) {
        this.logger.warn(`outbox message ${attempt.id}: the attempt recorded without its handler's share (${codeOf(again, 'error')})`);
        return recordAlone(fallback, async () => undefined);
      }
    }
  }

  private readonly handlerBookkeeping: Bookkeeping = async (em, r) => {
    await this.handlers.get(r.attempt.type)?.recorded?.(em, r.attempt, r.outcome, r.decision);
  };

  /**
   * What an attempt makes of its message. The lease kept everyone else off it since the claim, so
   * the attempt count read then still holds.
   */
  private plan(recording: Recording): PlannedRecording {
    const { carrierBackoffBaseMs, carrierBackoffCapMs } = this.options.tuning;
    const attempts = recording.attempt.attemptsBefore + 1;
    const decision = decideAttempt(recording.outcome, attempts, recording.maxAttempts);
    const delayMs = decision.status === 'pending' ? retryDelayMs(attempts, carrierBackoffBaseMs, carrierBackoffCapMs, decision.retryAfterMs) : 0;
    return { ...recording, attempts, decision, delayMs };
  }

  /**
   * One transaction: one guarded write of every message (only while this worker holds its lease),
   * and the bookkeeping of each one written, in order. An attempt is counted once it is recorded.
   *
   * The write is deferred (`deferWrites`), so it shares one statement with the bookkeeping's own
   * writes (the fulfillment's move): the bookkeeping runs before the guard has answered. A message
   * whose lease lapsed meanwhile (another worker took it over) undoes it all, and the transaction
   * runs again the guarded way: the write first, then the bookkeeping of only those it wrote.
   */
  private async recordTogether(planned: PlannedRecording[], bookkeeping: Bookkeeping): Promise<DispatchStep[]> {
    const inOneTransaction = (guarded: boolean) =>
      runTransaction(this.dataSource, async (em) => {
        let written = new Set<string>();
        await this.store.recordAttempts(em, this.owner, planned.map(attemptRecord), (ids) => {
          if (!guarded && ids.size < planned.length) throw new LeaseLapsed();
          written = ids;
        });
        // Guarded: the write answers first, and only what it wrote gets its bookkeeping.
        if (guarded) await flushWrites(em);
        const out: DispatchStep[] = [];
        for (const p of planned) {
          if (guarded && !written.has(p.attempt.id)) {
            out.push(NOTHING_TO_DO);
            continue;
          }
          await (p.span ? p.span.within(() => bookkeeping(em, p)) : bookkeeping(em, p));
          out.push(stepOf(p.decision, p.delayMs));
        }
        return out;
      });
    let steps: DispatchStep[];
    try {
      steps = await inOneTransaction(false);
    } catch (err) {
      if (!(err instanceof LeaseLapsed)) throw err;
      steps = await inOneTransaction(true);
    }
    planned.forEach((p, i) => {
      if (steps[i] !== NOTHING_TO_DO) this.counted(p.attempt, p.decision);
    });
    return steps;
  }

  private counted(attempt: OutboxAttempt, decision: AttemptDecision): void {
    // Counted by what the attempt came to (the one that spends the budget counts as dead).
    this.metrics.outboxAttempts.labels(attempt.type, decision.status === 'dispatched' ? 'done' : decision.status === 'dead' ? 'dead' : 'retry').inc();
    if (decision.status === 'dead') this.logger.warn(`outbox message ${attempt.id} (${attempt.type}) is dead: ${decision.reason}`);
  }
}

/** A recorded message's lease had lapsed: the optimistic recording is undone, and done again the guarded way. */
class LeaseLapsed extends Error {
  constructor() {
    super('an outbox message was no longer leased to this worker');
  }
}

function attemptRecord(p: PlannedRecording): AttemptRecord {
  const { decision } = p;
  return {
    id: p.attempt.id,
    status: decision.status,
    attempts: p.attempts,
    lastError: decision.status === 'dispatched' ? null : storableText(decision.reason, 1_000),
    delayMs: p.delayMs,
    keepCallTrace: decision.status !== 'dispatched' && decision.keepCallTrace,
  };
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
