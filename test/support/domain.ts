import request from 'supertest';
import { randomUUID } from 'node:crypto';
import { signedHeaders, SigningProvider } from '../../src/testing/sign';
import { AUTH, eventually, secretOf, TestApp } from './app';

/** Helpers that drive the service as its users do: the host's REST API and signed webhooks. */
export function driver(t: TestApp) {
  const http = () => request(t.app.getHttpServer());

  async function createOrder(amount = '49.90', currency = 'EUR', extra: Record<string, unknown> = {}) {
    const res = await http()
      .post('/orders')
      .set(AUTH)
      .send({
        amount,
        currency,
        shipTo: { name: 'Ada Lovelace', line1: '12 Analytical Row', city: 'London', postalCode: 'N1 9GU', country: 'GB' },
        items: [{ sku: 'SKU-1', quantity: 1 }],
        ...extra,
      });
    if (res.status !== 201) throw new Error(`order not created: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as { id: string; amount: string; currency: string };
  }

  async function registerPayment(orderId: string, provider: string, providerPaymentId: string, merchantAccountId?: string) {
    const res = await http()
      .post(`/orders/${orderId}/payments`)
      .set(AUTH)
      .send({ provider, providerPaymentId, ...(merchantAccountId ? { merchantAccountId } : {}) });
    if (res.status !== 201 && res.status !== 200) {
      throw new Error(`payment not registered: ${res.status} ${JSON.stringify(res.body)}`);
    }
    return res.body as { id: string; status: string };
  }

  async function getOrder(id: string) {
    const res = await http().get(`/orders/${id}`).set(AUTH);
    if (res.status !== 200) throw new Error(`GET /orders/${id}: ${res.status}`);
    return res.body;
  }

  /** Sends a signed delivery; returns the HTTP answer. */
  async function send(endpointId: string, provider: SigningProvider, body: object | string, opts: { eventId?: string } = {}) {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    return http()
      .post(`/webhooks/${endpointId}`)
      .set(signedHeaders(provider, secretOf(endpointId), text, opts))
      .send(text);
  }

  /** The inbox row of an event, once it is no longer `received` (the workers processed it). */
  async function processed(eventId: string, timeoutMs = 15_000) {
    return eventually(
      async () => {
        const [row] = await t.dataSource.query(
          `SELECT id, status, outcome, attempts, last_error AS "lastError" FROM webhook_inbox WHERE event_id = $1`,
          [eventId],
        );
        return row && row.status !== 'received' ? row : undefined;
      },
      timeoutMs,
      `processing of ${eventId}`,
    );
  }

  async function count(sql: string, params: unknown[] = []): Promise<number> {
    const [{ n }] = await t.dataSource.query(`SELECT count(*)::int AS n FROM (${sql}) x`, params);
    return n;
  }

  /** The outbox message of an order's fulfillment: status, attempts, lastError, dispatched. */
  async function outboxMessage(orderId: string) {
    const [row] = await t.dataSource.query(
      `SELECT status, attempts, last_error AS "lastError", dispatched_at IS NOT NULL AS dispatched
         FROM outbox_message WHERE payload->>'orderId' = $1 AND type = 'fulfillment.dispatch'`,
      [orderId],
    );
    return row;
  }

  /** The outbox message of an idempotency key (a payment command's: a refund id, `<payment id>:capture`…). */
  async function outboxMessageOfKey(key: string) {
    const [row] = await t.dataSource.query(
      `SELECT id, type, status, attempts, last_error AS "lastError" FROM outbox_message WHERE idempotency_key = $1`,
      [key],
    );
    return row;
  }

  return { http, createOrder, registerPayment, getOrder, send, processed, count, outboxMessage, outboxMessageOfKey };
}

export function uniqueId(prefix: string): string {
  return `${prefix}_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
}

/** Event bodies per provider, shaped like CONTRACT §2 and the shared examples. */
export const bodies = {
  paymos(type: string, invoiceId: string, opts: { orderId?: string; amount?: string; currency?: string; refunded?: string } = {}) {
    const eventId = uniqueId('evt');
    return {
      eventId,
      body: {
        event_id: eventId,
        type,
        created: Math.floor(Date.now() / 1000),
        data: {
          object: 'invoice',
          id: invoiceId,
          status: type.split('.')[1],
          ...(opts.orderId ? { order_id: opts.orderId } : {}),
          price_amount: opts.amount ?? '49.90',
          price_currency: opts.currency ?? 'EUR',
          ...(opts.refunded ? { refunded_amount: opts.refunded } : {}),
        },
      },
    };
  },
  factuarea(type: string, invoiceId: string, opts: { orderId?: string; total?: string; currency?: string; accountId?: string } = {}) {
    const eventId = randomUUID();
    return {
      eventId,
      body: {
        id: eventId,
        type,
        api_version: '2026-09-23',
        created: Math.floor(Date.now() / 1000),
        livemode: true,
        correlation_id: randomUUID(),
        ...(opts.accountId ? { account: { id: opts.accountId }, account_relationship: 'managed' } : {}),
        data: {
          type,
          object: {
            object: 'invoice',
            id: invoiceId,
            number: 'FAC-2026-00042',
            status: type.split('.')[1],
            total: opts.total ?? '49.90',
            currency: opts.currency ?? 'EUR',
            ...(opts.orderId ? { metadata: { order_id: opts.orderId } } : {}),
          },
        },
      },
    };
  },
  stripe(type: string, paymentIntentId: string, opts: { orderId?: string; amount?: number; currency?: string; account?: string } = {}) {
    const eventId = uniqueId('evt');
    const amount = opts.amount ?? 4990;
    return {
      eventId,
      body: {
        id: eventId,
        object: 'event',
        api_version: '2026-10-28',
        created: Math.floor(Date.now() / 1000),
        livemode: false,
        type,
        ...(opts.account ? { account: opts.account } : {}),
        data: {
          object: {
            id: paymentIntentId,
            object: 'payment_intent',
            amount,
            amount_received: type === 'payment_intent.succeeded' ? amount : 0,
            currency: (opts.currency ?? 'eur').toLowerCase(),
            status: type.split('.')[1],
            metadata: opts.orderId ? { order_id: opts.orderId } : {},
          },
        },
      },
    };
  },
  standard(type: string, paymentId: string, opts: { orderId?: string; amount?: number; currency?: string; accountId?: string; refunded?: number } = {}) {
    const eventId = uniqueId('msg');
    return {
      eventId,
      body: {
        type,
        timestamp: new Date().toISOString(),
        data: {
          payment_id: paymentId,
          ...(opts.orderId ? { order_id: opts.orderId } : {}),
          amount: opts.amount ?? 4990,
          currency: opts.currency ?? 'EUR',
          account_id: opts.accountId ?? 'acc_1',
          ...(opts.refunded !== undefined ? { amount_refunded: opts.refunded } : {}),
        },
      },
    };
  },
};
