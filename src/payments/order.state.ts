/** The order lifecycle (CONTRACT §3), as data. */
export const ORDER_STATUSES = ['awaiting_payment', 'paid', 'fulfilled', 'canceled', 'refunded'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export const ORDER_TRANSITIONS: Readonly<Record<OrderStatus, readonly OrderStatus[]>> = {
  awaiting_payment: ['paid', 'canceled'],
  paid: ['fulfilled', 'refunded'],
  fulfilled: ['refunded'],
  canceled: [],
  refunded: [],
};

export type OrderMoveResult =
  | { outcome: 'applied'; from: OrderStatus; to: OrderStatus }
  | { outcome: 'already_applied'; from: OrderStatus }
  | { outcome: 'rejected'; from: OrderStatus; detail: string };

/** The one guard of the order: the status to write is the one this returns. */
export function decideOrderMove(from: OrderStatus, to: OrderStatus, alreadyThere: readonly OrderStatus[] = [to]): OrderMoveResult {
  if (alreadyThere.includes(from)) return { outcome: 'already_applied', from };
  if (ORDER_TRANSITIONS[from].includes(to)) return { outcome: 'applied', from, to };
  return { outcome: 'rejected', from, detail: `a ${from} order cannot become ${to}` };
}
