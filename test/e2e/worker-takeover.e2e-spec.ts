import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { deleteQueueKeys } from '../support/app';
import { TEST_DATABASE_URL, TEST_REDIS_URL, testPgConnection } from '../support/env';
import { freePort, ServiceProcess, stopProcesses, waitForHttp, api as adminApi, until } from '../support/process';

/**
 * A worker killed mid-drain, with the DEFAULT tuning (no PW_TUNING: the lock and stall-check
 * defaults are what is under test). An HTTP-only process records the deliveries; a worker-only
 * process takes them, and the carrier holds its calls (the shipments are created, the answers
 * never come), so those jobs and their outbox messages are in flight when the worker is killed
 * (SIGKILL). A replacement worker is started: from its start until every order is fulfilled must
 * take under 15 s, with exactly one shipment per order and one inbox row per event.
 *
 * And the other side of a short lock: a live worker whose job outlasts the lock renews it, so the
 * job is never reported stalled and never run twice.
 */

const ADMIN = 'e2e-admin-token';
const SECRET = 'whsec_ZTJlLXdvcmtlci10YWtlb3Zlci1rZXktMDAx';
const ACCOUNT = 'acc_takeover';
const ORDERS = 10;
/** The carrier calls held: the work in flight when the worker dies. */
const HELD = 6;
/** The bound on a replacement's takeover of a dead worker's jobs. */
const TAKEOVER_BOUND_MS = 15_000;

