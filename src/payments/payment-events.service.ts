import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DomainError } from '../common/domain-error';
import { FulfillmentService } from '../fulfillment/fulfillment.service';
import { InboxQueueService } from '../webhooks/inbox-queue.service';
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

  async apply(em: EntityManager, ctx: DeliveryContext, event: PaymentEvent, finalAttempt: boolean): Promise<EventOutcome> {
    if (event.declaredAccount !== null && event.declaredAccount !== ctx.merchantAccountId) {
      return { status: 'rejected', outcome: 'account_mismatch', requeue: [] };
    }

    const payment = await this.findPayment(em, ctx, event);
    if (!payment) {
      // The webhook may have beaten the checkout that registers its payment: retry for a while
      // (the queue's backoff), then park it; a registration releases it.
      if (!finalAttempt) {
        throw new DomainError('PAYMENT.NOT_FOUND_YET', `no payment ${event.resourceId} registered yet`);
      }
      return { status: 'unmatched', outcome: 'payment_not_found', requeue: [] };
    }

    const parsed = toPaymentChange(event);
    if (!parsed.ok) return { status: 'rejected', outcome: parsed.reason, requeue: [] };

    const now = new Date();
    const result = payment.apply(parsed.change, now);
    if (result.outcome === 'rejected') return { status: 'rejected', outcome: result.reason, requeue: [] };
    if (result.outcome !== 'applied') return { status: 'processed', outcome: result.outcome, requeue: [] };

    await em.getRepository(Payment).update(
      { id: payment.id },
      {
        status: payment.status,
        refundedMinor: payment.refundedMinor,
        disputeOutcome: payment.disputeOutcome,
        updatedAt: payment.updatedAt,
      },
    );
    await this.orderFollows(em, payment, now);
    const requeue = await this.inbox.reopenRejected(
      em,
      { provider: payment.provider, merchantAccountId: payment.merchantAccountId, resourceId: payment.providerPaymentId },
      ctx.inboxId,
    );
    return { status: 'processed', outcome: 'applied', requeue };
  }

  /** The registered payment, or one created from the order id the event carries; locked either way. */
  private async findPayment(em: EntityManager, ctx: DeliveryContext, event: PaymentEvent): Promise<Payment | null> {
    const key = { provider: ctx.provider, merchantAccountId: ctx.merchantAccountId, providerPaymentId: event.resourceId };
    const repo = em.getRepository(Payment);
    const existing = await repo.findOne({ where: key, lock: { mode: 'pessimistic_write' } });
    if (existing || event.orderId === null || !UUID.test(event.orderId)) return existing;

    const order = await em.getRepository(Order).findOne({ where: { id: event.orderId }, lock: { mode: 'pessimistic_write' } });
    if (!order) return null;
    const payment = Payment.register({ orderId: order.id, ...key, expected: order.amount });
    // Two deliveries about one new payment may race here: the unique key decides, the loser reads.
    await em.query(
      `INSERT INTO payments (id, order_id, provider, provider_payment_id, merchant_account_id, status, amount_minor,
                             currency, refunded_minor, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, 0, $8, $8)
       ON CONFLICT (provider, merchant_account_id, provider_payment_id) DO NOTHING`,
      [payment.id, payment.orderId, payment.provider, payment.providerPaymentId, payment.merchantAccountId,
        payment.amountMinor.toString(), payment.currency, payment.createdAt],
    );
    return repo.findOne({ where: key, lock: { mode: 'pessimistic_write' } });
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
