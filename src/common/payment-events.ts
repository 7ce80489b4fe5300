/**
 * The events the module announces to its host: their types and their body. Contract
 * types only, shared by the context that makes them (payments), the one that delivers them
 * (events) and the host's code.
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
] as const;

export type PaymentEventType = (typeof PAYMENT_EVENT_TYPES)[number];

export function isPaymentEventType(value: unknown): value is PaymentEventType {
  return typeof value === 'string' && (PAYMENT_EVENT_TYPES as readonly string[]).includes(value);
}

export interface ShipTo {
  name: string;
  line1: string;
  line2?: string;
  city: string;
  postalCode: string;
  country: string;
}

export interface OrderItem {
  sku: string;
  quantity: number;
}

/** Where an order's one fulfillment stands (the `fulfillment.status` of an Order). */
export const FULFILLMENT_STATUSES = ['requested', 'dispatched', 'failed'] as const;
export type FulfillmentStatus = (typeof FULFILLMENT_STATUSES)[number];

/** A Payment as the REST API shows it. */
export interface PaymentSnapshot {
  id: string;
  orderId: string;
  provider: string;
  providerPaymentId: string;
  merchantAccountId: string;
  status: string;
  amount: string;
  currency: string;
  refundedAmount: string;
  createdAt: string;
  updatedAt: string;
}

/** An Order as the REST API shows it, without its payments. */
export interface OrderSnapshot {
  id: string;
  reference: string | null;
  status: string;
  amount: string;
  currency: string;
  carrier: string;
  /** The merchant account whose payments the order accepts, or null when it names none. */
  merchantAccountId: string | null;
  shipTo: ShipTo;
  items: OrderItem[];
  fulfillment: { id: string; status: FulfillmentStatus; carrier: string; shipmentId: string | null } | null;
  createdAt: string;
  updatedAt: string;
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
  };
}
