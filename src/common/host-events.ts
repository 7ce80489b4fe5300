import type { OrderSnapshot, PaymentSnapshot, RefundSnapshot } from './order-views';
import { uuid7 } from './uuid7';

/**
 * The events the module announces to its host (docs/events.md): their types and their body,
 * shared by the context that makes them (payments), the one that delivers them (events) and the
 * host's code. Not to be confused with the events a provider sends (ProviderEvent) or the internal
 * ones between contexts (InternalEvent).
 */

export const PAYMENT_EVENT_TYPES = [
  'payment.processing',
  'payment.authorized',
  'payment.succeeded',
  'payment.partially_refunded',
  'payment.refunded',
  'payment.disputed',
  'payment.dispute_won',
  'payment.dispute_lost',
  'payment.failed',
  'payment.canceled',
  'payment.expired',
  'order.paid',
  'order.fulfilled',
  'order.refunded',
  'order.canceled',
  // (v4) Payment commands (docs/commands.md, docs/events.md#types).
  'refund.requested',
  'refund.submitted',
  'refund.succeeded',
  'refund.failed',
  'payment.capture_failed',
  'payment.void_failed',
] as const;

export type PaymentEventType = (typeof PAYMENT_EVENT_TYPES)[number];

export function isPaymentEventType(value: unknown): value is PaymentEventType {
  return typeof value === 'string' && (PAYMENT_EVENT_TYPES as readonly string[]).includes(value);
}

/**
 * One event. `id` is the event's own (a time-ordered UUID), the same on every
 * delivery of it: the key a subscriber deduplicates on.
 */
export interface PaymentWebhooksEvent<T extends PaymentEventType = PaymentEventType> {
  id: string;
  type: T;
  occurredAt: string;
  data: {
    order: OrderSnapshot;
    payment: PaymentSnapshot | null;
    /** The provider event that caused the change; null for an API action (mark-paid, cancel). */
    sourceEventId: string | null;
    /** (v4) The refund of a `refund.*` event; absent from the others. */
    refund?: RefundSnapshot;
    /** (v4) Why the provider refused a command (`payment.capture_failed`, `payment.void_failed`). */
    reason?: string;
  };
}

/** A new event of `type` made now: its own time-ordered id, and `occurredAt` the same instant. */
export function newPaymentEvent(type: PaymentEventType, data: PaymentWebhooksEvent['data']): PaymentWebhooksEvent {
  const now = Date.now();
  return { id: uuid7(now), type, occurredAt: new Date(now).toISOString(), data };
}
