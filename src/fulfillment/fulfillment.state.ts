import { canMove as lifecycleAllows, defineLifecycle } from '../common/lifecycle';
import { FULFILLMENT_STATUSES, type FulfillmentStatus } from '../common/order-views';

export { FULFILLMENT_STATUSES, type FulfillmentStatus } from '../common/order-views';

/** The fulfillment lifecycle (docs/carriers.md), as data. */
export const FULFILLMENT_LIFECYCLE = defineLifecycle<FulfillmentStatus>({
  name: 'fulfillment',
  statuses: FULFILLMENT_STATUSES,
  initial: ['requested'],
  moves: {
    // The carrier took it; it refused, every attempt failed, or the order no longer wants it.
    requested: ['dispatched', 'failed'],
    dispatched: [],
    // An operator's retry of its dead message asks again.
    failed: ['requested'],
  },
});
export const FULFILLMENT_TRANSITIONS = FULFILLMENT_LIFECYCLE.moves;

/** Whether `from` may become `to` (the status written is `to` only then). */
export function canMove(from: FulfillmentStatus, to: FulfillmentStatus): boolean {
  return lifecycleAllows(FULFILLMENT_LIFECYCLE, from, to);
}
