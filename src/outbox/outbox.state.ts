import { canMove, defineLifecycle } from '../common/lifecycle';

/**
 * The outbox message lifecycle (docs/design.md, "The outbox, events and fulfillment"), as data. A
 * message is written `pending` in the business transaction; each attempt at its side effect ends in
 * one of the handler outcomes below, and this table says where the message goes.
 */
export const OUTBOX_STATUSES = ['pending', 'dispatched', 'dead'] as const;
export type OutboxStatus = (typeof OUTBOX_STATUSES)[number];

export const OUTBOX_LIFECYCLE = defineLifecycle<OutboxStatus>({
  name: 'outbox message',
  statuses: OUTBOX_STATUSES,
  initial: ['pending'],
  moves: {
    // Another attempt (pending → pending), done, or given up.
    pending: ['pending', 'dispatched', 'dead'],
    dispatched: [],
    // An operator's retry, with a fresh attempt budget.
    dead: ['pending'],
  },
});
export const OUTBOX_TRANSITIONS = OUTBOX_LIFECYCLE.moves;

/** What one attempt at a message's side effect came to, as its handler says. */
export type HandlerOutcome =
  /** Done: the other side has it (`result`: what it answered, for the handler's own bookkeeping). */
  | { kind: 'done'; result?: Record<string, unknown> }
  /**
   * Not now, maybe later (a network error, a timeout, 408, 425, 429, 5xx). `mayHaveHappened`: no
   * clear answer came back, so the side effect may exist already (the next attempt repeats it under
   * the same idempotency key); the trace of the attempt is kept.
   */
  | { kind: 'retry'; reason: string; retryAfterMs?: number; mayHaveHappened?: boolean }
  /** Never: a retry cannot fix it (a 4xx refusal, nothing left to do it for). */
  | { kind: 'dead'; reason: string };

export type AttemptDecision =
  | { status: 'dispatched' }
  | { status: 'dead'; reason: string; keepCallTrace: boolean }
  | { status: 'pending'; reason: string; retryAfterMs?: number; keepCallTrace: boolean };

/**
 * What an attempt makes of a pending message (a move the lifecycle allows from `pending`, always):
 * the status to write is the one this returns. `attempts` counts the attempt being recorded; a
 * retryable outcome past the budget is dead.
 */
export function decideAttempt(outcome: HandlerOutcome, attempts: number, maxAttempts: number): AttemptDecision {
  switch (outcome.kind) {
    case 'done':
      return { status: 'dispatched' };
    case 'dead':
      // A clear refusal did nothing: the trace of an earlier unanswered call is in the reason if it matters.
      return { status: 'dead', reason: outcome.reason, keepCallTrace: false };
    case 'retry':
      if (attempts >= maxAttempts) {
        return { status: 'dead', reason: `${outcome.reason} (after ${attempts} attempts)`, keepCallTrace: outcome.mayHaveHappened === true };
      }
      return { status: 'pending', reason: outcome.reason, retryAfterMs: outcome.retryAfterMs, keepCallTrace: outcome.mayHaveHappened === true };
  }
}

/** Whether an operator may retry a message in this status: one the lifecycle moves back to `pending` (only a dead one). */
export function canRetry(status: OutboxStatus): boolean {
  return status !== 'pending' && canMove(OUTBOX_LIFECYCLE, status, 'pending');
}
