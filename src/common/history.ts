/**
 * An order's history (docs/rest-api.md#order-history): every move of the order, its payments and
 * its fulfillment, with its cause, written in the transaction that makes the move.
 */

/** What a history item is about. */
export type HistoryEntity = 'order' | 'payment' | 'fulfillment' | 'refund';

/** The API actions that move something: each route's name. */
export type ApiAction = 'place' | 'mark-paid' | 'cancel' | 'register-payment' | 'retry' | 'refund' | 'capture';

/**
 * Why a move happened. `delivery`: a webhook's processing (`deliveryId` is the delivery's `id`, the
 * inbox row `GET /admin/webhook-deliveries/{id}` shows). `api`: a route. `carrier`: the carrier's
 * answer to a shipment. `backfill`: written by the migration that created the history, from what
 * the rows then told. `provider-api`: the answer of a provider's API to a payment command
 * (`commandId` the refund's id, or the command's message id). `poll` comes with polling.
 */
export type HistoryCause =
  | { kind: 'delivery'; deliveryId: string; eventId: string; provider: string }
  | { kind: 'api'; action: ApiAction }
  | { kind: 'carrier'; shipmentId: string | null }
  | { kind: 'provider-api'; commandId: string }
  | { kind: 'poll'; deliveryId: string }
  | { kind: 'backfill' };

/** One item of an order's history, as written. */
export interface HistoryEntry {
  orderId: string;
  entity: HistoryEntity;
  entityId: string;
  /** null: the thing was created by this move. */
  from: string | null;
  to: string;
  at: Date;
  cause: HistoryCause;
}

/**
 * The cause of the work a transaction is doing now: set by the unit of work while it announces what
 * it saved, so a reaction that moves something else (the fulfillment an order's payment requests)
 * records the same cause. Keyed by the transaction's EntityManager.
 */
const causes = new WeakMap<object, HistoryCause[]>();

export async function withCause<T>(tx: object, cause: HistoryCause, work: () => Promise<T>): Promise<T> {
  const stack = causes.get(tx) ?? [];
  causes.set(tx, stack);
  stack.push(cause);
  try {
    return await work();
  } finally {
    stack.pop();
  }
}

/** The cause of the transaction's current work; a move without one is a bug (no path may forget it). */
export function currentCause(tx: object): HistoryCause {
  const stack = causes.get(tx);
  const cause = stack?.[stack.length - 1];
  if (!cause) throw new Error('a move was made outside any unit of work that names its cause');
  return cause;
}
