import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { uuid7 } from '../common/uuid7';
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
