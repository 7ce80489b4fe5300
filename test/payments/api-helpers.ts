import request from 'supertest';
import { AUTH, TestApp } from '../support/app';

/** Shared by the `api-*` suites (CONTRACT §3): a valid order body, row counts, response shapes. */

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** A well-formed UUID that no row has. */
export const MISSING_ID = '00000000-0000-4000-8000-000000000000';

export interface OrderBody {
  reference?: string;
  amount: unknown;
  currency: unknown;
  carrier?: unknown;
  shipTo?: unknown;
  items?: unknown;
  [extra: string]: unknown;
}

export function orderBody(overrides: Partial<OrderBody> = {}): OrderBody {
  return {
    amount: '49.90',
    currency: 'EUR',
    shipTo: { name: 'Ada Lovelace', line1: '12 Analytical Row', city: 'London', postalCode: 'N1 9GU', country: 'GB' },
    items: [{ sku: 'SKU-42', quantity: 2 }],
    ...overrides,
  };
}

export function http(t: TestApp) {
  return request(t.app.getHttpServer());
}

/** POST /orders with a valid body; fails the test unless the answer is 201. */
export async function createOrder(t: TestApp, overrides: Partial<OrderBody> = {}): Promise<Record<string, any>> {
  const res = await http(t).post('/orders').set(AUTH).send(orderBody(overrides));
  if (res.status !== 201) throw new Error(`POST /orders answered ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** POST /orders/{id}/payments; fails the test unless the answer is 201. */
export async function registerPayment(
  t: TestApp,
  orderId: string,
  body: Record<string, unknown>,
): Promise<Record<string, any>> {
  const res = await http(t).post(`/orders/${orderId}/payments`).set(AUTH).send(body);
  if (res.status !== 201) throw new Error(`POST /orders/${orderId}/payments answered ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

export async function countRows(t: TestApp, table: string, where = 'true', params: unknown[] = []): Promise<number> {
  const [row] = await t.dataSource.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, params);
  return row.n;
}

/** The Order shape of a freshly placed order (CONTRACT §3), for `toEqual`. */
export function expectedNewOrder(body: OrderBody, amount: string): Record<string, unknown> {
  return {
    id: expect.stringMatching(UUID),
    reference: body.reference ?? null,
    status: 'awaiting_payment',
    amount,
    currency: body.currency,
    carrier: body.carrier ?? 'default',
    merchantAccountId: (body as { merchantAccountId?: string }).merchantAccountId ?? null,
    shipTo: body.shipTo,
    items: body.items,
    payments: [],
    fulfillment: null,
    createdAt: expect.stringMatching(ISO_INSTANT),
    updatedAt: expect.stringMatching(ISO_INSTANT),
  };
}
