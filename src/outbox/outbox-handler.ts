import { Injectable, OnApplicationBootstrap } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { AttemptDecision, HandlerOutcome } from './outbox.state';

/** A message as its handler sees it during one attempt. */
export interface OutboxAttempt<P = Record<string, unknown>> {
  id: string;
  type: string;
  payload: P;
  idempotencyKey: string;
  /** Attempts already recorded before this one. */
  attemptsBefore: number;
  /**
   * When an earlier attempt began a call that got no clear answer (it may have happened), else
   * null. (The claim that started this attempt left the same trace, committed before the handler
   * runs: a worker that dies during the call leaves it, and the next attempt knows the effect may
   * exist; an attempt that ends with a clear answer clears it.)
   */
  previousCallAt: Date | null;
  /** The `traceparent` of the span that wrote the message (the request that asked for it), when traced. */
  traceContext?: string | null;
}

/**
 * The one side effect of a message type (a carrier call, a subscriber, an HTTP sink). Claiming,
 * leases, attempts, backoff and dead letters are the outbox's: a handler only says what happened.
 * It answers rather than throws; a throw counts as a retry whose effect may have happened.
 */
export interface OutboxHandler<P = Record<string, unknown>> {
  /** Attempts in all, the first included, before the message is dead. */
  readonly maxAttempts: number;
  handle(attempt: OutboxAttempt<P>): Promise<HandlerOutcome>;
  /**
   * In the transaction that records an attempt (the message row locked): the handler's own state
   * follows (a fulfillment becomes dispatched or failed).
   */
  recorded?(em: EntityManager, attempt: OutboxAttempt<P>, outcome: HandlerOutcome, decision: AttemptDecision): Promise<void>;
  /** In the transaction of an operator's retry of a dead message. */
  retried?(em: EntityManager, message: { id: string; payload: P }): Promise<void>;
}

/**
 * Handlers by message type: a plain map filled at start. A type that something writes but that no
 * handler takes is a start-up error, not a message dead-lettered at run time.
 */
@Injectable()
export class OutboxHandlers implements OnApplicationBootstrap {
  private readonly handlers = new Map<string, OutboxHandler<never>>();
  /** Each type something writes, and the first writer that declared it (named in the start-up error). */
  private readonly writers = new Map<string, string>();

  register<P>(type: string, handler: OutboxHandler<P>): void {
    if (this.handlers.has(type)) throw new Error(`two outbox handlers for the message type "${type}"`);
    this.handlers.set(type, handler as OutboxHandler<never>);
  }

  /** `writer` writes messages of `type`: a handler must exist by the time the app starts. */
  declareWritten(type: string, writer: string): void {
    if (!this.writers.has(type)) this.writers.set(type, writer);
  }

  get(type: string): OutboxHandler<Record<string, unknown>> | undefined {
    return this.handlers.get(type) as OutboxHandler<Record<string, unknown>> | undefined;
  }

  types(): string[] {
    return [...this.handlers.keys()];
  }

  onApplicationBootstrap(): void {
    const missing = [...this.writers].filter(([type]) => !this.handlers.has(type));
    if (missing.length > 0) {
      throw new Error(
        `outbox message types written without a handler: ${missing.map(([type, writer]) => `"${type}" (written by ${writer})`).join(', ')}`,
      );
    }
  }
}
