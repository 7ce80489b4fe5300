import { randomUUID } from 'node:crypto';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { signedHeaders } from '../../src/testing/sign';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { orderHistoryProblems } from '../support/history-check';
import { freePort, ServiceProcess, waitForHttp, api as adminApi, until } from '../support/process';

const ADMIN = 'e2e-admin-token';
const SECRET = 'whsec_ZTJlLWNyYXNoLXRlc3Qta2V5LTAwMDE=';

/** The built service as a process of its own, which the test kills and starts again. */
function serviceEnv(port: number, prefix: string, carrierUrl: string, carrierTimeoutMs: number): Record<string, string> {
  return {
    PORT: String(port),
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: prefix,
    ADMIN_TOKEN: ADMIN,
    CARRIER_URL: carrierUrl,
    CARRIER_TIMEOUT_MS: String(carrierTimeoutMs),
    WEBHOOK_ENDPOINTS: JSON.stringify([
      { id: 'standard-main', provider: 'standard', secrets: [SECRET], merchantAccountId: 'acc_crash' },
    ]),
    // A dead worker's jobs are taken back within about a second, not thirty.
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
    const res = await fetch(`http://127.0.0.1:${port}/webhooks/standard-main`, {
      method: 'POST',
      headers: signedHeaders('standard', SECRET, body, { eventId }),
      body,
    });
    expect(res.status).toBe(200);
    ids.push(order.body.id);
  }
  return ids;
}

describe('crashes and stops of the worker process', () => {
  const sim = new CarrierSimulator();
  beforeAll(() => sim.start());
  afterAll(() => sim.stop());
  beforeEach(() => sim.reset());

  it('killed with SIGKILL while dispatching, then restarted: every paid order has exactly one shipment', async () => {
    const port = await freePort();
    const env = serviceEnv(port, `pw-crash-${randomUUID().slice(0, 8)}`, sim.url, 60_000);
    sim.fault('hang', 5); // the carrier takes the five shipments and answers none of them
    const first = new ServiceProcess(env);
    let second: ServiceProcess | undefined;
    try {
      await waitForHttp(first, `http://127.0.0.1:${port}/health`);
      const orders = await payOrders(port, 5);
      await until('five dispatches in flight', () => sim.calls.filter((c) => c.result === 'hang').length === 5);

      first.kill('SIGKILL');
      expect((await first.exited()).signal).toBe('SIGKILL');

      second = new ServiceProcess(env);
      await waitForHttp(second, `http://127.0.0.1:${port}/health`);
      await until('every order fulfilled', async () => {
        const views = await Promise.all(orders.map((id) => api(port, 'GET', `/orders/${id}`)));
        return views.every((v) => v.body.status === 'fulfilled');
      });

      for (const id of orders) {
        const shipments = sim.shipments.filter((s) => s.orderId === id);
        expect(shipments.length).toBe(1);
        expect((await api(port, 'GET', `/orders/${id}`)).body.fulfillment.shipmentId).toBe(shipments[0].id);
      }
      expect(sim.shipments.length).toBe(5);
      // The restarted worker asked again with the same keys and got the same shipments.
      expect(sim.calls.filter((c) => c.result === 'replayed').length).toBe(5);
      // Each order's history: each change once, in order, ending where it stands.
      for (const id of orders) expect({ id, problems: await orderHistoryProblems((path) => api(port, 'GET', path), id) }).toEqual({ id, problems: [] });
    } finally {
      first.kill('SIGKILL');
      second?.kill('SIGTERM');
      await second?.exited();
    }
  });

  it('stopped with SIGTERM while dispatching: the worker finishes its job, and a restart completes the order', async () => {
    const port = await freePort();
    const env = serviceEnv(port, `pw-term-${randomUUID().slice(0, 8)}`, sim.url, 1_500);
    sim.fault('hang', 1);
    const first = new ServiceProcess(env);
    let second: ServiceProcess | undefined;
    try {
      await waitForHttp(first, `http://127.0.0.1:${port}/health`);
      const [orderId] = await payOrders(port, 1);
      await until('the dispatch in flight', () => sim.calls.length === 1);

      first.kill('SIGTERM');
      const exited = await first.exited();
      // Graceful: the call ran to its timeout and its failure was recorded before the process left.
      expect(exited.signal).toBe('SIGTERM');
      expect(exited.stdout).toContain('shut down (SIGTERM): workers and connections closed');
      expect(sim.calls.length).toBe(1);

      second = new ServiceProcess(env);
      await waitForHttp(second, `http://127.0.0.1:${port}/health`);
      await until('the order fulfilled', async () => (await api(port, 'GET', `/orders/${orderId}`)).body.status === 'fulfilled');
      expect(sim.shipments.filter((s) => s.orderId === orderId).length).toBe(1);
      expect(sim.calls.map((c) => c.result)).toEqual(['hang', 'replayed']);
    } finally {
      first.kill('SIGKILL');
      second?.kill('SIGTERM');
      await second?.exited();
    }
  });
});
