import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DomainError } from '../common/domain-error';
import type { HistoryCause } from '../common/history';
import type { PaymentRefusal } from './order.entity';
import { Payment } from './payment.entity';
import type { RejectionReason } from './payment.state';
import type { ProviderEvent } from '../common/provider-event';
import { toPaymentChange } from './payment-change';
import { OrderChangesService } from './order-changes.service';
import { PaymentStore, Queryable } from './payment-store';
import { PaymentCapturesStore } from './payment-captures.store';
import { RefundsService } from './refunds.service';

export interface DeliveryContext {
  /** The delivery's id (its inbox row, `GET /admin/webhook-deliveries/{id}`): the order's history names it. */
  deliveryId: string;
  /** The provider's event id: the `sourceEventId` of whatever this changes (docs/events.md#the-body). */
  eventId: string;
  provider: string;
  /** The event's merchant account: part of the payment's key, and what a declared account must equal. */
  merchantAccountId: string;
  /**
   * On a multi-account endpoint, the accounts it serves (`'*'`: any). The row's account is the one
   * the body declared; an event of an account the endpoint does not serve is `account_mismatch`.
   */
  servedAccounts?: string[] | '*';
}

/** How a delivery's processing ends, in the inbox's vocabulary (docs/webhooks.md#delivery-outcomes). */
export type EventOutcome =
  | { status: 'processed'; outcome: 'applied' | 'already_applied' | 'stale' }
  | { status: 'rejected'; outcome: RejectionReason | PaymentRefusal }
  | { status: 'unmatched'; outcome: 'payment_not_found' };

