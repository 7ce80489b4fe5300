import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { uuid7 } from '../common/uuid7';
import { beforeCommit, TransactionState } from '../database/transaction';
import { OUTBOX_CHANNEL_SQL } from './outbox.queue';

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
 * programming error.
 */
@Injectable()
export class OutboxWriter {
  private readonly later = new TransactionState<{ messages: Array<NewOutboxMessage & { id: string }>; scheduled: boolean }>(() => ({
    messages: [],
    scheduled: false,
  }));

  /**
   * Like `add`, but written at the end of the caller's transaction (opened with runTransaction),
   * with every other message it asks for, in one statement. Messages are written in the order they
   * were asked for (their ids, time-ordered, keep it), a second one with a key already there is not.
   */
  addLater(em: EntityManager, message: NewOutboxMessage): void {
    if (!em.queryRunner?.isTransactionActive) {
      throw new Error('OutboxWriter.addLater needs the EntityManager of an open transaction');
    }
    const pending = this.later.of(em);
    pending.messages.push({ ...message, id: uuid7() });
    if (pending.scheduled) return;
    pending.scheduled = true;
    beforeCommit(em, async () => {
      pending.scheduled = false;
      const messages = pending.messages.splice(0);
      await em.query(
        `WITH written AS (
           INSERT INTO outbox_message (id, type, payload, idempotency_key, ordering_key, status, attempts, next_attempt_at, created_at)
           SELECT r.id, r.type, r.payload, r.idempotency_key, r.ordering_key, 'pending', 0, now(), now()
             FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, type text, payload jsonb, idempotency_key text, ordering_key text)
            ORDER BY r.id
           ON CONFLICT (idempotency_key) DO NOTHING
           RETURNING id)
         SELECT count(pg_notify(${OUTBOX_CHANNEL_SQL}, id::text)) FROM written`,
        [
          JSON.stringify(
            messages.map((m) => ({ id: m.id, type: m.type, payload: m.payload, idempotency_key: m.idempotencyKey, ordering_key: m.orderingKey ?? null })),
          ),
        ],
      );
    });
  }

  /** Returns the new message's id, or null when a message with this key already exists. */
  async add(em: EntityManager, message: NewOutboxMessage): Promise<string | null> {
    if (!em.queryRunner?.isTransactionActive) {
      throw new Error('OutboxWriter.add needs the EntityManager of an open transaction');
    }
    // One statement writes and announces it; the notification reaches the relays only if this
    // transaction commits, so nothing announced is ever missing.
    const rows: Array<{ id: string }> = await em.query(
      `WITH written AS (
         INSERT INTO outbox_message (id, type, payload, idempotency_key, ordering_key, status, attempts, next_attempt_at, created_at)
         VALUES ($1, $2, $3, $4, $5, 'pending', 0, now(), now())
         ON CONFLICT (idempotency_key) DO NOTHING
         RETURNING id)
       SELECT id, pg_notify(${OUTBOX_CHANNEL_SQL}, id::text) FROM written`,
      [uuid7(), message.type, JSON.stringify(message.payload), message.idempotencyKey, message.orderingKey ?? null],
    );
    return rows[0]?.id ?? null;
  }
}
