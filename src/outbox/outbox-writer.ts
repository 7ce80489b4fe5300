import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { uuid7 } from '../common/uuid7';
import { activeTraceparent } from '../observability/tracing';
import { BeforeCommitBatch } from '../database/transaction';
import { MessageToWrite, OutboxStore } from './outbox.store';

export interface NewOutboxMessage {
  type: string;
  payload: Record<string, unknown>;
  /** Unique: a second message with the same key is the same intent, and is not written again. */
  idempotencyKey: string;
  /**
   * Messages sharing this key are delivered in the order they were written, while each is at its
   * first attempt (a retried one can then fall behind a later one).
   */
  orderingKey?: string;
}

/**
 * Writes outbox messages, and only inside the caller's transaction: the message must commit or
 * roll back with the business change that decided it. A manager outside a transaction is a
 * programming error. Each message gets its id when it is asked for, so ids (time-ordered) keep the
 * order messages were asked in. Each keeps the active span's context (see observability/tracing.ts),
 * which its dispatch spans belong to.
 */
@Injectable()
export class OutboxWriter {
  private readonly atCommit = new BeforeCommitBatch<MessageToWrite>(async (em, messages) => {
    await this.store.write(em, messages);
  });

  constructor(private readonly store: OutboxStore) {}

  /**
   * Like `add`, but written at the end of the caller's transaction (opened with runTransaction),
   * with every other message asked for that way, in one statement.
   */
  writeAtCommit(em: EntityManager, message: NewOutboxMessage): void {
    refuseOutsideTransaction(em, 'OutboxWriter.writeAtCommit');
    this.atCommit.add(em, { ...message, id: uuid7(), traceContext: activeTraceparent() });
  }

  /** Writes the message now; returns its id, or null when a message with this key already exists. */
  async add(em: EntityManager, message: NewOutboxMessage): Promise<string | null> {
    refuseOutsideTransaction(em, 'OutboxWriter.add');
    const [written] = await this.store.write(em, [{ ...message, id: uuid7(), traceContext: activeTraceparent() }]);
    return written ?? null;
  }
}

function refuseOutsideTransaction(em: EntityManager, method: string): void {
  if (!em.queryRunner?.isTransactionActive) throw new Error(`${method} needs the EntityManager of an open transaction`);
}
