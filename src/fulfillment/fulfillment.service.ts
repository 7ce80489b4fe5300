import { Injectable, OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DomainError } from '../common/domain-error';
import type { OrderSnapshot } from '../common/payment-events';
import { OutboxHandlers } from '../outbox/outbox-handler';
import { OutboxWriter } from '../outbox/outbox-writer';
import { TransactionEvents } from '../outbox/transaction-events';
import { Fulfillment } from './fulfillment.entity';

export const FULFILLMENT_DISPATCH = 'fulfillment.dispatch';

/** The payload of a `fulfillment.dispatch` message. */
export interface FulfillmentDispatchPayload {
  fulfillmentId: string;
  orderId: string;
}

/**
 * The Fulfillment aggregate's use cases, as reactions inside the transactions that change an
 * order: an order that became paid requests its one fulfillment (and the outbox message that
 * ships it); an order refunded before its shipment left cancels it. Each change of a fulfillment
 * is announced in the same transaction (the order keeps track of it).
 */
@Injectable()
export class FulfillmentService implements OnModuleInit {
  constructor(
    private readonly events: TransactionEvents,
    private readonly outbox: OutboxWriter,
    handlers: OutboxHandlers,
  ) {
    handlers.declareWritten(FULFILLMENT_DISPATCH, 'fulfillment');
  }

  onModuleInit(): void {
    this.events.on(['order.paid'], (event, em) => this.request(em, event.data.order));
    this.events.on(['order.refunded', 'order.canceled'], (event, em) => this.stop(em, event.data.order.id, `order ${event.data.order.status}`));
  }

  /**
   * Requests the order's one fulfillment, and its outbox message, in the caller's transaction.
   * `UNIQUE(order_id)` makes a second request find the first: it returns `created: false`.
   */
  async request(em: EntityManager, order: OrderSnapshot): Promise<{ fulfillmentId: string; created: boolean }> {
    const fulfillment = Fulfillment.request(order);
    const inserted: Array<{ id: string }> = await em.query(
      `INSERT INTO fulfillments (id, order_id, order_reference, status, carrier, ship_to, items, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
       ON CONFLICT (order_id) DO NOTHING
       RETURNING id`,
      [fulfillment.id, fulfillment.orderId, fulfillment.orderReference, fulfillment.status, fulfillment.carrier,
        JSON.stringify(fulfillment.shipTo), JSON.stringify(fulfillment.items), fulfillment.createdAt],
    );
    if (inserted.length === 0) {
      const [existing] = await em.query(`SELECT id FROM fulfillments WHERE order_id = $1`, [order.id]);
      return { fulfillmentId: existing.id, created: false };
    }
    await this.outbox.add(em, {
      type: FULFILLMENT_DISPATCH,
      payload: { fulfillmentId: fulfillment.id, orderId: order.id } satisfies FulfillmentDispatchPayload,
      // The carrier's Idempotency-Key is the fulfillment id, forever: one message per fulfillment.
      idempotencyKey: fulfillment.id,
    });
    await this.announce(em, fulfillment);
    return { fulfillmentId: fulfillment.id, created: true };
  }

  /**
   * A requested fulfillment of an order whose money went back never ships. The row is taken
   * without waiting: a dispatch recording its answer holds it and then the order (the other lock
   * order), so rather than risk a deadlock this transaction fails and is retried.
   */
  private async stop(em: EntityManager, orderId: string, reason: string): Promise<void> {
    let fulfillment: Fulfillment | null;
    try {
      fulfillment = await em.getRepository(Fulfillment).findOne({ where: { orderId }, lock: { mode: 'pessimistic_write', onLocked: 'nowait' } });
    } catch (err) {
      if ((err as { driverError?: { code?: string } })?.driverError?.code === '55P03') {
        throw new DomainError('FULFILLMENT.BUSY', 'the fulfillment is being recorded; try again');
      }
      throw err;
    }
    if (!fulfillment?.stop(reason)) return;
    await this.save(em, fulfillment);
  }

  /** The fulfillment's one persist function: its state, then the announcement of it. */
  async save(em: EntityManager, f: Fulfillment): Promise<void> {
    await em.query(
      `UPDATE fulfillments SET status = $2, shipment_id = $3, last_error = $4, stop_reason = $5, dispatched_at = $6, updated_at = $7
        WHERE id = $1`,
      [f.id, f.status, f.shipmentId, f.lastError, f.stopReason, f.dispatchedAt, f.updatedAt],
    );
    await this.announce(em, f);
  }

  private announce(em: EntityManager, f: Fulfillment): Promise<void> {
    return this.events.publish(em, {
      type: 'internal.fulfillment.changed',
      fulfillment: { id: f.id, orderId: f.orderId, status: f.status, carrier: f.carrier, shipmentId: f.shipmentId },
    });
  }
}
