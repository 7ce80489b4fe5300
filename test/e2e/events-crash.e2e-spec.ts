import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { PaymentWebhooksEvent } from '../../src';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { deleteQueueKeys } from '../support/app';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { freePort, ServiceProcess, waitForHttp, api as adminApi, until } from '../support/process';
import { SinkServer, sinkSecret } from '../events/support';

/**
 * CONTRACT §7 across a crash: the built service delivers events to an EVENT_SINKS sink at least
 * once. Killed (SIGKILL) while deliveries are in flight and started again, it loses none: every
 * event reaches the sink, each under one webhook-id with one body, however often it was sent.
 */

const ADMIN = 'e2e-admin-token';
const SECRET = 'whsec_ZTJlLWV2ZW50cy1jcmFzaC1rZXktMDAwMQ==';
const SINK_SECRET = sinkSecret();
const ORDERS = 5;

function serviceEnv(port: number, prefix: string, carrierUrl: string, sinkUrl: string): Record<string, string> {
  return {
    PORT: String(port),
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: prefix,
    ADMIN_TOKEN: ADMIN,
    CARRIER_URL: carrierUrl,
    CARRIER_TIMEOUT_MS: '5000',
    WEBHOOK_ENDPOINTS: JSON.stringify([{ id: 'standard-main', provider: 'standard', secrets: [SECRET], merchantAccountId: 'acc_crash' }]),
    // A sink that never answers is waited for a minute: only the kill ends those deliveries.
    EVENT_SINKS: JSON.stringify([{ name: 'crash-sink', url: sinkUrl, secret: SINK_SECRET, timeoutMs: 60_000 }]),
    // A dead worker's jobs (and its outbox leases) are taken back within about a second.
    PW_TUNING: JSON.stringify({
      jobLockMs: 1_000,
      stalledIntervalMs: 500,
      sweepIntervalMs: 300,
      sweepAfterMs: 200,
      carrierBackoffBaseMs: 50,
      carrierBackoffCapMs: 500,
    }),
  };
}

function api(port: number, method: string, path: string, body?: unknown) {
  return adminApi(port, ADMIN, method, path, body);
}

async function payOrders(port: number, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const order = await api(port, 'POST', '/orders', {
      amount: '49.90',
      currency: 'EUR',
      shipTo: { name: 'Grace Hopper', line1: '1 Harbor Rd', city: 'Arlington', postalCode: '22201', country: 'US' },
      items: [{ sku: 'SKU-1', quantity: 1 }],
    });
    expect(order.status).toBe(201);
    const eventId = `msg_${randomUUID()}`;
    const body = JSON.stringify({
      type: 'payment.succeeded',
      timestamp: new Date().toISOString(),
      data: { payment_id: `pay_${randomUUID()}`, order_id: order.body.id, amount: 4990, currency: 'EUR', account_id: 'acc_crash' },
    });
    const res = await fetch(`http://127.0.0.1:${port}/webhooks/standard-main`, { method: 'POST', headers: signedHeaders('standard', SECRET, body, { eventId }), body });
    expect(res.status).toBe(200);
    ids.push(order.body.id);
  }
  return ids;
}

describe('events to a sink across a SIGKILL of the service', () => {
  const sim = new CarrierSimulator();
  const sink = new SinkServer();
  beforeAll(async () => {
    await sim.start();
    await sink.start();
  });
  afterAll(async () => {
    await sink.stop();
    await sim.stop();
  });

  it(`killed while deliveries hang, then restarted: all ${ORDERS * 3} events reach the sink, each under one webhook-id with one body`, async () => {
    const port = await freePort();
    const prefix = `pw-evcrash-${randomUUID().slice(0, 8)}`;
    const env = serviceEnv(port, prefix, sim.url, sink.url('/events'));
    // The first deliveries are taken and never answered.
    sink.respond = (_req, earlier) => (earlier.length < ORDERS ? 'hang' : 200);
    const first = new ServiceProcess(env);
    let second: ServiceProcess | undefined;
    try {
      await waitForHttp(first, `http://127.0.0.1:${port}/health`);
      const orders = await payOrders(port, ORDERS);
      await until(`${ORDERS} deliveries in flight`, () => sink.requests.filter((r) => r.answer === 'hang').length === ORDERS);
      const inFlight = sink.requests.map((r) => r.headers['webhook-id'] as string);
      // Each order's first event; its later ones wait behind it (one order's events in order).
      const hung = sink.requests.map((r) => JSON.parse(r.rawBody) as PaymentWebhooksEvent);
      expect(hung.map((e) => e.type)).toEqual(Array(ORDERS).fill('payment.succeeded'));
      expect(new Set(hung.map((e) => e.data.order.id))).toEqual(new Set(orders));

      first.kill('SIGKILL');
      expect((await first.exited()).signal).toBe('SIGKILL');

      second = new ServiceProcess(env);
      await waitForHttp(second, `http://127.0.0.1:${port}/health`);
      await until('every order fulfilled', async () => {
        const views = await Promise.all(orders.map((id) => api(port, 'GET', `/orders/${id}`)));
        return views.every((v) => v.body.status === 'fulfilled');
      });
      // Every message delivered: 5 shipments and 15 events, nothing pending or dead.
      await until('every outbox message dispatched', async () => {
        const [dispatched, pending, dead] = await Promise.all(
          ['dispatched', 'pending', 'dead'].map((s) => api(port, 'GET', `/admin/outbox?status=${s}&limit=100`)),
        );
        return dispatched.body.items.length === ORDERS * 4 && pending.body.items.length === 0 && dead.body.items.length === 0;
      });

      // Each delivery verifies with the sink's secret, and names its event in webhook-id.
      const byId = new Map<string, string[]>();
      for (const req of sink.requests) {
        const event = new Webhook(SINK_SECRET).verify(req.rawBody, req.headers as Record<string, string>) as PaymentWebhooksEvent;
        expect(req.headers['webhook-id']).toBe(event.id);
        byId.set(event.id, [...(byId.get(event.id) ?? []), req.rawBody]);
      }
      expect(byId.size).toBe(ORDERS * 3);
      // At least once: a delivery in flight at the kill came again; each id's body is the same bytes.
      for (const id of inFlight) expect(byId.get(id)!.length).toBeGreaterThanOrEqual(2);
      for (const [, bodies] of byId) expect(new Set(bodies).size).toBe(1);

      const events = [...byId.values()].map((b) => JSON.parse(b[0]) as PaymentWebhooksEvent);
      for (const orderId of orders) {
        const mine = events.filter((e) => e.data.order.id === orderId);
        expect(mine.map((e) => e.type).sort()).toEqual(['order.fulfilled', 'order.paid', 'payment.succeeded']);
      }
      expect(events.every((e) => orders.includes(e.data.order.id))).toBe(true);
      for (const id of orders) expect(sim.shipments.filter((s) => s.orderId === id).length).toBe(1);
    } finally {
      first.kill('SIGKILL');
      second?.kill('SIGTERM');
      await second?.exited();
      await deleteQueueKeys(prefix);
    }
  });
});
