import { Injectable, OnModuleInit } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { BeforeCommitBatch } from '../database/transaction';
import { currentCause, type HistoryCause } from '../common/history';
import type { OrderSnapshot } from '../common/order-views';
import { DomainError } from '../common/domain-error';
import { OutboxHandlers } from '../outbox/outbox-handler';
import { OutboxStore } from '../outbox/outbox.store';
import { OutboxWriter } from '../outbox/outbox-writer';
import { TransactionEvents } from '../outbox/transaction-events';
import { Fulfillment } from './fulfillment.entity';
import { FulfillmentMove, FulfillmentStore } from './fulfillment.store';

export const FULFILLMENT_DISPATCH = 'fulfillment.dispatch';

/** The payload of a `fulfillment.dispatch` message. */
/** A move to write, and its cause. */
type CausedMove = FulfillmentMove & { cause: HistoryCause };

export interface FulfillmentDispatchPayload {
  fulfillmentId: string;
  orderId: string;
}

/**
 * The Fulfillment aggregate's use cases, as reactions inside the transactions that change an
 * order: an order that became paid requests its one fulfillment (and the outbox message that
 * ships it); an order refunded before its shipment left cancels it. Each change of a fulfillment
 * is announced in the same transaction (the order keeps track of it).
 */
@Injectable()
export class FulfillmentService implements OnModuleInit {
  /** The transaction's requested fulfillments, inserted at its end in one statement. */
  private readonly requests = new BeforeCommitBatch<Fulfillment>((em, fulfillments) =>
    this.store.insertRequested(em, fulfillments, (inserted) => {
      if (inserted < fulfillments.length) throw new Error('an order already has its fulfillment: refusing a second one');
    }),
  );

  /** The transaction's moves, written at its end in one statement; each announced only if written. */
  private readonly moves = new BeforeCommitBatch<CausedMove>((em, moves) =>
    this.store.saveMoves(em, moves, async (written) => {
      for (const { fulfillment, cause } of moves) if (written.has(fulfillment.id)) await this.announce(em, fulfillment, cause);
    }),
  );

  constructor(
    private readonly events: TransactionEvents,
    private readonly outbox: OutboxWriter,
    private readonly store: FulfillmentStore,
    private readonly messages: OutboxStore,
    handlers: OutboxHandlers,
  ) {
    handlers.declareWritten(FULFILLMENT_DISPATCH, 'fulfillment');
  }

  onModuleInit(): void {
    this.events.on(['order.paid'], (event, em) => this.request(em, event.data.order));
    this.events.on(['order.refunded', 'order.canceled'], (event, em) => this.stop(em, event.data.order.id, `order ${event.data.order.status}`));
    this.events.on(['internal.fulfillment.stop-requested'], (event, em) => this.stopBeforeDispatch(em, event.orderId, event.reason, event.cause));
  }

  /**
   * Requests the order's one fulfillment, and its outbox message, in the caller's transaction
   * (written at its end with every other one it requests). An order becomes paid once (its row lock
   * serialises every path there), so a second request is a bug: `UNIQUE(order_id)` refuses it, and
   * the transaction rolls back rather than ship twice.
   */
  async request(em: EntityManager, order: OrderSnapshot): Promise<string> {
    const fulfillment = Fulfillment.request(order);
    this.requests.add(em, fulfillment);
    this.outbox.writeAtCommit(em, {
      type: FULFILLMENT_DISPATCH,
      payload: { fulfillmentId: fulfillment.id, orderId: order.id } satisfies FulfillmentDispatchPayload,
      // The carrier's Idempotency-Key is the fulfillment id, forever: one message per fulfillment.
      idempotencyKey: fulfillment.id,
    });
    // Requested by whatever made the order paid (a delivery, the support path).
    await this.announce(em, fulfillment, currentCause(em));
    return fulfillment.id;
  }

  /**
   * A requested fulfillment of an order whose money went back never ships. One this transaction
   * requested (the order paid and refunded in one batch) is not written yet: it is stopped before it
   * is, and written with its stop. Otherwise the row is taken without waiting: a dispatch recording
   * its answer holds it and then the order (the other lock order), so rather than risk a deadlock
   * this transaction fails and is retried.
   */
  private async stop(em: EntityManager, orderId: string, reason: string): Promise<void> {
    const requested = this.requests.pendingIn(em).find((f) => f.orderId === orderId);
    if (requested) {
      requested.stop(reason);
      return;
    }
    const fulfillment = await this.store.lockOfOrder(em, orderId);
    if (fulfillment?.stop(reason)) await this.store.saveStop(em, fulfillment);
  }

  /**
   * The shop calls the shipment off (a paid order canceled with a refund): decided under the lock
   * the dispatch's claim takes on its outbox message, so a claim either came first (its call may
   * have begun: `FULFILLMENT.ALREADY_DISPATCHED`, and the caller's transaction rolls back) or waits
   * for this one and finds the message given up. The fulfillment is stopped and `failed` at once;
   * the carrier is never called.
   */
  private async stopBeforeDispatch(em: EntityManager, orderId: string, reason: string, cause: HistoryCause): Promise<void> {
    const id = await this.store.idOfOrder(em, orderId);
    if (id === null) return;
    // The message first (a dispatch recording its answer holds it, then the fulfillment, then the order).
    const message = await this.messages.lockByKey(em, id);
    if (message?.begun) throw new DomainError('FULFILLMENT.ALREADY_DISPATCHED', 'the shipment has begun');
    const fulfillment = await this.store.lockOfOrder(em, orderId);
    if (!fulfillment) return;
    if (fulfillment.status === 'dispatched') throw new DomainError('FULFILLMENT.ALREADY_DISPATCHED', 'the shipment has begun');
    const from = fulfillment.status;
    if (fulfillment.stop(reason)) await this.store.saveStop(em, fulfillment);
    if (fulfillment.failed(reason)) this.saveMove(em, fulfillment, from, cause);
    if (message?.status === 'pending') await this.messages.giveUp(em, message.id, reason);
  }

  /**
   * Saves a move of the fulfillment's status at the end of the caller's transaction: written only
   * if the row is still in the status the move started from (whoever moved it first wins; the
   * other writes nothing), and announced only then. The stop reason is the refund's to write,
   * never overwritten.
   */
  saveMove(em: EntityManager, fulfillment: Fulfillment, from: Fulfillment['status'], cause: HistoryCause): void {
    this.moves.add(em, { fulfillment, from, cause });
  }

  /** Announces a change, with the moves it made (the order's history records them, with their cause). */
  private announce(em: EntityManager, f: Fulfillment, cause: HistoryCause): Promise<void> {
    return this.events.publish(em, {
      type: 'internal.fulfillment.changed',
      fulfillment: { id: f.id, orderId: f.orderId, status: f.status, carrier: f.carrier, shipmentId: f.shipmentId },
      moves: f.takeMoves(),
      cause,
    });
  }
}
