import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { uuid7 } from '../common/uuid7';
import { activeTraceparent } from '../observability/tracing';
import { afterCommit, BeforeCommitBatch, flushWrites, takesCommitWork } from '../database/transaction';
import { OutboxRelay } from './outbox-relay.service';
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
  private readonly atCommit = new BeforeCommitBatch<MessageToWrite>((em, messages) => this.write(em, messages));

  constructor(
    private readonly store: OutboxStore,
    private readonly relay: OutboxRelay,
  ) {}

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
    let written: string | undefined;
    await this.write(em, [{ ...message, id: uuid7(), traceContext: activeTraceparent() }], (ids) => {
      written = ids[0];
    });
    // Its id is the caller's answer: written now, not with the transaction's other writes.
    await flushWrites(em);
    return written ?? null;
  }

  /**
   * Writes the messages; where this process dispatches (it runs the workers) and the transaction
   * takes work for after its commit, they are handed to its relay once committed, unannounced;
   * otherwise the commit announces them (NOTIFY) to the relays of the worker processes.
   */
  private async write(em: EntityManager, messages: MessageToWrite[], then?: (written: string[]) => unknown): Promise<void> {
    const here = this.relay.dispatchesHere && takesCommitWork(em);
    await this.store.write(em, messages, { notify: !here }, (written) => {
      if (here && written.length > 0) {
        const ids = new Set(written);
        const committed = messages.filter((m) => ids.has(m.id)).map((m) => ({ id: m.id, orderingKey: m.orderingKey }));
        afterCommit(em, () => this.relay.handOff(committed));
      }
      return then?.(written);
    });
  }
}

function refuseOutsideTransaction(em: EntityManager, method: string): void {
  if (!em.queryRunner?.isTransactionActive) throw new Error(`${method} needs the EntityManager of an open transaction`);
}
