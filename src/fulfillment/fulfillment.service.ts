import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { uuid7 } from '../common/uuid7';
import { OutboxWriter } from '../outbox/outbox-writer';
import type { Order } from '../payments/order.entity';

export const FULFILLMENT_DISPATCH = 'fulfillment.dispatch';

@Injectable()
export class FulfillmentService {
  constructor(private readonly outbox: OutboxWriter) {}

  /**
   * Requests the order's one fulfillment, and its outbox message, in the caller's transaction.
   * `UNIQUE(order_id)` makes a second request find the first: it returns `created: false`.
   */
  async request(em: EntityManager, order: Order): Promise<{ fulfillmentId: string; created: boolean }> {
    const inserted: Array<{ id: string }> = await em.query(
      `INSERT INTO fulfillments (id, order_id, status, carrier, created_at, updated_at)
       VALUES ($1, $2, 'requested', $3, now(), now())
       ON CONFLICT (order_id) DO NOTHING
       RETURNING id`,
      [uuid7(), order.id, order.carrier],
    );
    if (inserted.length === 0) {
      const [existing] = await em.query(`SELECT id FROM fulfillments WHERE order_id = $1`, [order.id]);
      return { fulfillmentId: existing.id, created: false };
    }
    const fulfillmentId = inserted[0].id;
    await this.outbox.add(em, {
      type: FULFILLMENT_DISPATCH,
      payload: { fulfillmentId, orderId: order.id },
      // The carrier's Idempotency-Key is the fulfillment id, forever: one message per fulfillment.
      idempotencyKey: fulfillmentId,
    });
    return { fulfillmentId, created: true };
  }
}
