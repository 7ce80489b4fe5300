import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { HistoryCause } from '../common/history';
import { newPaymentEvent } from '../common/host-events';
import type { ProviderEvent } from '../common/provider-event';
import { TransactionEvents } from '../outbox/transaction-events';
import { OrderHistoryStore } from './order-history.store';
import type { Payment } from './payment.entity';
import { PaymentStore, paymentView } from './payment-store';
import { Refund } from './refund.entity';
import type { RefundStatus } from './refund.state';
import { RefundStore, refundView } from './refund.store';

/** The outcomes of refunds an event states, by the provider's refund id. */
function outcomesOf(event: ProviderEvent): Map<string, { status: 'succeeded' | 'failed'; reason: string | null }> {
  const outcomes = new Map<string, { status: 'succeeded' | 'failed'; reason: string | null }>();
  if (event.refund?.id && (event.kind === 'refunded' || event.kind === 'canceled')) outcomes.set(event.refund.id, { status: 'succeeded', reason: null });
  for (const o of event.refundOutcomes ?? []) {
    if (typeof o?.id === 'string' && o.id !== '' && (o.status === 'succeeded' || o.status === 'failed')) {
      outcomes.set(o.id, { status: o.status, reason: typeof o.reason === 'string' ? o.reason : null });
    }
  }
  return outcomes;
}

/**
 * The Refund aggregate's unit of work: where a refund is inserted or moved, and where its moves
 * join the order's history and become `refund.*` events, all in the caller's transaction. A move
 * that was not written (another writer moved the refund first) is neither recorded nor announced.
 */
@Injectable()
export class RefundsService {
  constructor(
    private readonly refunds: RefundStore,
    private readonly payments: PaymentStore,
    private readonly history: OrderHistoryStore,
    private readonly events: TransactionEvents,
  ) {}

  /** Inserts a requested refund, with its creation in the history and `refund.requested`. */
  async insert(em: EntityManager, refund: Refund, cause: HistoryCause, payment: Payment): Promise<void> {
    await this.refunds.insert(em, refund);
    await this.recorded(em, refund, cause, null, payment);
  }

  /** Writes a move of a refund read in `from`; true when written (and then recorded and announced). */
  async saveMove(em: EntityManager, refund: Refund, from: RefundStatus, cause: HistoryCause, sourceEventId: string | null, payment?: Payment): Promise<boolean> {
    if (!(await this.refunds.saveMove(em, refund, from))) {
      refund.takeMoves();
      refund.takeChanges();
      return false;
    }
    await this.recorded(em, refund, cause, sourceEventId, payment);
    return true;
  }

  /**
   * What a provider event says of the refunds this module asked for on `payment` (locked by the
   * caller): each one it names by `providerRefundId` succeeds or fails as the event says. A refund of
   * its own amount (`event.refund`, applied or already applied) confirms itself. Returns how many
   * refunds moved.
   */
  async applyOutcomes(em: EntityManager, payment: Payment, event: ProviderEvent, cause: HistoryCause, sourceEventId: string): Promise<number> {
    const outcomes = outcomesOf(event);
    if (outcomes.size === 0) return 0;
    const named = await this.refunds.lockByProviderIds(em, payment.id, [...outcomes.keys()]);
    let moved = 0;
    const now = new Date();
    for (const refund of named) {
      const outcome = outcomes.get(refund.providerRefundId!)!;
      const from = refund.status;
      const changed = outcome.status === 'succeeded' ? refund.succeeded(null, now) : refund.failed(outcome.reason ?? 'the provider reports the refund failed', now);
      if (changed && (await this.saveMove(em, refund, from, cause, sourceEventId, payment))) moved++;
    }
    return moved;
  }

  /**
   * Whether `event` may confirm a refund of the payment whose provider id is not recorded yet: it
   * names a provider refund id none of the payment's refunds carries, while one of them is still
   * `requested`. The provider may have made that refund and sent its webhook before the worker
   * recorded its answer; applied now, the event would find no refund to confirm, and the refund
   * would stay `submitted` for good. The caller refuses it as too early; the refund's next move
   * opens it again. The `requested` refunds are read before the named ones: an answer committed in
   * between is then seen by the second read.
   */
  async mayConfirmUnrecordedRefund(em: EntityManager, payment: Payment, event: ProviderEvent): Promise<boolean> {
    const ids = [...outcomesOf(event).keys()];
    if (ids.length === 0) return false;
    if (!(await this.refunds.hasRequested(em, payment.id))) return false;
    const known = new Set((await this.refunds.lockByProviderIds(em, payment.id, ids)).map((r) => r.providerRefundId));
    return ids.some((id) => !known.has(id));
  }

  /**
   * What may still be refunded of a payment (locked by the caller): its amount, less what the
   * provider says is refunded (or the refunds it confirmed, when more), less the refunds on their way.
   */
  async refundable(em: EntityManager, payment: Payment): Promise<bigint> {
    const { outstandingMinor, succeededMinor } = await this.refunds.amountsOfPayment(em, payment.id);
    const refunded = payment.refundedMinor > succeededMinor ? payment.refundedMinor : succeededMinor;
    const left = payment.amountMinor - refunded - outstandingMinor;
    return left > 0n ? left : 0n;
  }

  /** The refund's moves into the history, and its events, in the caller's transaction. */
  private async recorded(em: EntityManager, refund: Refund, cause: HistoryCause, sourceEventId: string | null, known?: Payment): Promise<void> {
    this.history.append(
      em,
      refund.takeMoves().map((m) => ({ orderId: refund.orderId, entity: 'refund' as const, entityId: refund.id, from: m.from, to: m.to, at: m.at, cause })),
    );
    const types = refund.takeChanges();
    if (types.length === 0) return;
    const order = await this.payments.snapshotOf(em, refund.orderId);
    if (!order) return;
    const payment = known ?? (await this.payments.findPayment(em, refund.paymentId));
    const view = refundView(refund);
    const published = types.map((type) => newPaymentEvent(type, { order, payment: payment ? paymentView(payment) : null, sourceEventId, refund: view }));
    await this.events.publish(em, ...published);
  }
}
