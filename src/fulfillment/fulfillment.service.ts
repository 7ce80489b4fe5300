import { Injectable, OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DomainError } from '../common/domain-error';
import { rowsReturned } from '../database/returning';
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
    await em.query(`UPDATE fulfillments SET stop_reason = $2, updated_at = $3 WHERE id = $1`, [fulfillment.id, fulfillment.stopReason, fulfillment.updatedAt]);
  }

  async find(em: EntityManager, id: string): Promise<Fulfillment | null> {
    const [row] = await em.query(`SELECT ${FULFILLMENT_COLUMNS} FROM fulfillments WHERE id = $1`, [id]);
    return row ? fulfillmentFromRow(row) : null;
  }

  /**
   * The fulfillment's one persist function for a move of its status: written only if the row is
   * still in the status the move started from (whoever moved it first wins; the other writes
   * nothing), then announced. The stop reason is the refund's to write, never overwritten here.
   */
  async saveMove(em: EntityManager, f: Fulfillment, from: Fulfillment['status']): Promise<boolean> {
    const written = await rowsReturned<{ id: string }>(
      em,
      `UPDATE fulfillments SET status = $3, shipment_id = $4, last_error = $5, dispatched_at = $6, updated_at = $7
        WHERE id = $1 AND status = $2 RETURNING id`,
      [f.id, from, f.status, f.shipmentId, f.lastError, f.dispatchedAt, f.updatedAt],
    );
    if (written.length === 0) return false;
    await this.announce(em, f);
    return true;
  }

  private announce(em: EntityManager, f: Fulfillment): Promise<void> {
    return this.events.publish(em, {
      type: 'internal.fulfillment.changed',
      fulfillment: { id: f.id, orderId: f.orderId, status: f.status, carrier: f.carrier, shipmentId: f.shipmentId },
    });
  }
}

const FULFILLMENT_COLUMNS =
  'id, order_id, order_reference, status, carrier, ship_to, items, shipment_id, last_error, stop_reason, created_at, updated_at, dispatched_at';

function fulfillmentFromRow(r: Record<string, any>): Fulfillment {
  return Object.assign(new Fulfillment(), {
    id: r.id,
    orderId: r.order_id,
    orderReference: r.order_reference,
    status: r.status,
    carrier: r.carrier,
    shipTo: r.ship_to,
    items: r.items,
    shipmentId: r.shipment_id,
    lastError: r.last_error,
    stopReason: r.stop_reason,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    dispatchedAt: r.dispatched_at,
  });
}
