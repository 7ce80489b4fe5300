import { RecordsChanges } from '../common/aggregate';
import type { OrderEventType } from '../common/host-events';
import { canMove } from '../common/lifecycle';
import { uuid7 } from '../common/uuid7';
import { Money } from './money';
import { REFUND_LIFECYCLE, RefundStatus } from './refund.state';

/** The event a refund's move announces (docs/events.md#types). */
const REFUND_EVENTS: Record<RefundStatus, OrderEventType> = {
  requested: 'refund.requested',
  submitted: 'refund.submitted',
  succeeded: 'refund.succeeded',
  failed: 'refund.failed',
};

/**
 * The Refund aggregate: a refund the shop asked for through the module (docs/commands.md). It is sent
 * to the provider once, under its own id as the idempotency key, and moves only where
 * REFUND_LIFECYCLE allows; each move records the event it announces. It never moves money: the
 * payment's refunded amount changes only by the provider's word (its webhook, or a poll).
 */
export class Refund extends RecordsChanges<OrderEventType, RefundStatus> {
  id: string;
  orderId: string;
  paymentId: string;
  provider: string;
  merchantAccountId: string;
  amountMinor: bigint;
  currency: string;
  reason: string | null;
  status: RefundStatus;
  providerRefundId: string | null;
  failureReason: string | null;
  createdAt: Date;
  updatedAt: Date;

  static request(params: {
    orderId: string;
    paymentId: string;
    provider: string;
    merchantAccountId: string;
    amount: Money;
    reason: string | null;
    now?: Date;
  }): Refund {
    const now = params.now ?? new Date();
    const refund = Object.assign(new Refund(), {
      id: uuid7(now.getTime()),
      orderId: params.orderId,
      paymentId: params.paymentId,
      provider: params.provider,
      merchantAccountId: params.merchantAccountId,
      amountMinor: params.amount.minor,
      currency: params.amount.currency,
      reason: params.reason,
      status: 'requested' as RefundStatus,
      providerRefundId: null,
      failureReason: null,
      createdAt: now,
      updatedAt: now,
    });
    refund.recordMove(null, 'requested', now);
    refund.record('refund.requested');
    return refund;
  }

  get amount(): Money {
    return Money.fromMinor(this.amountMinor, this.currency);
  }

  /** The provider accepted it: `submitted`, with its id (a first id stands). */
  submitted(providerRefundId: string | null, now: Date = new Date()): boolean {
    if (providerRefundId !== null && this.providerRefundId === null) this.providerRefundId = providerRefundId;
    return this.move('submitted', now);
  }

  /** The provider says the money went back. */
  succeeded(providerRefundId: string | null, now: Date = new Date()): boolean {
    if (providerRefundId !== null && this.providerRefundId === null) this.providerRefundId = providerRefundId;
    return this.move('succeeded', now);
  }

  /** The provider refused it, or its attempts ran out, or its webhook says it failed. */
  failed(reason: string, now: Date = new Date()): boolean {
    if (!this.move('failed', now)) return false;
    this.failureReason = reason;
    return true;
  }

  /** An operator retried its dead message: asked again, with the same key. */
  requestAgain(now: Date = new Date()): boolean {
    if (!this.move('requested', now)) return false;
    this.failureReason = null;
    return true;
  }

  private move(to: RefundStatus, now: Date): boolean {
    if (!canMove(REFUND_LIFECYCLE, this.status, to)) return false;
    this.recordMove(this.status, to, now);
    this.status = to;
    this.updatedAt = now;
    this.record(REFUND_EVENTS[to]);
    return true;
  }
}
