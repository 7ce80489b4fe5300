import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { InternalEvent, InternalEventType } from '../common/internal-events';
import { PAYMENT_EVENT_TYPES, type PaymentEventType, type AnyPaymentEvent, type PaymentWebhooksEvent } from '../common/host-events';
import { OutboxHandlers } from './outbox-handler';
import { OutboxWriter } from './outbox-writer';

export type TransactionEvent = AnyPaymentEvent | InternalEvent;
type EventType = PaymentEventType | InternalEventType;
type EventOf<T extends EventType> = T extends InternalEventType ? Extract<InternalEvent, { type: T }> : PaymentWebhooksEvent<Extract<T, PaymentEventType>>;

/** Called inside the transaction that makes the change, with its EntityManager. */
export type InTransactionListener<E extends TransactionEvent = TransactionEvent> = (event: E, em: EntityManager) => Promise<unknown> | unknown;

/** An after-commit subscriber (a host's method, an HTTP sink): one outbox message per event for it. */
export interface Subscription {
  /** Unique; the second half of each message's idempotency key (`<event id>:<name>`). */
  name: string;
  /** The public event types it receives (docs/events.md#types), or '*' for all. */
  types: readonly PaymentEventType[] | '*';
}

/** The outbox message type of a public event for an after-commit subscriber: `event.<event type>`. */
export function eventMessageType(type: PaymentEventType): string {
  return `event.${type}`;
}

/** The payload of such a message: the event, and whom it is for. */
export interface EventMessagePayload {
  event: AnyPaymentEvent;
  subscriber: string;
}

/**
 * Announces what a transaction changed, inside that transaction: in-transaction listeners run now,
 * with its EntityManager (a throw rolls the change back), and each after-commit subscriber gets an
 * outbox message written in the same transaction. So an event exists if and only if its change
 * committed. Listeners and subscriptions are registered at start.
 */
@Injectable()
export class TransactionEvents {
  private readonly listeners = new Map<string, Array<InTransactionListener<never>>>();
  private readonly subscriptions: Subscription[] = [];

  constructor(
    private readonly writer: OutboxWriter,
    private readonly handlers: OutboxHandlers,
  ) {}

  /** An in-transaction listener for these types (internal ones included), or '*' for every public event. */
  on(types: '*', listener: InTransactionListener<AnyPaymentEvent>): void;
  on<T extends EventType>(types: readonly T[], listener: InTransactionListener<EventOf<T>>): void;
  on(types: readonly EventType[] | '*', listener: InTransactionListener<never>): void {
    for (const type of types === '*' ? ['*'] : types) {
      const list = this.listeners.get(type) ?? [];
      list.push(listener as InTransactionListener<never>);
      this.listeners.set(type, list);
    }
  }

  subscribe(subscription: Subscription): void {
    if (this.subscriptions.some((s) => s.name === subscription.name)) {
      throw new Error(`two event subscribers are named "${subscription.name}"`);
    }
    this.subscriptions.push(subscription);
    const received = subscription.types === '*' ? PAYMENT_EVENT_TYPES : subscription.types;
    for (const type of received) this.handlers.declareWritten(eventMessageType(type), `subscriber ${subscription.name}`);
  }

  /** Publishes events in the caller's transaction, in order. */
  async publish(em: EntityManager, ...events: TransactionEvent[]): Promise<void> {
    if (!em.queryRunner?.isTransactionActive) {
      throw new Error('TransactionEvents.publish needs the EntityManager of an open transaction');
    }
    for (const event of events) {
      const listeners = [...(this.listeners.get(event.type) ?? []), ...(isPublic(event) ? (this.listeners.get('*') ?? []) : [])];
      for (const listener of listeners) await (listener as InTransactionListener)(event, em);
      if (!isPublic(event)) continue;
      for (const subscription of this.subscriptions) {
        if (subscription.types !== '*' && !subscription.types.includes(event.type)) continue;
        this.writer.writeAtCommit(em, {
          type: eventMessageType(event.type),
          payload: { event, subscriber: subscription.name } satisfies EventMessagePayload,
          idempotencyKey: `${event.id}:${subscription.name}`,
          // A subscriber's events of one order (or of one endpoint), in the order they were made (at their first attempt).
          orderingKey: `${subscription.name}:${event.data.order ? event.data.order.id : `endpoint:${event.data.endpoint.id}`}`,
        });
      }
    }
  }
}

function isPublic(event: TransactionEvent): event is AnyPaymentEvent {
  return !event.type.startsWith('internal.');
}
