import { randomBytes } from 'node:crypto';
import { published } from '../../fixtures/paddle';
import type { ProviderApiStub, StubAnswer, StubRequest } from '../provider-api-stub';

/**
 * Paddle Billing's adjustments and transactions as the stub answers them (developer.paddle.com/api-reference):
 * `GET /transactions/{id}`, `GET /adjustments` (filtered by `transaction_id` and `action`, paged
 * with `per_page` and `after`), `POST /adjustments`. Paddle's API takes no idempotency key, so no
 * route has one: a second POST makes a second adjustment, as Paddle would. Each adjustment made is
 * an effect under the key its reason carries (`[pw:<key>]`), or null. Answers are Paddle's
 * envelopes: `{ data, meta }`, errors `{ error: { type, code, detail, documentation_url }, meta }`.
 */
export interface PaddleStubAdjustment {
  id: string;
  transaction_id: string;
  action: 'refund';
  type: 'full' | 'partial';
  reason: string;
  status: 'pending_approval' | 'approved' | 'rejected';
  items: Array<{ id: string; item_id: string; type: 'full' | 'partial'; amount: string; proration: null; totals: { subtotal: string; tax: string; total: string } }>;
  total: bigint;
  currency_code: string;
}

export interface PaddleStub {
  transactions: Map<string, Record<string, any>>;
  adjustments: PaddleStubAdjustment[];
  /** The status a new refund gets (a live account's await approval; a sandbox's are approved later). */
  newStatus: PaddleStubAdjustment['status'];
  /** A completed transaction the API knows: Paddle's published transaction.completed (65215 USD over two line items), under this id. */
  addTransaction(id: string): Record<string, any>;
}

const LOWER = 'abcdefghjkmnpqrstvwxyz0123456789';
/** A Paddle id: its prefix and 26 lower-case characters (`adj_01h8c6tbrkpdd7vx61w7b1r0ap`). */
export function paddleId(prefix: string): string {
  return `${prefix}_01${[...randomBytes(24)].map((b) => LOWER[b % LOWER.length]).join('')}`;
}

const meta = () => ({ request_id: `${randomBytes(4).toString('hex')}-stub` });
const paddleError = (status: number, type: 'request_error' | 'api_error', code: string, detail: string): StubAnswer => ({
  status,
  body: { error: { type, code, detail, documentation_url: `https://developer.paddle.com/v1/errors/shared/${code}` }, meta: meta() },
});
const keyOfReason = (reason: string) => /\[pw:([^\]]+)\]$/.exec(reason)?.[1] ?? null;

function adjustmentJson(a: PaddleStubAdjustment): Record<string, unknown> {
  const now = new Date().toISOString();
  const total = a.total.toString();
  const totals = { subtotal: total, tax: '0', total, fee: '0', earnings: total, currency_code: a.currency_code };
  return {
    id: a.id,
    action: a.action,
    type: a.type,
    transaction_id: a.transaction_id,
    subscription_id: null,
    customer_id: 'ctm_01h8441jn5pcwrfhwh78jqt8hk',
    reason: a.reason,
    credit_applied_to_balance: null,
    currency_code: a.currency_code,
    status: a.status,
    items: a.items,
    totals,
    payout_totals: totals,
    tax_rates_used: [],
    created_at: now,
    updated_at: now,
  };
}

