/**
 * What an order's history (CONTRACT §3.2, `GET /orders/{id}/history`) must be after any run, however
 * chaotic (duplicates, replays, retries, crashes): each change listed once, oldest first, and
 * consistent with the states the order, its payments, its fulfillment and its refunds stand in now.
 * Suites that drive many deliveries call it on every order they made, after their own checks.
 *
 * The checks, per entity (an entity's moves are made under its row's lock, so they form one chain):
 * - the first move creates it (`from` null), and each later `from` is the previous `to`;
 * - no two consecutive moves of it are the same `from`→`to`, and none goes from a status to itself;
 *   but a payment's move that changes its amounts and not its status (a partial refund after
 *   another: docs/rest-api.md#order-history) has `from` equal to `to`, and two of them in a row by
 *   two causes are two changes;
 * - one delivery makes a given move at most once (a duplicate or a replay adds nothing);
 * - its last `to` is the status it stands in now;
 * and for the order: the items are oldest first, every entity it holds now has a history, and the
 * history names no entity it does not hold.
 */
export interface HistoryItem {
  at: string;
  entity: 'order' | 'payment' | 'fulfillment' | 'refund';
  entityId: string;
  from: string | null;
  to: string;
  cause: Record<string, unknown>;
}

/** What an order and what it holds stand in now, by entity. */
export interface CurrentStates {
  order: { id: string; status: string };
  payments: Array<{ id: string; status: string }>;
  fulfillment: { id: string; status: string } | null;
  refunds: Array<{ id: string; status: string }>;
}

/** A GET on the module's API with the admin token: the status and the parsed body. */
export type ApiGet = (path: string) => Promise<{ status: number; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The problems of `items` against `current`, each a line naming the entity; none when the history is sound. */
export function historyProblems(items: readonly HistoryItem[], current: CurrentStates): string[] {
  const problems: string[] = [];
  for (let i = 1; i < items.length; i++) {
    if (items[i].at < items[i - 1].at) problems.push(`item ${i} (${describe(items[i])}) at ${items[i].at} comes after one at ${items[i - 1].at}`);
  }
  const byEntity = new Map<string, HistoryItem[]>();
  for (const item of items) {
    const key = `${item.entity} ${item.entityId}`;
    byEntity.set(key, [...(byEntity.get(key) ?? []), item]);
  }
  const now = new Map<string, string>([[`order ${current.order.id}`, current.order.status]]);
  for (const p of current.payments) now.set(`payment ${p.id}`, p.status);
  if (current.fulfillment) now.set(`fulfillment ${current.fulfillment.id}`, current.fulfillment.status);
  for (const r of current.refunds) now.set(`refund ${r.id}`, r.status);

  for (const [key, moves] of byEntity) {
    problems.push(...chainProblems(key, moves));
    const status = now.get(key);
    if (status === undefined) problems.push(`${key}: in the history, but the order holds no such ${moves[0].entity}`);
    else if (moves[moves.length - 1].to !== status) problems.push(`${key}: the history ends at ${moves[moves.length - 1].to}, but it is ${status}`);
  }
  for (const [key, status] of now) if (!byEntity.has(key)) problems.push(`${key}: ${status}, but the history has no move of it`);
  return problems;
}

/** One entity's moves: a chain from its creation, no move repeated, none made twice by one delivery. */
function chainProblems(key: string, moves: readonly HistoryItem[]): string[] {
  const problems: string[] = [];
  if (moves[0].from !== null) problems.push(`${key}: its first move is ${describe(moves[0])}, not its creation`);
  const byDelivery = new Set<string>();
  moves.forEach((move, i) => {
    const amountsOnly = move.entity === 'payment' && move.from === move.to;
    if (move.from === move.to && !amountsOnly) problems.push(`${key}: move ${i} goes from ${move.from} to itself`);
    const previous = moves[i - 1];
    if (previous) {
      const sameMove = previous.from === move.from && previous.to === move.to;
      if (sameMove && !(amountsOnly && !sameCause(previous, move))) problems.push(`${key}: moves ${i - 1} and ${i} are both ${describe(move)}`);
      if (move.from !== previous.to) problems.push(`${key}: move ${i} (${describe(move)}) does not start where move ${i - 1} (${describe(previous)}) ended`);
    }
    if (move.cause.kind === 'delivery') {
      const once = `${move.from}>${move.to}>${String(move.cause.deliveryId)}`;
      if (byDelivery.has(once)) problems.push(`${key}: delivery ${String(move.cause.deliveryId)} made ${describe(move)} twice`);
      byDelivery.add(once);
    }
  });
  return problems;
}

function sameCause(a: HistoryItem, b: HistoryItem): boolean {
  return JSON.stringify(a.cause) === JSON.stringify(b.cause);
}

function describe(item: HistoryItem): string {
  return `${item.from ?? '∅'}→${item.to}`;
}

/** The order's history and the states of what it holds, read through the API. */
export async function readHistoryAndStates(get: ApiGet, orderId: string): Promise<{ items: HistoryItem[]; current: CurrentStates }> {
  const [history, order] = await Promise.all([get(`/orders/${orderId}/history`), get(`/orders/${orderId}`)]);
  if (history.status !== 200) throw new Error(`GET /orders/${orderId}/history answered ${history.status}: ${JSON.stringify(history.body)}`);
  if (order.status !== 200) throw new Error(`GET /orders/${orderId} answered ${order.status}: ${JSON.stringify(order.body)}`);
  const refunds: Array<{ id: string; status: string }> = [];
  for (let cursor: string | null = null, first = true; first || cursor !== null; first = false) {
    const page = await get(`/orders/${orderId}/refunds?limit=100${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
    if (page.status !== 200) throw new Error(`GET /orders/${orderId}/refunds answered ${page.status}: ${JSON.stringify(page.body)}`);
    refunds.push(...(page.body.items as Array<{ id: string; status: string }>));
    cursor = page.body.nextCursor as string | null;
  }
  const { id, status, payments, fulfillment } = order.body as {
    id: string;
    status: string;
    payments: Array<{ id: string; status: string }>;
    fulfillment: { id: string; status: string } | null;
  };
  return {
    items: history.body.items as HistoryItem[],
    current: {
      order: { id, status },
      payments: payments.map((p) => ({ id: p.id, status: p.status })),
      fulfillment: fulfillment ? { id: fulfillment.id, status: fulfillment.status } : null,
      refunds: refunds.map((r) => ({ id: r.id, status: r.status })),
    },
  };
}

/** The problems of one order's history, read through the API (none when it is sound). */
export async function orderHistoryProblems(get: ApiGet, orderId: string): Promise<string[]> {
  const { items, current } = await readHistoryAndStates(get, orderId);
  return historyProblems(items, current);
}
