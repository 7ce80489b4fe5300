import type { OrderItem, ShipTo } from '../common/order-views';
import { RecordsMoves } from '../common/lifecycle';
import { uuid7 } from '../common/uuid7';
import { canMove, FulfillmentStatus } from './fulfillment.state';

export { FULFILLMENT_STATUSES, type FulfillmentStatus } from './fulfillment.state';

/**
 * One per order (`UNIQUE(order_id)`): a second request for the same order finds the first, so two
 * events about one payment, or a support agent and a webhook, can never ship twice. Its id is the
 * carrier's `Idempotency-Key`. It keeps what it ships (address, items), taken from the order when it
 * became paid, so dispatching never reads another context's tables.
 */
export class Fulfillment extends RecordsMoves<FulfillmentStatus> {
  id: string;
  orderId: string;
  orderReference: string | null;
  status: FulfillmentStatus;
  carrier: string;
  shipTo: ShipTo;
  items: OrderItem[];
  shipmentId: string | null;
  lastError: string | null;
  /** Why it must not ship any more (`order refunded`): set while it waits, read before each call. */
  stopReason: string | null;
  createdAt: Date;
  updatedAt: Date;
  dispatchedAt: Date | null;

  static request(order: { id: string; reference: string | null; carrier: string; shipTo: ShipTo; items: OrderItem[] }, now = new Date()): Fulfillment {
    const fulfillment = Object.assign(new Fulfillment(), {
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
    fulfillment.recordMove(null, 'requested', now);
    return fulfillment;
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
    this.recordMove(this.status, to, now);
    this.status = to;
    this.updatedAt = now;
    return true;
  }
}