/** The history's cause of what a delivery's processing changes. */
function causeOf(ctx: DeliveryContext): HistoryCause {
  return { kind: 'delivery', deliveryId: ctx.deliveryId, eventId: ctx.eventId, provider: ctx.provider };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The payment domain's step of the processing transaction
 * (docs/design.md#the-processing-transaction): everything runs on the caller's EntityManager, so it
 * commits or rolls back with the inbox row. What it changes is announced in that transaction
 * (OrderChangesService): the deliveries waiting for the payment, the fulfillment and the host hear of it
 * from there.
 */
@Injectable()
export class ProviderEventsService {
  constructor(
    private readonly store: PaymentStore,
    private readonly changes: OrderChangesService,
    private readonly captures: PaymentCapturesStore,
    private readonly refunds: RefundsService,
  ) {}

  /**
   * The events of a batch as they apply: one that names a capture instead of its payment (PayPal
   * refunds and disputes) becomes an event about the payment that capture was recorded for (its
   * `resourceKind` then `payment`), in one statement for the batch. One whose capture is not
   * recorded yet is returned as it is: it finds no payment, and waits as such an event does.
   */
  async aboutPayments(em: EntityManager, items: ReadonlyArray<{ ctx: DeliveryContext; event: ProviderEvent }>): Promise<ProviderEvent[]> {
    const keyOf = ({ ctx, event }: { ctx: DeliveryContext; event: ProviderEvent }) => ({
      provider: ctx.provider,
      merchantAccountId: ctx.merchantAccountId,
      captureId: event.resourceId,
    });
    const naming = items.filter((i) => i.event.resourceKind === 'capture');
    if (naming.length === 0) return items.map((i) => i.event);
    const found = await this.captures.paymentsOf(em, naming.map(keyOf));
    return items.map((item) => {
      if (item.event.resourceKind !== 'capture') return item.event;
      const payment = PaymentCapturesStore.paymentIn(found, keyOf(item));
      return payment === undefined ? item.event : { ...item.event, resourceId: payment, resourceKind: 'payment' };
    });
  }

  /**
   * Which of a provider's payments are registered for an order under one of `accounts` (outside any
   * transaction: the receive path asks it of the payment ids unsigned deliveries name).
   */
  registeredAmong(db: Queryable, query: { provider: string; accounts: readonly string[]; providerPaymentIds: readonly string[] }): Promise<string[]> {
    return this.store.registeredAmong(db, query);
  }

  /**
   * Locks, for a batch of deliveries about to be applied in one transaction, every payment and
   * order they may touch: payments in key order, then orders in id order, each in one statement
   * (the order every transaction takes its locks in: inbox rows, payments, orders).
   */
  async prefetch(em: EntityManager, deliveries: ReadonlyArray<{ ctx: DeliveryContext; event: ProviderEvent }>): Promise<void> {
    const keyOf = ({ ctx, event }: { ctx: DeliveryContext; event: ProviderEvent }) => ({
      provider: ctx.provider,
      merchantAccountId: ctx.merchantAccountId,
      providerPaymentId: event.resourceId,
    });
    await this.store.lockPayments(em, deliveries.map(keyOf));
    const orderIds: string[] = [];
    // The orders a new payment may be attached to: what their payments' accounts are is read too.
    const toAttach: string[] = [];
    const named: ProviderEvent[] = [];
    for (const d of deliveries) {
      const payment = await this.store.lockPayment(em, keyOf(d)); // from the identity map, no round trip
      if (payment) orderIds.push(payment.orderId);
      else if (d.event.orderId !== null && UUID.test(d.event.orderId)) toAttach.push(d.event.orderId);
      else if (d.event.orderReference) named.push(d.event);
    }
    if (named.length > 0) {
      const byReference = await this.store.orderIdsByReference(em, named.map((e) => e.orderReference as string));
      for (const e of named) {
        const id = await this.orderIdOf(em, e, byReference);
        if (id !== null) toAttach.push(id);
      }
    }
    await this.store.lockOrders(em, [...orderIds, ...toAttach]);
    // After the locks, so that a payment another transaction attached before letting go is seen.
    await this.store.readAttachedAccounts(em, toAttach);
  }

  /**
   * The id of the order an event names: its `orderId` (our id); else its `orderReference`, the
   * merchant's reference the provider echoes (Adyen `merchantReference`), which is an order's
   * `reference` or, failing that, its id. An `orderId` that is not one of our ids (a shop's own
   * metadata in the same field) gives way to the reference, when the event carries one.
   */
  private async orderIdOf(em: EntityManager, event: ProviderEvent, known?: ReadonlyMap<string, string>): Promise<string | null> {
    if (event.orderId !== null && UUID.test(event.orderId)) return event.orderId;
    const reference = event.orderReference;
    if (!reference) return null;
    const byReference = known ?? (await this.store.orderIdsByReference(em, [reference]));
    return byReference.get(reference) ?? (UUID.test(reference) ? reference : null);
  }

  async apply(em: EntityManager, ctx: DeliveryContext, event: ProviderEvent, parkUnmatched: boolean): Promise<EventOutcome> {
    if (event.declaredAccount !== null && event.declaredAccount !== ctx.merchantAccountId) {
      return { status: 'rejected', outcome: 'account_mismatch' };
    }
    const served = ctx.servedAccounts;
    if (served !== undefined && served !== '*' && !served.includes(ctx.merchantAccountId)) {
      return { status: 'rejected', outcome: 'account_mismatch' };
    }

    const found = await this.findPayment(em, ctx, event);
    // The account boundary comes before the lifecycle: an event of an account its order does not
    // expect changes nothing, not even the payment it would have attached.
    if (found && 'refused' in found) return { status: 'rejected', outcome: found.refused };
    if (!found) {
      // The webhook may have beaten the checkout that registers its payment: retry a few times
      // (the queue's backoff, seconds), then park it; a registration releases it at once.
      if (!parkUnmatched) {
        throw new DomainError('PAYMENT.NOT_FOUND_YET', `no payment ${event.resourceId} registered yet`);
      }
      return { status: 'unmatched', outcome: 'payment_not_found' };
    }
    const { payment, isNew } = found;
    // The outcome of a refund the provider made before the worker recorded its answer (the id it
    // names is unknown while a refund of the payment is `requested`): too early, as a refund before
    // its capture, and nothing changes. The refund's next move (its answer recorded, or its failure)
    // opens the delivery again (DeliveryReactions), and it then finds the refund.
    if (!isNew && (await this.refunds.mayConfirmUnrecordedRefund(em, payment, event))) {
      return { status: 'rejected', outcome: 'illegal_transition' };
    }

    const parsed = toPaymentChange(event);
    if (!parsed.ok) return { status: 'rejected', outcome: parsed.reason };

    const now = new Date();
    const result = payment.apply(parsed.change, now);
    // A rejected event changes nothing: not even the payment its order id would have created.
    if (result.outcome === 'rejected') return { status: 'rejected', outcome: result.reason };
    // Whatever the lifecycle made of it, the capture is this payment's: its refunds and disputes find it.
    if (event.captureId) {
      await this.captures.record(em, { provider: ctx.provider, merchantAccountId: ctx.merchantAccountId, captureId: event.captureId, providerPaymentId: payment.providerPaymentId });
    }
    // The refunds the module asked for that this event confirms or fails (matched by the provider's
    // refund id, on this payment only): also when the payment itself had it already.
    const refundsMoved = isNew ? 0 : await this.refunds.applyOutcomes(em, payment, event, causeOf(ctx), ctx.eventId);
    if (result.outcome !== 'applied') {
      // The payment was already there, but a refund moved: the delivery applied that (a Mollie fetch
      // whose only news is a refund that ended, as a Stripe refund.updated).
      if (refundsMoved > 0 && result.outcome === 'already_applied') return { status: 'processed', outcome: 'applied' };
      // A payment this event creates is registered all the same (its parked deliveries hear of it).
      if (isNew) await this.changes.save(em, { payment, newPayment: true, sourceEventId: ctx.eventId, cause: causeOf(ctx) });
      return { status: 'processed', outcome: result.outcome };
    }
    const order = await this.store.lockOrder(em, payment.orderId);
    order?.followPayment(payment, now);
    await this.changes.save(em, { order, payment, newPayment: isNew, sourceEventId: ctx.eventId, cause: causeOf(ctx) });
    return { status: 'processed', outcome: 'applied' };
  }

  /**
   * The registered payment, locked; or, when the event carries the id of an order we have and that
   * order admits a payment of the event's account, a new payment for it expecting the order's
   * amount (not yet written). A registered payment needs no such check: it was admitted when it was
   * attached. Two creators at once (another event, a registration) are settled by the payment's
   * unique key: the insert of the second finds the first, and its transaction is retried, to find
   * that payment.
   */
  private async findPayment(
    em: EntityManager,
    ctx: DeliveryContext,
    event: ProviderEvent,
  ): Promise<{ payment: Payment; isNew: boolean } | { refused: PaymentRefusal } | null> {
    const key = { provider: ctx.provider, merchantAccountId: ctx.merchantAccountId, providerPaymentId: event.resourceId };
    const existing = await this.store.lockPayment(em, key);
    if (existing) return { payment: existing, isNew: false };
    // A capture whose payment is not known: nothing to attach to an order (the capture's own event does that).
    if (event.resourceKind === 'capture') return null;
    const orderId = await this.orderIdOf(em, event);
    if (orderId === null) return null;

    const order = await this.store.lockOrder(em, orderId);
    if (!order) return null;
    // On an endpoint of many accounts the account is the body's own word; on one of a single
    // account it is the endpoint's, whose secret vouches for it.
    const source = ctx.servedAccounts === undefined ? 'vouched' : 'declared';
    const refused = order.refusesPayment(ctx.merchantAccountId, await this.store.attachedAccounts(em, order.id), source);
    if (refused) return { refused };
    return { payment: Payment.register({ orderId: order.id, ...key, expected: order.amount }), isNew: true };
  }
}