describe('a worker killed mid-drain: a replacement takes its jobs over within 15 s, with the default tuning', () => {
  const sim = new CarrierSimulator();
  const prefix = `pw-takeover-${randomUUID().slice(0, 8)}`;
  const processes: ServiceProcess[] = [];
  const db = new Client(testPgConnection());
  let httpPort = 0;
  let env: Record<string, string> = {};

  const api = (method: string, path: string, body?: unknown) => adminApi(httpPort, ADMIN, method, path, body);

  /** A worker-only process, resolved once it says it started. */
  async function startWorker(extra: Record<string, string> = {}): Promise<ServiceProcess> {
    const worker = new ServiceProcess({ ...env, ...extra, RUN_HTTP: 'false' });
    processes.push(worker);
    await until(
      'a worker-only process started',
      () => {
        if (worker.child.exitCode !== null) throw new Error(`worker exited: ${worker.stderr}`);
        return worker.stdout.includes('worker-only process started');
      },
      30_000,
    );
    return worker;
  }

  const count = async (sql: string, params: unknown[] = []): Promise<number> =>
    (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${sql}) x`, params)).rows[0].n;
  const fulfilled = () => count(`SELECT 1 FROM orders WHERE status = 'fulfilled'`);

  beforeAll(async () => {
    await Promise.all([sim.start(), db.connect()]);
    httpPort = await freePort();
    env = {
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: prefix,
      ADMIN_TOKEN: ADMIN,
      CARRIER_URL: sim.url,
      // A held call is never given up on by the worker that makes it: only the kill ends it.
      CARRIER_TIMEOUT_MS: '120000',
      WEBHOOK_ENDPOINTS: JSON.stringify([{ id: 'standard-main', provider: 'standard', secrets: [SECRET], merchantAccountId: ACCOUNT }]),
    };
    const http = new ServiceProcess({ ...env, PORT: String(httpPort), RUN_WORKERS: 'false' });
    processes.push(http);
    await waitForHttp(http, `http://127.0.0.1:${httpPort}/health/ready`, 30_000);
  }, 45_000);

  afterAll(async () => {
    await stopProcesses(processes);
    await db.end().catch(() => undefined);
    await sim.stop();
    await deleteQueueKeys(prefix);
  });

  async function payOrders(n: number): Promise<Array<{ orderId: string; eventId: string }>> {
    const orders = await Promise.all(
      Array.from({ length: n }, async () => {
        const order = await api('POST', '/orders', {
          amount: '49.90',
          currency: 'EUR',
          shipTo: { name: 'Barbara Liskov', line1: '1 Main St', city: 'Cambridge', postalCode: '02139', country: 'US' },
          items: [{ sku: 'SKU-1', quantity: 1 }],
        });
        expect(order.status).toBe(201);
        return { orderId: order.body.id as string, eventId: `msg_${randomUUID()}` };
      }),
    );
    for (const o of orders) {
      const body = JSON.stringify({
        type: 'payment.succeeded',
        timestamp: new Date().toISOString(),
        data: { payment_id: `pay_${randomUUID()}`, order_id: o.orderId, amount: 4990, currency: 'EUR', account_id: ACCOUNT },
      });
      const res = await fetch(`http://127.0.0.1:${httpPort}/webhooks/standard-main`, {
        method: 'POST',
        headers: signedHeaders('standard', SECRET, body, { eventId: o.eventId }),
        body,
      });
      expect(res.status).toBe(200);
    }
    return orders;
  }

  it(`${ORDERS} paid orders, ${HELD} carrier calls in flight, SIGKILL of the worker: the replacement ships them all within 15 s, once each`, async () => {
    // The carrier holds the first calls; the others are answered at once.
    sim.fault('hang', HELD);
    const worker = await startWorker();
    const orders = await payOrders(ORDERS);

    // Mid-drain: the held calls are in flight, the others done.
    await until(
      'the held carrier calls in flight and the other orders fulfilled',
      async () => sim.calls.filter((c) => c.result === 'hang').length === HELD && (await fulfilled()) === ORDERS - HELD,
    );
    expect(await count(`SELECT 1 FROM outbox_message WHERE status = 'pending' AND lease_until > now()`)).toBe(HELD);
    worker.kill('SIGKILL');
    const killedAt = Date.now();
    expect((await worker.exited()).signal).toBe('SIGKILL');

    // The replacement: from its start until every order is fulfilled.
    const startedAt = Date.now();
    const replacement = await startWorker();
    const readyAt = Date.now();
    await until('every order fulfilled by the replacement', async () => (await fulfilled()) === ORDERS, 100_000);
    const doneAt = Date.now();
    const takeover = doneAt - startedAt;
    console.log(
      `takeover: ${takeover} ms from the replacement's start (${readyAt - startedAt} ms to start), ${doneAt - killedAt} ms from the kill`,
    );
    expect(takeover).toBeLessThan(TAKEOVER_BOUND_MS);
    expect(replacement.child.exitCode).toBeNull();
    replacement.kill('SIGTERM');

    // Exactly one shipment per order; the held calls were asked again with their key and replayed.
    for (const o of orders) expect(sim.shipments.filter((s) => s.orderId === o.orderId)).toHaveLength(1);
    expect(sim.shipments).toHaveLength(ORDERS);
    expect(sim.calls.filter((c) => c.result === 'replayed')).toHaveLength(HELD);
    const { rows: fulfillments } = await db.query<{ orderId: string; shipmentId: string }>(
      `SELECT order_id AS "orderId", shipment_id AS "shipmentId" FROM fulfillments`,
    );
    expect(fulfillments).toHaveLength(ORDERS);
    const shipmentOf = new Map(sim.shipments.map((s) => [s.orderId, s.id]));
    for (const f of fulfillments) expect(f.shipmentId).toBe(shipmentOf.get(f.orderId));
    // One inbox row per event, each processed; every outbox message dispatched once.
    const { rows: inbox } = await db.query<{ eventId: string; status: string }>(`SELECT event_id AS "eventId", status FROM webhook_inbox`);
    expect(inbox.map((r) => r.eventId).sort()).toEqual(orders.map((o) => o.eventId).sort());
    expect(inbox.every((r) => r.status === 'processed')).toBe(true);
    expect(await count(`SELECT 1 FROM outbox_message WHERE status <> 'dispatched'`)).toBe(0);
  }, 150_000);

  it('a live worker whose carrier call outlasts its lock keeps renewing it: the job is never stalled nor run twice', async () => {
    // Only this worker runs now (the replacement above was asked to stop).
    await Promise.all(processes.slice(1).map((p) => p.exited(15_000)));
    const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
    try {
      const stream = `${prefix}:outbox:events`;
      const [last] = await redis.xrevrange(stream, '+', '-', 'COUNT', 1);
      const since = last?.[0] ?? '0-0';
      const before = await fulfilled();
      // A 1 s lock, checked every 200 ms; each held call lasts 3 s (the carrier timeout), then is asked again.
      const worker = await startWorker({
        CARRIER_TIMEOUT_MS: '3000',
        PW_TUNING: JSON.stringify({ jobLockMs: 1_000, stalledIntervalMs: 200, carrierBackoffBaseMs: 50, carrierBackoffCapMs: 500 }),
      });
      sim.fault('hang', 3);
      const orders = await payOrders(3);
      await until('the three orders fulfilled', async () => (await fulfilled()) === before + 3, 40_000);
      expect(worker.child.exitCode).toBeNull();

      const events = await redis.xrange(stream, `(${since}`, '+');
      const stalled = events.filter(([, fields]) => fields[0] === 'event' && fields[1] === 'stalled');
      expect(stalled).toEqual([]);
      // Each order: the held call, then one call again with the same key, answered with the same shipment.
      for (const o of orders) {
        const shipments = sim.shipments.filter((s) => s.orderId === o.orderId);
        expect(shipments).toHaveLength(1);
        expect(sim.calls.filter((c) => c.idempotencyKey === shipments[0].idempotencyKey).map((c) => c.result)).toEqual(['hang', 'replayed']);
      }
    } finally {
      redis.disconnect();
    }
  }, 90_000);
});
