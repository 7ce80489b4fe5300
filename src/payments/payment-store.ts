import { Injectable, OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DomainError } from '../common/domain-error';
import type { OrderSnapshot, PaymentSnapshot, PaymentWebhooksEvent } from '../common/payment-events';
import { uuid7 } from '../common/uuid7';
import { TransactionEvents } from '../outbox/transaction-events';
import { Order } from './order.entity';
import { Payment } from './payment.entity';

/** What a use case changed, to save and announce in its transaction. */
export interface Changes {
  order?: Order | null;
  payment?: Payment | null;
  /** The payment is new: inserted, not updated (and its registration announced). */
  newPayment?: boolean;
  /** The provider event that caused the change; null for an API action. */
  sourceEventId: string | null;
}

/**
 * The one place the Order and Payment aggregates are persisted, and where what they changed is
 * announced: each applied move becomes a CONTRACT §7 event, published in the same transaction (so
 * an event exists if and only if its change committed; a move that was not applied announces
 * nothing). It also keeps an order's copy of its fulfillment in step with the fulfillment's own
 * events.
 */
@Injectable()
export class PaymentStore implements OnModuleInit {
  /** Orders locked by each open transaction (its EntityManager), so a second look costs nothing. */
  private readonly lockedOrders = new WeakMap<EntityManager, Map<string, Order>>();

  constructor(private readonly events: TransactionEvents) {}

  onModuleInit(): void {
    // The shipment left: the order is fulfilled (and announces it). Any change of the fulfillment is
    // copied onto the order, for its views.
    this.events.on(['internal.fulfillment.changed'], async ({ fulfillment }, em) => {
      const order = await this.lockOrder(em, fulfillment.orderId);
      if (!order) return;
      const now = new Date();
      order.trackFulfillment({ id: fulfillment.id, status: fulfillment.status, carrier: fulfillment.carrier, shipmentId: fulfillment.shipmentId }, now);
      if (fulfillment.status === 'dispatched') order.markFulfilled(now);
      await this.commit(em, { order, sourceEventId: null });
    });
  }

