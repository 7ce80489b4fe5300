import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DomainError } from '../common/domain-error';
import { FulfillmentService } from '../fulfillment/fulfillment.service';
import { InboxQueueService, type ResourceKey } from '../webhooks/inbox-queue.service';
import { Order } from './order.entity';
import { Payment } from './payment.entity';
import type { PaymentEvent } from './payment-event';
import { toPaymentChange } from './payment-change';

export interface DeliveryContext {
  inboxId: string;
  provider: string;
  /** The endpoint's merchant account: part of the payment's key, and what a declared account must equal. */
  merchantAccountId: string;
}

/** How a delivery's processing ends, in the inbox's vocabulary (CONTRACT §4). */
export interface EventOutcome {
  status: 'processed' | 'rejected' | 'unmatched';
  outcome: string;
  /** Deliveries to put back on the queue once this transaction has committed. */
  requeue: string[];
  /**
   * A payment this event created: once the transaction has committed, its parked deliveries are
   * released again, waiting for any a worker holds (inside the transaction they were skipped).
   */
  createdPayment?: ResourceKey;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The payment domain's step of the processing transaction (ARCHITECTURE "Processing
 * transaction"): everything runs on the caller's EntityManager, so it commits or rolls back with
 * the inbox row.
 */
@Injectable()
export class PaymentEventsService {
  constructor(
    private readonly fulfillment: FulfillmentService,
    private readonly inbox: InboxQueueService,
  ) {}

  async apply(em: EntityManager, ctx: DeliveryContext, event: PaymentEvent, parkUnmatched: boolean): Promise<EventOutcome> {
    if (event.declaredAccount !== null && event.declaredAccount !== ctx.merchantAccountId) {
      return { status: 'rejected', outcome: 'account_mismatch', requeue: [] };
    }

    const found = await this.findPayment(em, ctx, event);
    if (!found) {
      // The webhook may have beaten the checkout that registers its payment: retry a few times
      // (the queue's backoff, seconds), then park it; a registration releases it at once.
      if (!parkUnmatched) {
        throw new DomainError('PAYMENT.NOT_FOUND_YET', `no payment ${event.resourceId} registered yet`);
      }
      return { status: 'unmatched', outcome: 'payment_not_found', requeue: [] };
    }
    const { payment, isNew } = found;

    const parsed = toPaymentChange(event);
    if (!parsed.ok) return { status: 'rejected', outcome: parsed.reason, requeue: [] };

    const now = new Date();
    const result = payment.apply(parsed.change, now);
    // A rejected event changes nothing: not even the payment its order id would have created.
    if (result.outcome === 'rejected') return { status: 'rejected', outcome: result.reason, requeue: [] };
    const key = { provider: payment.provider, merchantAccountId: payment.merchantAccountId, resourceId: payment.providerPaymentId };
    // A payment this event creates makes its parked deliveries processable, as a registration does.
    const released = isNew ? await this.inbox.releaseParked(em, key, { exceptId: ctx.inboxId, skipLocked: true }) : [];
    if (isNew) await this.insertPayment(em, payment);
    const createdPayment = isNew ? key : undefined;
    if (result.outcome !== 'applied') return { status: 'processed', outcome: result.outcome, requeue: released, createdPayment };

    if (!isNew) {
      await em.getRepository(Payment).update(
        { id: payment.id },
        {
          status: payment.status,
          refundedMinor: payment.refundedMinor,
          disputeOutcome: payment.disputeOutcome,
          updatedAt: payment.updatedAt,
        },
      );
    }
    await this.orderFollows(em, payment, now);
    const reopened = await this.inbox.reopenRejected(em, key, ctx.inboxId);
    return { status: 'processed', outcome: 'applied', requeue: [...released, ...reopened], createdPayment };
  }

  /**
   * The registered payment, locked; or, when the event carries the id of an order we have, a new
   * payment for it expecting the order's amount (not yet written). The order's row lock serialises
   * everyone who could create that payment, so the second look after it cannot miss one.
   */
  private async findPayment(
    em: EntityManager,
    ctx: DeliveryContext,
    event: PaymentEvent,
  ): Promise<{ payment: Payment; isNew: boolean } | null> {
    const key = { provider: ctx.provider, merchantAccountId: ctx.merchantAccountId, providerPaymentId: event.resourceId };
    const payments = em.getRepository(Payment);
    const lockPayment = () => payments.findOne({ where: key, lock: { mode: 'pessimistic_write' } });
    const existing = await lockPayment();
    if (existing) return { payment: existing, isNew: false };
    if (event.orderId === null || !UUID.test(event.orderId)) return null;

    const order = await em.getRepository(Order).findOne({ where: { id: event.orderId }, lock: { mode: 'pessimistic_write' } });
    if (!order) return null;
    const created = await lockPayment();
    if (created) return { payment: created, isNew: false };
    return { payment: Payment.register({ orderId: order.id, ...key, expected: order.amount }), isNew: true };
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
    // Registered meanwhile for another order: roll back and let the retry see it.
    if (inserted.length === 0) throw new DomainError('PAYMENT.CREATED_CONCURRENTLY', 'the payment was registered meanwhile');
  }

  private async orderFollows(em: EntityManager, payment: Payment, now: Date): Promise<void> {
    const orders = em.getRepository(Order);
    const order = await orders.findOne({ where: { id: payment.orderId }, lock: { mode: 'pessimistic_write' } });
    if (!order) return;
    const moved = order.followPayment(payment, now);
    if (moved?.outcome !== 'applied') return;
    await orders.update(
      { id: order.id },
      { status: order.status, paidVia: order.paidVia, paidAt: order.paidAt, updatedAt: order.updatedAt },
    );
    if (moved.to === 'paid') await this.fulfillment.request(em, order);
  }
}
