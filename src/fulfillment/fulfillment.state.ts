import type { FulfillmentStatus } from '../common/payment-events';

export { FULFILLMENT_STATUSES, type FulfillmentStatus } from '../common/payment-events';

/** The fulfillment lifecycle (ARCHITECTURE "Outbox, fulfillment and events"), as data. */
export const FULFILLMENT_TRANSITIONS: Readonly<Record<FulfillmentStatus, readonly FulfillmentStatus[]>> = {
  // The carrier took it; it refused, every attempt failed, or the order no longer wants it.
  requested: ['dispatched', 'failed'],
  dispatched: [],
  // An operator's retry of its dead message asks again.
  failed: ['requested'],
};

/** The one guard: whether `from` may become `to` (the status written is `to` only then). */
export function canMove(from: FulfillmentStatus, to: FulfillmentStatus): boolean {
  return FULFILLMENT_TRANSITIONS[from].includes(to);
}
