import { Column, Entity, PrimaryColumn } from 'typeorm';

export const FULFILLMENT_STATUSES = ['requested', 'dispatched', 'failed'] as const;
export type FulfillmentStatus = (typeof FULFILLMENT_STATUSES)[number];

/**
 * One per order (`UNIQUE(order_id)`): a second request for the same order finds the first, so two
 * events about one payment, or a support agent and a webhook, can never ship twice. Its id is the
 * carrier's `Idempotency-Key`.
 */
@Entity({ name: 'fulfillments' })
export class Fulfillment {
  @PrimaryColumn('uuid')
  id: string;

  @Column({ name: 'order_id', type: 'uuid' })
  orderId: string;

  @Column({ type: 'text' })
  status: FulfillmentStatus;

  @Column({ type: 'text' })
  carrier: string;

  @Column({ name: 'shipment_id', type: 'text', nullable: true })
  shipmentId: string | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;

  @Column({ name: 'dispatched_at', type: 'timestamptz', nullable: true })
  dispatchedAt: Date | null;

  /** `requested` → `dispatched`, keeping the carrier's shipment id. Returns false if it was not requested. */
  dispatched(shipmentId: string, now: Date = new Date()): boolean {
    if (this.status !== 'requested') return false;
    this.status = 'dispatched';
    this.shipmentId = shipmentId;
    this.lastError = null;
    this.dispatchedAt = now;
    this.updatedAt = now;
    return true;
  }

  /** `requested` → `failed`: the carrier refused it, or every attempt failed. */
  failed(reason: string, now: Date = new Date()): boolean {
    if (this.status !== 'requested') return false;
    this.status = 'failed';
    this.lastError = reason;
    this.updatedAt = now;
    return true;
  }

  /** A dead message retried by an operator asks again. */
  requestAgain(now: Date = new Date()): boolean {
    if (this.status !== 'failed') return false;
    this.status = 'requested';
    this.updatedAt = now;
    return true;
  }
}
