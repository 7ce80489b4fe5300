import { RecordsChanges } from '../common/aggregate';
import type { OrderEventType } from '../common/host-events';
import type { OrderItem, OrderSnapshot, ShipTo } from '../common/order-views';
import { uuid7 } from '../common/uuid7';
import { Money } from './money';
import type { Payment } from './payment.entity';
import { decideOrderMove, OrderMoveResult, OrderStatus } from './order.state';

export type { OrderItem, ShipTo } from '../common/order-views';

/** What the order knows of its fulfillment (kept in step by the fulfillment's events). */
export type OrderFulfillment = NonNullable<OrderSnapshot['fulfillment']>;

/** The event an order's move announces (docs/events.md#types). */
const ORDER_EVENTS: Partial<Record<OrderStatus, OrderEventType>> = {
  paid: 'order.paid',
  fulfilled: 'order.fulfilled',
  refunded: 'order.refunded',
  canceled: 'order.canceled',
};

/** Payments one order may hold: a bound on what its rows, and every answer that lists them, can grow to. */
export const MAX_PAYMENTS_PER_ORDER = 20;

/** Why an event or a registration may not attach a payment to an order. */
export type PaymentRefusal = 'account_mismatch' | 'too_many_payments';

/**
 * Where the account of a payment about to be attached comes from. `vouched`: from something other
 * than the event's own content — the host's registration, or a single-account endpoint, whose
 * secret is that account's. `declared`: from the body of an event on an endpoint that serves many
 * accounts, where every connected account writes its own events (and their `order_id`).
 */
export type AccountSource = 'vouched' | 'declared';

/** Why an order became paid: its payment, or a support agent. */
export type PaidVia = { source: 'payment'; paymentId: string } | { source: 'support'; reason: string };

/**
 * The Order aggregate. It follows its payments: the first capture of the exact amount makes it
 * `paid` (and only that first time asks for a fulfillment); a full refund makes it `refunded`.
 * The support path (`mark-paid`) goes through the same `markPaid`. Each applied move records the
 * event it announces; PaymentStore maps and writes the row, OrderChangesService saves and announces it.
 */
export class Order extends RecordsChanges<OrderEventType, OrderStatus> {
  id: string;
  reference: string | null;
  status: OrderStatus;
  amountMinor: bigint;
  currency: string;
  carrier: string;
  /** The merchant account whose payments the order accepts; null: the order names none. */
  merchantAccountId: string | null;
  shipTo: ShipTo;
  items: OrderItem[];
  paidVia: PaidVia | null;
  paidAt: Date | null;
  fulfillment: OrderFulfillment | null;
  createdAt: Date;
  updatedAt: Date;

  static place(params: {
    reference: string | null;
    amount: Money;
    carrier: string;
    merchantAccountId?: string | null;
    shipTo: ShipTo;
    items: OrderItem[];
    now?: Date;
  }): Order {
    const now = params.now ?? new Date();
    const order = Object.assign(new Order(), {
      id: uuid7(now.getTime()),
      reference: params.reference,
      status: 'awaiting_payment' as OrderStatus,
      amountMinor: params.amount.minor,
      currency: params.amount.currency,
      carrier: params.carrier,
      merchantAccountId: params.merchantAccountId ?? null,
      shipTo: params.shipTo,
      items: params.items,
      paidVia: null,
      paidAt: null,
      fulfillment: null,
      createdAt: now,
      updatedAt: now,
    });
    order.recordMove(null, 'awaiting_payment', now);
    return order;
  }

  get amount(): Money {
    return Money.fromMinor(this.amountMinor, this.currency);
  }

  /**
   * Whether a payment of `account` may be attached to this order, which already holds payments of
   * `attached` (one entry per payment). The merchant account is a trust boundary: an order that
   * names its account takes payments of that account only, whoever vouches for it; one that names
   * none takes an account an event declares only when one of its payments is of that account
   * already (a registration is what establishes it). Checked before anything else of the event.
   */
  refusesPayment(account: string, attached: readonly string[], source: AccountSource): PaymentRefusal | null {
    if (this.merchantAccountId !== null) {
      if (account !== this.merchantAccountId) return 'account_mismatch';
    } else if (source === 'declared' && !attached.includes(account)) {
      return 'account_mismatch';
    }
    return attached.length >= MAX_PAYMENTS_PER_ORDER ? 'too_many_payments' : null;
  }

  /**
   * `awaiting_payment` → `paid`. Only an `applied` result asks for a fulfillment; an order that
   * was already paid (or went further) answers `already_applied`.
   */
  markPaid(via: PaidVia, now: Date = new Date()): OrderMoveResult {
    const result = decideOrderMove(this.status, 'paid', ['paid', 'fulfilled', 'refunded']);
    if (result.outcome === 'applied') {
      this.status = result.to;
      this.paidVia = via;
      this.paidAt = now;
      this.updatedAt = now;
      this.recordMove(result.from, result.to, now);
      this.announce(result.to);
    }
    return result;
  }

  cancel(now: Date = new Date()): OrderMoveResult {
    return this.move('canceled', now);
  }

  markFulfilled(now: Date = new Date()): OrderMoveResult {
    return this.move('fulfilled', now);
  }

  markRefunded(now: Date = new Date()): OrderMoveResult {
    return this.move('refunded', now);
  }

  /**
   * The order's reaction to one of its payments having moved. Returns the paid result when the
   * payment's capture made the order paid (the caller requests the fulfillment then).
   */
  followPayment(payment: Payment, now: Date = new Date()): OrderMoveResult | null {
    const holdsMoney = payment.status === 'succeeded' || payment.status === 'partially_refunded';
    if (holdsMoney && this.status === 'awaiting_payment' && payment.amount.equals(this.amount)) {
      return this.markPaid({ source: 'payment', paymentId: payment.id }, now);
    }
    // Only the refund of the money that paid the order refunds it (another payment of the same
    // order may be refunded as a double payment); an order marked paid by support follows any.
    const paidByThis = this.paidVia?.source === 'support' || this.paidVia?.paymentId === payment.id;
    // Fully refunded whatever the status says: a refund during a dispute keeps the status `disputed`
    // (the dispute decides it), but the money is back with the customer all the same.
    const fullyRefunded = payment.status === 'refunded' || (payment.captured && payment.refundedMinor === payment.amountMinor);
    if (fullyRefunded && paidByThis && (this.status === 'paid' || this.status === 'fulfilled')) {
      return this.markRefunded(now);
    }
    // A canceled order stays canceled when money arrives: it is recorded on the payment only.
    return null;
  }

  /** The order's copy of its fulfillment's state, as the fulfillment announced it. */
  trackFulfillment(fulfillment: OrderFulfillment, now: Date = new Date()): void {
    this.fulfillment = fulfillment;
    this.updatedAt = now;
  }

  private move(to: OrderStatus, now: Date): OrderMoveResult {
    const result = decideOrderMove(this.status, to);
    if (result.outcome === 'applied') {
      this.status = result.to;
      this.updatedAt = now;
      this.recordMove(result.from, result.to, now);
      this.announce(result.to);
    }
    return result;
  }

  private announce(to: OrderStatus): void {
    const type = ORDER_EVENTS[to];
    if (type) this.record(type);
  }
}