/** Adds Paddle's transaction and adjustment routes to a stub; its transactions are registered with `addTransaction`. */
export function addPaddleRoutes(stub: ProviderApiStub): PaddleStub {
  const paddle: PaddleStub = {
    transactions: new Map(),
    adjustments: [],
    newStatus: 'pending_approval',
    addTransaction(id) {
      const transaction = { ...published('transaction.completed').data, id };
      paddle.transactions.set(id, transaction);
      return transaction;
    },
  };
  const unauthorized = (r: StubRequest) => !/^bearer .+/i.test(String(r.headers.authorization ?? ''));
  const UNAUTHORIZED = paddleError(403, 'request_error', 'authentication_missing', 'Authentication header missing');
  const notFound = (id: string) => paddleError(404, 'request_error', 'not_found', `Entity ${id} not found`);
  /** What live refunds already took of each line item. */
  const taken = (transactionId: string) => {
    const map = new Map<string, bigint>();
    for (const a of paddle.adjustments) {
      if (a.transaction_id !== transactionId || a.status === 'rejected') continue;
      for (const item of a.items) map.set(item.item_id, (map.get(item.item_id) ?? 0n) + BigInt(item.amount));
    }
    return map;
  };

  stub.route({
    method: 'GET',
    path: /^\/transactions\/(txn_[a-z0-9]+)$/,
    handle(request, match) {
      if (unauthorized(request)) return UNAUTHORIZED;
      const transaction = paddle.transactions.get(match[1]);
      return transaction ? { status: 200, body: { data: transaction, meta: meta() } } : notFound(match[1]);
    },
  });

  stub.route({
    method: 'GET',
    path: /^\/adjustments$/,
    handle(request) {
      if (unauthorized(request)) return UNAUTHORIZED;
      const query = new URL(request.url, 'http://stub').searchParams;
      const transactionIds = (query.get('transaction_id') ?? '').split(',').filter((t) => t !== '');
      const action = query.get('action');
      const perPage = Math.min(Number(query.get('per_page') ?? 50), 50);
      const after = query.get('after');
      const matching = paddle.adjustments.filter((a) => (transactionIds.length === 0 || transactionIds.includes(a.transaction_id)) && (action === null || a.action === action));
      const start = after === null ? 0 : matching.findIndex((a) => a.id === after) + 1;
      const page = matching.slice(start, start + perPage);
      const hasMore = start + perPage < matching.length;
      const next = new URL(`${stub.baseUrl}/adjustments`);
      for (const [k, v] of query) if (k !== 'after') next.searchParams.set(k, v);
      if (page.length > 0) next.searchParams.set('after', page[page.length - 1].id);
      return {
        status: 200,
        body: { data: page.map(adjustmentJson), meta: { ...meta(), pagination: { per_page: perPage, next: next.toString(), has_more: hasMore, estimated_total: matching.length } } },
      };
    },
  });

  stub.route({
    method: 'POST',
    path: /^\/adjustments$/,
    handle(request) {
      if (unauthorized(request)) return UNAUTHORIZED;
      const body = (request.json ?? {}) as { action?: string; transaction_id?: string; reason?: string; type?: string; items?: Array<{ item_id?: string; type?: string; amount?: string }> };
      if (body.action !== 'refund') return paddleError(400, 'request_error', 'bad_request', 'Only refunds are made by this stub');
      if (typeof body.reason !== 'string' || body.reason === '') return paddleError(400, 'request_error', 'bad_request', 'reason is required');
      const transaction = paddle.transactions.get(String(body.transaction_id));
      if (!transaction) return notFound(String(body.transaction_id));
      const lineItems = transaction.details.line_items as Array<{ id: string; totals: { total: string } }>;
      const already = taken(transaction.id);
      let items: PaddleStubAdjustment['items'];
      if (body.type === 'full') {
        if (already.size > 0) return paddleError(400, 'request_error', 'adjustment_transaction_full_refund_not_allowed', 'A full adjustment cannot be created for a transaction that already has refunds.');
        items = lineItems.map((l) => ({ id: paddleId('adjitm'), item_id: l.id, type: 'full', amount: l.totals.total, proration: null, totals: { subtotal: l.totals.total, tax: '0', total: l.totals.total } }));
      } else {
        items = [];
        for (const wanted of body.items ?? []) {
          const line = lineItems.find((l) => l.id === wanted.item_id);
          if (!line) return paddleError(400, 'request_error', 'adjustment_invalid_item', `Item ${String(wanted.item_id)} is not on the transaction`);
          const amount = /^\d+$/.test(String(wanted.amount)) ? BigInt(String(wanted.amount)) : -1n;
          if (amount <= 0n || amount > BigInt(line.totals.total) - (already.get(line.id) ?? 0n)) {
            return paddleError(400, 'request_error', 'adjustment_amount_above_remaining_allowed', `The amount for item ${line.id} is above what is left to adjust.`);
          }
          items.push({ id: paddleId('adjitm'), item_id: line.id, type: 'partial', amount: amount.toString(), proration: null, totals: { subtotal: amount.toString(), tax: '0', total: amount.toString() } });
        }
        if (items.length === 0) return paddleError(400, 'request_error', 'bad_request', 'items are required for a partial adjustment');
      }
      const adjustment: PaddleStubAdjustment = {
        id: paddleId('adj'),
        transaction_id: transaction.id,
        action: 'refund',
        type: body.type === 'full' ? 'full' : 'partial',
        reason: body.reason,
        status: paddle.newStatus,
        items,
        total: items.reduce((sum, i) => sum + BigInt(i.amount), 0n),
        currency_code: transaction.currency_code,
      };
      paddle.adjustments.push(adjustment);
      stub.effect('refund', keyOfReason(adjustment.reason), { id: adjustment.id, transactionId: adjustment.transaction_id, type: adjustment.type, total: adjustment.total.toString() });
      return { status: 201, body: { data: adjustmentJson(adjustment), meta: meta() } };
    },
  });
  return paddle;
}

/**
 * The `adjustment.updated` notification Paddle sends when a refund made through the stub is
 * approved (or rejected). Sign it with `signedHeaders('paddle', secret, body)` from the testing kit.
 */
export function paddleAdjustmentWebhook(adjustment: PaddleStubAdjustment, status: 'approved' | 'rejected' = 'approved'): string {
  adjustment.status = status;
  return JSON.stringify({
    event_id: paddleId('evt'),
    event_type: 'adjustment.updated',
    occurred_at: new Date().toISOString(),
    notification_id: paddleId('ntf'),
    data: adjustmentJson(adjustment),
  });
}
