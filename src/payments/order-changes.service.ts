import { Injectable, OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { type HistoryCause, type HistoryEntry, withCause } from '../common/history';
import { newPaymentEvent, type OrderEventType, type PaymentWebhooksEvent } from '../common/host-events';
import type { FulfillmentChangedEvent } from '../common/internal-events';
import type { RecordedMove } from '../common/lifecycle';
import type { OrderSnapshot, PaymentSnapshot } from '../common/order-views';
import { BeforeCommitBatch } from '../database/transaction';
import { TransactionEvents } from '../outbox/transaction-events';
import { OrderHistoryStore } from './order-history.store';
import type { Order } from './order.entity';
import { type ChangedRows, orderSnapshot, PaymentStore, paymentView } from './payment-store';

/** What a use case changed, to save and announce in its transaction (a new payment's registration too). */
export interface Changes extends ChangedRows {
  /** The provider event that caused the change; null for an API action. */
  sourceEventId: string | null;
  /** Why: what the order's history records with each move saved (and with the moves its reactions make). */
  cause: HistoryCause;
}

/** A change of a fulfillment, and its cause (the order's moves that follow it have the same). */
type FulfillmentChange = FulfillmentChangedEvent['fulfillment'] & { cause: HistoryCause };

/**
 * The changes of orders and their payments, as the use cases make them, in their transaction:
 * the rows handed to `PaymentStore` (written at its end), each move appended to the order's
 * history, and each applied move announced as an event (docs/events.md), published in the same
 * transaction, so an event exists if and only if its change committed; a move that was not applied
 * announces nothing. It also keeps an order's copy of its fulfillment in step with the
 * fulfillment's own events, so Fulfillment never imports Payments.
 */
@Injectable()
export class OrderChangesService implements OnModuleInit {
  /** Fulfillment changes of orders the transaction has not locked yet (a batch of dispatches): locked together at its end. */
  private readonly fulfillmentsToFollow = new BeforeCommitBatch<FulfillmentChange>((em, changes) => this.followFulfillments(em, changes));

  constructor(
    private readonly store: PaymentStore,
    private readonly events: TransactionEvents,
    private readonly history: OrderHistoryStore,
  ) {}

  onModuleInit(): void {
    // The shipment left: the order is fulfilled (and announces it). Any change of the fulfillment is
    // copied onto the order, for its views.
    this.events.on(['internal.fulfillment.changed'], async ({ fulfillment, moves, cause }, em) => {
      // The fulfillment's moves join its order's history (announced only once they are written).
      this.history.append(em, historyOf(fulfillment.orderId, 'fulfillment', fulfillment.id, moves, cause));
      const known = this.store.lockedOrder(em, fulfillment.orderId);
      if (known) return this.followFulfillment(em, known, { ...fulfillment, cause });
      this.fulfillmentsToFollow.add(em, { ...fulfillment, cause });
    });
  }

  /** Inserts a placed order, and its creation into its history; false when its reference is taken. */
  async insertOrder(em: EntityManager, order: Order, cause: HistoryCause): Promise<boolean> {
    if (!(await this.store.insertOrder(em, order))) return false;
    this.history.append(em, historyOf(order.id, 'order', order.id, order.takeMoves(), cause));
    return true;
  }

  /**
   * Saves what a use case changed: written at the end of the transaction (with everything else it
   * changes, in one flush), announced now, in it: the payment's moves first, then the order's
   * (`payment.succeeded` before `order.paid`). The commit is the transaction's.
   */
  async save(em: EntityManager, changes: Changes): Promise<void> {
    const { order, payment } = changes;
    this.store.writeAtCommit(em, changes);
    // The moves, in the history, written with the rows (the payment's first: it moved the order).
    if (payment) this.history.append(em, historyOf(payment.orderId, 'payment', payment.id, payment.takeMoves(), changes.cause));
    if (order) this.history.append(em, historyOf(order.id, 'order', order.id, order.takeMoves(), changes.cause));

    // What the announcements' listeners move (the fulfillment an order's payment requests) has the same cause.
    await withCause(em, changes.cause, () => this.announce(em, changes));
  }

  private async announce(em: EntityManager, changes: Changes): Promise<void> {
    const { order, payment } = changes;
    if (payment && changes.newPayment) {
      await this.events.publish(em, {
        type: 'internal.payment.registered',
        payment: { id: payment.id, provider: payment.provider, merchantAccountId: payment.merchantAccountId, providerPaymentId: payment.providerPaymentId },
        sourceEventId: changes.sourceEventId,
      });
    }
    const orderNow = order ? orderSnapshot(order) : payment ? await this.store.snapshotOf(em, payment.orderId) : null;
    if (!orderNow) return;
    const paymentNow = payment ? paymentView(payment) : null;
    const published: PaymentWebhooksEvent[] = [
      ...(payment?.takeChanges() ?? []).map((type) => event(type, orderNow, paymentNow, changes.sourceEventId)),
      ...(order?.takeChanges() ?? []).map((type) =>
        // An order move caused by a payment carries it; one by an API action or a shipment does not.
        event(type, orderNow, type === 'order.fulfilled' ? null : paymentNow, changes.sourceEventId),
      ),
    ];
    if (published.length > 0) await this.events.publish(em, ...published);
  }

  private async followFulfillments(em: EntityManager, changes: FulfillmentChange[]): Promise<void> {
    // The last change of each order is the one it keeps.
    const latest = new Map(changes.map((c) => [c.orderId, c]));
    await this.store.lockOrders(em, [...latest.keys()]);
    for (const change of latest.values()) {
      const order = this.store.lockedOrder(em, change.orderId);
      if (order) await this.followFulfillment(em, order, change);
    }
  }

  private async followFulfillment(em: EntityManager, order: Order, fulfillment: FulfillmentChange): Promise<void> {
    const now = new Date();
    order.trackFulfillment({ id: fulfillment.id, status: fulfillment.status, carrier: fulfillment.carrier, shipmentId: fulfillment.shipmentId }, now);
    if (fulfillment.status === 'dispatched') order.markFulfilled(now);
    // The order is fulfilled by what dispatched its fulfillment (the carrier's answer).
    await this.save(em, { order, sourceEventId: null, cause: fulfillment.cause });
  }
}

/** The moves of one aggregate as history entries of its order. */
function historyOf(orderId: string, entity: HistoryEntry['entity'], entityId: string, moves: readonly RecordedMove[], cause: HistoryCause): HistoryEntry[] {
  return moves.map((m) => ({ orderId, entity, entityId, from: m.from, to: m.to, at: m.at, cause }));
}

/** A public event of an order (and the payment that moved it), as published. */
function event(type: OrderEventType, order: OrderSnapshot, payment: PaymentSnapshot | null, sourceEventId: string | null): PaymentWebhooksEvent {
  return newPaymentEvent(type, { order, payment, sourceEventId });
}
