/**
 * How an order, its payments and its fulfillment look from outside: the shapes the REST API answers
 * with and the announced events carry, shared by the contexts that make them and the host's code.
 */

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

/** (v4) A Refund as the REST API shows it (docs/commands.md). */
export interface RefundSnapshot {
  id: string;
  orderId: string;
  paymentId: string;
  provider: string;
  amount: string;
  currency: string;
  reason: string | null;
  status: 'requested' | 'submitted' | 'succeeded' | 'failed';
  providerRefundId: string | null;
  failureReason: string | null;
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