  /**
   * The order, locked, as this transaction knows it: locked once per transaction (a second call,
   * from a reaction to this transaction's own events, gets the same object without a round trip).
   */
  async lockOrder(em: EntityManager, id: string): Promise<Order | null> {
    let locked = this.lockedOrders.get(em);
    if (!locked) this.lockedOrders.set(em, (locked = new Map()));
    const known = locked.get(id);
    if (known) return known;
    const [row] = await em.query(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = $1 FOR UPDATE`, [id]);
    const order = row ? orderFromRow(row) : null;
    if (order) locked.set(id, order);
    return order;
  }

  /** The payment of a provider key, locked (the processing transaction's first look). */
  async lockPayment(em: EntityManager, key: { provider: string; merchantAccountId: string; providerPaymentId: string }): Promise<Payment | null> {
    const [row] = await em.query(
      `SELECT ${PAYMENT_COLUMNS} FROM payments
        WHERE provider = $1 AND merchant_account_id = $2 AND provider_payment_id = $3 FOR UPDATE`,
      [key.provider, key.merchantAccountId, key.providerPaymentId],
    );
    return row ? paymentFromRow(row) : null;
  }

  async insertOrder(em: EntityManager, o: Order): Promise<boolean> {
    const inserted: unknown[] = await em.query(
      `INSERT INTO orders (id, reference, status, amount_minor, currency, carrier, ship_to, items, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (reference) DO NOTHING
       RETURNING id`,
      [o.id, o.reference, o.status, o.amountMinor.toString(), o.currency, o.carrier, JSON.stringify(o.shipTo),
        JSON.stringify(o.items), o.createdAt, o.updatedAt],
    );
    return inserted.length > 0;
  }

  /**
   * Saves what changed and publishes its events: the payment's moves first, then the order's
   * (`payment.succeeded` before `order.paid`).
   */
  async commit(em: EntityManager, changes: Changes): Promise<void> {
    const { order, payment } = changes;
    if (payment && changes.newPayment) await this.insertPayment(em, payment);
    else if (payment) await this.savePayment(em, payment);
    if (order) await this.saveOrder(em, order);

    if (payment && changes.newPayment) {
      await this.events.publish(em, {
        type: 'internal.payment.registered',
        payment: { id: payment.id, provider: payment.provider, merchantAccountId: payment.merchantAccountId, providerPaymentId: payment.providerPaymentId },
        sourceEventId: changes.sourceEventId,
      });
    }
    const orderNow = order ? orderSnapshot(order) : payment ? await this.snapshotOf(em, payment.orderId) : null;
    if (!orderNow) return;
    const paymentNow = payment ? paymentView(payment) : null;
    const published: PaymentWebhooksEvent[] = [
      ...(payment?.takeChanges() ?? []).map((type) => this.event(type, orderNow, paymentNow, changes.sourceEventId)),
      ...(order?.takeChanges() ?? []).map((type) =>
        // An order move caused by a payment carries it; one by an API action or a shipment does not.
        this.event(type, orderNow, type === 'order.fulfilled' ? null : paymentNow, changes.sourceEventId),
      ),
    ];
    if (published.length > 0) await this.events.publish(em, ...published);
  }

  private event(
    type: PaymentWebhooksEvent['type'],
    order: OrderSnapshot,
    payment: PaymentSnapshot | null,
    sourceEventId: string | null,
  ): PaymentWebhooksEvent {
    const now = Date.now();
    return { id: uuid7(now), type, occurredAt: new Date(now).toISOString(), data: { order, payment, sourceEventId } };
  }

  private async snapshotOf(em: EntityManager, orderId: string): Promise<OrderSnapshot | null> {
    const known = this.lockedOrders.get(em)?.get(orderId);
    if (known) return orderSnapshot(known);
    const [row] = await em.query(`SELECT ${ORDER_COLUMNS} FROM orders WHERE id = $1`, [orderId]);
    return row ? orderSnapshot(orderFromRow(row)) : null;
  }

  private async insertPayment(em: EntityManager, p: Payment): Promise<void> {
    const inserted: unknown[] = await em.query(
      `INSERT INTO payments (id, order_id, provider, provider_payment_id, merchant_account_id, status, amount_minor,
                             currency, refunded_minor, dispute_outcome, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
       ON CONFLICT (provider, merchant_account_id, provider_payment_id) DO NOTHING
       RETURNING id`,
      [p.id, p.orderId, p.provider, p.providerPaymentId, p.merchantAccountId, p.status, p.amountMinor.toString(),
        p.currency, p.refundedMinor.toString(), p.disputeOutcome, p.createdAt, p.updatedAt],
    );
    // Registered meanwhile: the caller decides (the API answers the existing one; a delivery retries).
    if (inserted.length === 0) throw new PaymentExists();
  }

  private async savePayment(em: EntityManager, p: Payment): Promise<void> {
    await em.query(
      `UPDATE payments SET status = $2, refunded_minor = $3, dispute_outcome = $4, updated_at = $5 WHERE id = $1`,
      [p.id, p.status, p.refundedMinor.toString(), p.disputeOutcome, p.updatedAt],
    );
  }

  private async saveOrder(em: EntityManager, o: Order): Promise<void> {
    await em.query(
      `UPDATE orders SET status = $2, paid_via = $3, paid_at = $4, fulfillment = $5, updated_at = $6 WHERE id = $1`,
      [o.id, o.status, o.paidVia ? JSON.stringify(o.paidVia) : null, o.paidAt, o.fulfillment ? JSON.stringify(o.fulfillment) : null, o.updatedAt],
    );
  }
}

const ORDER_COLUMNS = 'id, reference, status, amount_minor, currency, carrier, ship_to, items, paid_via, paid_at, fulfillment, created_at, updated_at';
const PAYMENT_COLUMNS =
  'id, order_id, provider, provider_payment_id, merchant_account_id, status, amount_minor, currency, refunded_minor, dispute_outcome, created_at, updated_at';

/** An order from its row (plain SQL on the hot path: the ORM's query building costs more than the query). */
export function orderFromRow(r: Record<string, any>): Order {
  return Object.assign(new Order(), {
    id: r.id,
    reference: r.reference,
    status: r.status,
    amountMinor: BigInt(r.amount_minor),
    currency: r.currency,
    carrier: r.carrier,
    shipTo: r.ship_to,
    items: r.items,
    paidVia: r.paid_via,
    paidAt: r.paid_at,
    fulfillment: r.fulfillment,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  });
}

export function paymentFromRow(r: Record<string, any>): Payment {
  return Object.assign(new Payment(), {
    id: r.id,
    orderId: r.order_id,
    provider: r.provider,
    providerPaymentId: r.provider_payment_id,
    merchantAccountId: r.merchant_account_id,
    status: r.status,
    amountMinor: BigInt(r.amount_minor),
    currency: r.currency,
    refundedMinor: BigInt(r.refunded_minor),
    disputeOutcome: r.dispute_outcome,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  });
}

/** The payment's key already holds a payment (the unique constraint decided). */
export class PaymentExists extends DomainError {
  constructor() {
    super('PAYMENT.CREATED_CONCURRENTLY', 'the payment was registered meanwhile');
  }
}

export function paymentView(p: Payment): PaymentSnapshot {
  return {
    id: p.id,
    orderId: p.orderId,
    provider: p.provider,
    providerPaymentId: p.providerPaymentId,
    merchantAccountId: p.merchantAccountId,
    status: p.status,
    amount: p.amount.toDecimal(),
    currency: p.currency,
    refundedAmount: p.refundedAmount.toDecimal(),
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
  };
}

/** An Order as the API shows it, without its payments (the body of its events). */
export function orderSnapshot(o: Order): OrderSnapshot {
  return {
    id: o.id,
    reference: o.reference,
    status: o.status,
    amount: o.amount.toDecimal(),
    currency: o.currency,
    carrier: o.carrier,
    shipTo: o.shipTo,
    items: o.items,
    fulfillment: o.fulfillment ?? null,
    createdAt: o.createdAt.toISOString(),
    updatedAt: o.updatedAt.toISOString(),
  };
}
