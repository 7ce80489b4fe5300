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
  // (v4) Endpoint health (docs/operations.md#endpoint-health): no order, no payment.
  'endpoint.silent',
  'endpoint.resumed',
] as const;

export type PaymentEventType = (typeof PAYMENT_EVENT_TYPES)[number];

export function isPaymentEventType(value: unknown): value is PaymentEventType {
  return typeof value === 'string' && (PAYMENT_EVENT_TYPES as readonly string[]).includes(value);
}

/** The types about an endpoint rather than an order: `data.endpoint`, and `order` and `payment` null. */
export type EndpointEventType = Extract<PaymentEventType, `endpoint.${string}`>;

/** The types about an order (and its payment, refund or fulfillment): every type but `endpoint.*`. */
export type OrderEventType = Exclude<PaymentEventType, EndpointEventType>;

/** The endpoint an `endpoint.*` event is about (docs/events.md#endpoint-events). */
export interface EndpointSnapshot {
  id: string;
  provider: string;
  /** When its silence began (an ISO 8601 instant): on `endpoint.resumed`, the silence that ended. */
  silentSince: string;
}

/** The body of an event about an order (every type but `endpoint.*`). */
export interface OrderEventData {
  order: OrderSnapshot;
  payment: PaymentSnapshot | null;
  /** The provider event that caused the change; null for an API action (mark-paid, cancel). */
  sourceEventId: string | null;
  /** (v4) The refund of a `refund.*` event; absent from the others. */
  refund?: RefundSnapshot;
  /** (v4) Why the provider refused a command (`payment.capture_failed`, `payment.void_failed`). */
  reason?: string;
}

/** (v4) The body of an `endpoint.*` event. */
export interface EndpointEventData {
  order: null;
  payment: null;
  sourceEventId: null;
  endpoint: EndpointSnapshot;
}

/**
 * One event. `id` is the event's own (a time-ordered UUID), the same on every
 * delivery of it: the key a subscriber deduplicates on. Its `data` depends on its type: an
 * `endpoint.*` event has no order. Without a type argument, an event about an order (what every
 * type but `endpoint.*` is); `PaymentWebhooksEvent<PaymentEventType>` is any event, which a `'*'`
 * subscriber receives once an endpoint has `silenceAlertSeconds` (docs/events.md#endpoint-events).
 */
export type PaymentWebhooksEvent<T extends PaymentEventType = OrderEventType> = T extends EndpointEventType
  ? { id: string; type: T; occurredAt: string; data: EndpointEventData }
  : { id: string; type: T; occurredAt: string; data: OrderEventData };

/** Any event: about an order, or (v4) about an endpoint. */
export type AnyPaymentEvent = PaymentWebhooksEvent<PaymentEventType>;
/** (v4) An event about an endpoint (`endpoint.silent`, `endpoint.resumed`). */
export type EndpointEvent = PaymentWebhooksEvent<EndpointEventType>;

/** A new event of `type` made now: its own time-ordered id, and `occurredAt` the same instant. */
export function newPaymentEvent<T extends OrderEventType>(type: T, data: OrderEventData): PaymentWebhooksEvent<T> {
  const now = Date.now();
  return { id: uuid7(now), type, occurredAt: new Date(now).toISOString(), data } as PaymentWebhooksEvent<T>;
}

/** A new `endpoint.*` event made now. */
export function newEndpointEvent<T extends EndpointEventType>(type: T, endpoint: EndpointSnapshot): PaymentWebhooksEvent<T> {
  const now = Date.now();
  return { id: uuid7(now), type, occurredAt: new Date(now).toISOString(), data: { order: null, payment: null, sourceEventId: null, endpoint } } as PaymentWebhooksEvent<T>;
}
