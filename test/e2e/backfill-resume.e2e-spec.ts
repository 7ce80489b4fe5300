import { randomUUID } from 'node:crypto';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { freePort, ServiceProcess, waitForHttp, api as adminApi, until } from '../support/process';
import { StripeEventsStub } from '../support/stripe-events-stub';

const ADMIN = 'e2e-admin-token';
const SECRET = 'whsec_e2e_backfill_resume';

/** The built service, killed with SIGKILL in the middle of a backfill's walk and started again. */
function serviceEnv(port: number, prefix: string, carrierUrl: string, stub: StripeEventsStub): Record<string, string> {
  return {
    PORT: String(port),
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: prefix,
    ADMIN_TOKEN: ADMIN,
    CARRIER_URL: carrierUrl,
    WEBHOOK_ENDPOINTS: JSON.stringify([
      { id: 'stripe-main', provider: 'stripe', secrets: [SECRET], merchantAccountId: 'acct_resume', apiKey: stub.apiKey, apiBaseUrl: stub.url },
    ]),
    // A dead worker's jobs are taken back within about a second, not thirty.
    PW_TUNING: JSON.stringify({ jobLockMs: 1_000, stalledIntervalMs: 500, sweepIntervalMs: 300, sweepAfterMs: 200, carrierBackoffBaseMs: 50, carrierBackoffCapMs: 500 }),
  };
}

function api(port: number, method: string, path: string, body?: unknown) {
  return adminApi(port, ADMIN, method, path, body);
}

describe('a backfill survives a SIGKILL of its worker', () => {
  const sim = new CarrierSimulator();
  const stub = new StripeEventsStub();
  beforeAll(async () => {
    await sim.start();
    await stub.start();
  });
  afterAll(async () => {
    await stub.stop();
    await sim.stop();
  });

  it('killed mid-walk (page 2 of 3 in flight), restarted: done with 25 listed, 15 accepted, 10 duplicates, every order shipped once', async () => {
    const port = await freePort();
    const env = serviceEnv(port, `pw-backfill-${randomUUID().slice(0, 8)}`, sim.url, stub);
    const first = new ServiceProcess(env);
    let second: ServiceProcess | undefined;
    try {
      await waitForHttp(first, `http://127.0.0.1:${port}/health`);
      const base = Math.floor(Date.now() / 1000) - 1_800;
      const orders: string[] = [];
      const events = [];
      for (let i = 0; i < 25; i++) {
        const order = await api(port, 'POST', '/orders', {
          amount: '49.90',
          currency: 'EUR',
          shipTo: { name: 'Grace Hopper', line1: '1 Harbor Rd', city: 'Arlington', postalCode: '22201', country: 'US' },
          items: [{ sku: 'SKU-1', quantity: 1 }],
        });
        expect(order.status).toBe(201);
        orders.push(order.body.id);
        events.push(stub.addSucceeded({ orderId: order.body.id, created: base + i }));
      }
      // 10 of them reached the service as webhooks before the outage; 15 never did.
      for (const event of events.filter((_, i) => i % 5 < 2)) {
        const body = JSON.stringify(event);
        const res = await fetch(`http://127.0.0.1:${port}/webhooks/stripe-main`, { method: 'POST', headers: signedHeaders('stripe', SECRET, body), body });
        expect(res.status).toBe(200);
      }
      await until('the 10 delivered orders shipped', () => sim.shipments.length === 10);

      // Page 1 is answered; page 2 is held, and the worker killed while it waits for it.
      let held = false;
      stub.holdNext(1, () => (held = true), { after: 1 });
      const started = await api(port, 'POST', '/admin/backfill', { endpointId: 'stripe-main', since: new Date((base - 60) * 1000).toISOString() });
      expect(started.status).toBe(202);
      const id = started.body.id as string;
      await until('page 2 requested', () => held);
      const midway = await api(port, 'GET', `/admin/backfill/${id}`);
      expect(midway.body).toMatchObject({ status: 'running', listed: 10 });

      first.kill('SIGKILL');
      expect((await first.exited()).signal).toBe('SIGKILL');
      stub.release(); // its answer goes to a closed connection

      second = new ServiceProcess(env);
      await waitForHttp(second, `http://127.0.0.1:${port}/health`);
      await until('the backfill done', async () => (await api(port, 'GET', `/admin/backfill/${id}`)).body.status !== 'running');
      const done = await api(port, 'GET', `/admin/backfill/${id}`);
      expect(done.body).toMatchObject({ id, endpointId: 'stripe-main', status: 'done', listed: 25, accepted: 15, duplicates: 10, error: null });
      // Page 1 once, page 2 twice (the killed request, then the resumed one), page 3 once.
      expect(stub.requests.map((r) => r.query.starting_after ?? null)).toEqual([null, events[15].id, events[15].id, events[5].id]);

      await until('every order fulfilled', async () => {
        const views = await Promise.all(orders.map((o) => api(port, 'GET', `/orders/${o}`)));
        return views.every((v) => v.body.status === 'fulfilled');
      });
      for (const orderId of orders) expect(sim.shipments.filter((s) => s.orderId === orderId).length).toBe(1);
      expect(sim.shipments.length).toBe(25);
      const archive = await api(port, 'GET', '/admin/webhook-deliveries?endpointId=stripe-main&limit=100');
      const sources = archive.body.items.map((i: { source: string }) => i.source);
      expect([sources.filter((s: string) => s === 'backfill').length, sources.filter((s: string) => s === 'webhook').length]).toEqual([15, 10]);
      expect(second.stdout + second.stderr + first.stdout + first.stderr).not.toContain(stub.apiKey);
    } finally {
      first.kill('SIGKILL');
      second?.kill('SIGTERM');
      await second?.exited();
    }
  });
});
