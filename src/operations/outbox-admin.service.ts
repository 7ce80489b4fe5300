import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DomainError } from '../common/domain-error';
import { withTimeout } from '../common/with-timeout';
import { keysetQuery, Page, toPage } from '../common/pagination';
import { PW_CONNECTION } from '../database/data-source';
import { OutboxRelay } from '../outbox/outbox-relay.service';
import type { ListOutboxQuery, OutboxView } from './dto/operations.dto';

@Injectable()
export class OutboxAdminService {
  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly relay: OutboxRelay,
  ) {}

  async list(query: ListOutboxQuery): Promise<Page<OutboxView>> {
    const { text, params, limit } = keysetQuery(
      `SELECT id, type, idempotency_key AS "idempotencyKey", status, attempts, last_error AS "lastError",
              created_at AS "createdAt", dispatched_at AS "dispatchedAt"
         FROM outbox_message`,
      [['status = ?', query.status]],
      query,
    );
    const rows: Array<Omit<OutboxView, 'createdAt' | 'dispatchedAt'> & { createdAt: Date; dispatchedAt: Date | null }> =
      await this.dataSource.query(text, params);
    return toPage(rows, limit, (r) => ({
      ...r,
      createdAt: r.createdAt.toISOString(),
      dispatchedAt: r.dispatchedAt?.toISOString() ?? null,
    }));
  }

  /**
   * A dead message gets a fresh attempt budget and is enqueued at once; its fulfillment asks
   * again. Anything else is refused: a pending message is already on its way, a dispatched one
   * is done.
   */
  async retry(id: string): Promise<void> {
    await this.dataSource.transaction(async (em) => {
      const [message]: Array<{ status: string; payload: { fulfillmentId?: string } }> = await em.query(
        `SELECT status, payload FROM outbox_message WHERE id = $1 FOR UPDATE`,
        [id],
      );
      if (!message) throw new DomainError('OUTBOX.NOT_FOUND', 'no such message');
      if (message.status !== 'dead') {
        throw new DomainError('OUTBOX.ILLEGAL_TRANSITION', 'refused', `a ${message.status} message cannot be retried; only a dead one`);
      }
      await em.query(`UPDATE outbox_message SET status = 'pending', attempts = 0, next_attempt_at = now() WHERE id = $1`, [id]);
      if (message.payload.fulfillmentId) {
        await em.query(
          `UPDATE fulfillments SET status = 'requested', updated_at = now() WHERE id = $1 AND status = 'failed'`,
          [message.payload.fulfillmentId],
        );
      }
    });
    // Committed: a Redis that is away only delays the dispatch (the relay's sweeper finds it).
    await withTimeout(this.relay.requeue([id]), 2_000, 'enqueue').catch(() => undefined);
  }
}
