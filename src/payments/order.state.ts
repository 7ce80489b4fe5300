import { canMove, defineLifecycle } from '../common/lifecycle';

/** The order lifecycle (docs/rest-api.md#order-lifecycle), as data. */
export const ORDER_STATUSES = ['awaiting_payment', 'paid', 'fulfilled', 'canceled', 'refunded'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export const ORDER_LIFECYCLE = defineLifecycle<OrderStatus>({
  name: 'order',
  statuses: ORDER_STATUSES,
  initial: ['awaiting_payment'],
  moves: {
    awaiting_payment: ['paid', 'canceled'],
    paid: ['fulfilled', 'refunded'],
    fulfilled: ['refunded'],
    canceled: [],
    refunded: [],
  },
});
export const ORDER_TRANSITIONS = ORDER_LIFECYCLE.moves;

export type OrderMoveResult =
  | { outcome: 'applied'; from: OrderStatus; to: OrderStatus }
  | { outcome: 'already_applied'; from: OrderStatus }
  | { outcome: 'rejected'; from: OrderStatus; detail: string };

/** The one guard of the order: the status to write is the one this returns. */
export function decideOrderMove(from: OrderStatus, to: OrderStatus, alreadyThere: readonly OrderStatus[] = [to]): OrderMoveResult {
  if (alreadyThere.includes(from)) return { outcome: 'already_applied', from };
  if (canMove(ORDER_LIFECYCLE, from, to)) return { outcome: 'applied', from, to };
  return { outcome: 'rejected', from, detail: `a ${from} order cannot become ${to}` };
}
