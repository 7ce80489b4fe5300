import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { OrderItem, ShipTo } from '../common/payment-events';
import { uuid7 } from '../common/uuid7';
import { canMove, FulfillmentStatus } from './fulfillment.state';

export { FULFILLMENT_STATUSES, type FulfillmentStatus } from './fulfillment.state';

/**
 * One per order (`UNIQUE(order_id)`): a second request for the same order finds the first, so two
 * events about one payment, or a support agent and a webhook, can never ship twice. Its id is the
 * carrier's `Idempotency-Key`. It keeps what it ships (address, items), taken from the order when it
 * became paid, so dispatching never reads another context's tables.
 */
@Entity({ name: 'fulfillments' })
export class Fulfillment {
  @PrimaryColumn('uuid')
  id: string;

  @Column({ name: 'order_id', type: 'uuid' })
  orderId: string;

  @Column({ name: 'order_reference', type: 'text', nullable: true })
  orderReference: string | null;

  @Column({ type: 'text' })
  status: FulfillmentStatus;

  @Column({ type: 'text' })
  carrier: string;

  @Column({ name: 'ship_to', type: 'jsonb' })
  shipTo: ShipTo;

  @Column({ type: 'jsonb' })
  items: OrderItem[];

  @Column({ name: 'shipment_id', type: 'text', nullable: true })
  shipmentId: string | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  /** Why it must not ship any more (`order refunded`): set while it waits, read before each call. */
  @Column({ name: 'stop_reason', type: 'text', nullable: true })
  stopReason: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  @Column({ name: 'dispatched_at', type: 'timestamptz', nullable: true })
  dispatchedAt: Date | null;

  static request(order: { id: string; reference: string | null; carrier: string; shipTo: ShipTo; items: OrderItem[] }, now = new Date()): Fulfillment {
    return Object.assign(new Fulfillment(), {
      id: uuid7(now.getTime()),
      orderId: order.id,
      orderReference: order.reference,
      status: 'requested' as FulfillmentStatus,
      carrier: order.carrier,
      shipTo: order.shipTo,
      items: order.items,
      shipmentId: null,
      lastError: null,
      stopReason: null,
      createdAt: now,
      updatedAt: now,
      dispatchedAt: null,
    });
  }

  /** `requested` → `dispatched`, keeping the carrier's shipment id. Returns false if it was not requested. */
  dispatched(shipmentId: string, now: Date = new Date()): boolean {
    if (!this.move('dispatched', now)) return false;
    this.shipmentId = shipmentId;
    this.lastError = null;
    this.dispatchedAt = now;
    return true;
  }

  /** `requested` → `failed`: the carrier refused it, or every attempt failed. */
  failed(reason: string, now: Date = new Date()): boolean {
    if (!this.move('failed', now)) return false;
    this.lastError = reason;
    return true;
  }

  /**
   * The order was refunded (or canceled) while the shipment waited: it must never ship. It keeps its
   * status until its message's next attempt (an operator's retry of a dead one included), which then
   * gives up with this reason (and names a call already begun that may have shipped).
   */
  stop(reason: string, now: Date = new Date()): boolean {
    // Also a failed one: its dead message may be retried by an operator, and must not ship then.
    if (this.status === 'dispatched' || this.stopReason !== null) return false;
    this.stopReason = reason;
    this.updatedAt = now;
    return true;
  }

  /** `failed` → `requested`: a dead message retried by an operator asks again. */
  requestAgain(now: Date = new Date()): boolean {
    return this.move('requested', now);
  }

  private move(to: FulfillmentStatus, now: Date): boolean {
    if (!canMove(this.status, to)) return false;
    this.status = to;
    this.updatedAt = now;
    return true;
  }
}
