import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { Webhook } from 'standardwebhooks';
import type { PaymentWebhooksEvent } from '../../src';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { deleteQueueKeys } from '../support/app';
import { TEST_REDIS_URL, testPgConnection, TEST_DATABASE_URL } from '../support/env';
import { orderHistoryProblems } from '../support/history-check';
import { freePort, ServiceProcess, stopProcesses, waitForHttp, api as adminApi, until } from '../support/process';
import { SinkServer, sinkSecret } from '../events/support';

/**
 * Scale-out, proven on the built service: two HTTP-only processes (RUN_WORKERS=false) and two
 * worker-only processes (RUN_HTTP=false) on one PostgreSQL and one Redis. A storm of paid orders,
 * every webhook sent two or three times (some copies at once, across both HTTP processes); one
 * worker is killed with SIGKILL while it holds carrier calls and event deliveries in flight, and
 * NOT replaced: the surviving worker takes its jobs over (their BullMQ locks and outbox leases
 * lapse within about a second). Then every order has exactly one shipment, the inbox one row per
 * event, and the sink every event (at least once, none lost).
 */

const ADMIN = 'e2e-admin-token';
const SECRET = 'whsec_ZTJlLXNjYWxlLW91dC10ZXN0LWtleS0wMDE=';
const SINK_SECRET = sinkSecret();
const ORDERS = 60;
/** The first carrier calls and sink deliveries are taken and never answered: work in flight. */
const HUNG_CALLS = 4;
const HUNG_DELIVERIES = 4;

function baseEnv(prefix: string, carrierUrl: string, sinkUrl: string): Record<string, string> {
  return {
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: prefix,
    ADMIN_TOKEN: ADMIN,
    CARRIER_URL: carrierUrl,
    // A hung call on the surviving worker times out and is asked again (the carrier replays it).
    CARRIER_TIMEOUT_MS: '2000',
    WEBHOOK_ENDPOINTS: JSON.stringify([{ id: 'standard-main', provider: 'standard', secrets: [SECRET], merchantAccountId: 'acc_scale' }]),
    EVENT_SINKS: JSON.stringify([{ name: 'scale-sink', url: sinkUrl, secret: SINK_SECRET, timeoutMs: 2_000 }]),
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

/** Runs `fn` over `items`, `width` at a time. */
async function inBatches<T, R>(items: T[], width: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += width) {
    out.push(...(await Promise.all(items.slice(i, i + width).map((item, j) => fn(item, i + j)))));
  }
  return out;
}

interface PaidOrder {
  orderId: string;
  eventId: string;
  body: string;
  headers: Record<string, string>;
  /** 2 or 3: the delivery and its duplicates. */
  copies: number;
}

describe('scale-out: two HTTP-only and two worker-only processes, one worker killed mid-storm', () => {
  const sim = new CarrierSimulator();
  const sink = new SinkServer();
  const prefix = `pw-scale-${randomUUID().slice(0, 8)}`;
  const processes: ServiceProcess[] = [];
  const db = new Client(testPgConnection());
  let httpPorts: number[] = [];

  beforeAll(async () => {
    await Promise.all([sim.start(), sink.start(), db.connect()]);
    const env = baseEnv(prefix, sim.url, sink.url('/events'));
    httpPorts = [await freePort(), await freePort()];
    const http = httpPorts.map((port) => new ServiceProcess({ ...env, PORT: String(port), RUN_WORKERS: 'false' }));
    const workers = [0, 1].map(() => new ServiceProcess({ ...env, RUN_HTTP: 'false' }));
    processes.push(...http, ...workers);
    // Four Nest processes starting at once on a busy machine: a generous bound, and their output if it passes.
    const started = (p: ServiceProcess, wait: Promise<void>) =>
      wait.catch((err: Error) => {
        throw new Error(`${err.message}\nstdout: ${p.stdout.slice(-2000)}`);
      });
    await Promise.all([
      ...http.map((p, i) => started(p, waitForHttp(p, `http://127.0.0.1:${httpPorts[i]}/health/ready`, 30_000))),
      ...workers.map((w) =>
        started(
          w,
          until('a worker-only process started', () => {
            if (w.child.exitCode !== null) throw new Error(`worker exited: ${w.stderr}`);
            return w.stdout.includes('worker-only process started');
          }, 30_000),
        ),
      ),
    ]);
  }, 45_000);

  afterAll(async () => {
    await stopProcesses(processes);
    await db.end().catch(() => undefined);
    await sink.stop();
    await sim.stop();
    await deleteQueueKeys(prefix);
  });

  const count = async (sql: string, params: unknown[] = []): Promise<number> =>
    (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${sql}) x`, params)).rows[0].n;

  it(`${ORDERS} orders, 2–3 copies of each webhook across both HTTP processes, SIGKILL of a worker: exactly one shipment each, no event lost`, async () => {
    const [workerA, workerB] = processes.slice(2);
    sim.fault('hang', HUNG_CALLS);
    sink.respond = (_req, earlier) => (earlier.length < HUNG_DELIVERIES ? 'hang' : 200);

    // The orders, through the API of one HTTP process.
    const orders: PaidOrder[] = await inBatches(Array.from({ length: ORDERS }), 10, async (_x, i) => {
      const order = await api(httpPorts[0], 'POST', '/orders', {
        amount: '49.90',
        currency: 'EUR',
        shipTo: { name: 'Katherine Johnson', line1: '1 Langley Blvd', city: 'Hampton', postalCode: '23681', country: 'US' },
        items: [{ sku: 'SKU-1', quantity: 1 }],
      });
      expect(order.status).toBe(201);
      const eventId = `msg_${randomUUID()}`;
      const body = JSON.stringify({
        type: 'payment.succeeded',
        timestamp: new Date().toISOString(),
        data: { payment_id: `pay_${randomUUID()}`, order_id: order.body.id, amount: 4990, currency: 'EUR', account_id: 'acc_scale' },
      });
      return { orderId: order.body.id, eventId, body, headers: signedHeaders('standard', SECRET, body, { eventId }), copies: 2 + (i % 2) };
    });

    /** Every copy of one order's webhook: all at once across both processes (every third order), or one after another. */
    const answers = new Map<string, string[]>();
    const deliver = async (o: PaidOrder, i: number) => {
      const send = async (copy: number) => {
        const port = httpPorts[(i + copy) % 2];
        const res = await fetch(`http://127.0.0.1:${port}/webhooks/standard-main`, { method: 'POST', headers: o.headers, body: o.body });
        const answer = (await res.json()) as { status: string; eventId: string };
        expect(res.status).toBe(200);
        expect(answer.eventId).toBe(o.eventId);
        answers.set(o.eventId, [...(answers.get(o.eventId) ?? []), answer.status]);
      };
      const copies = Array.from({ length: o.copies }, (_, c) => c);
      if (i % 3 === 0) await Promise.all(copies.map(send));
      else for (const c of copies) await send(c);
    };

    // First half of the storm; then a worker holding work in flight is killed.
    const half = ORDERS / 2;
    await inBatches(orders.slice(0, half), 10, deliver);
    await until(
      'carrier calls and sink deliveries in flight, and shipments answered',
      () =>
        sim.calls.filter((c) => c.result === 'hang').length === HUNG_CALLS &&
        sink.requests.filter((r) => r.answer === 'hang').length === HUNG_DELIVERIES &&
        sim.calls.some((c) => c.result === 'created'),
    );
    // The worker holding the most outbox leases right now (lease_owner is host:pid:random).
    const { rows: leases } = await db.query<{ owner: string; n: number }>(
      `SELECT lease_owner AS owner, count(*)::int AS n FROM outbox_message
        WHERE status = 'pending' AND lease_until > now() GROUP BY lease_owner ORDER BY n DESC`,
    );
    const pidOf = (owner: string) => Number(owner.split(':').at(-2));
    const victim = [workerA, workerB].find((w) => w.child.pid === pidOf(leases[0]?.owner ?? ''));
    expect(victim).toBeDefined();
    const survivor = victim === workerA ? workerB : workerA;
    const shippedBeforeKill = sim.shipments.length;
    expect(shippedBeforeKill).toBeGreaterThan(0);
    expect(shippedBeforeKill).toBeLessThan(ORDERS);
    victim!.kill('SIGKILL');
    expect((await victim!.exited()).signal).toBe('SIGKILL');

    // The rest of the storm, with one worker left (no replacement is started).
    await inBatches(orders.slice(half), 10, (o, i) => deliver(o, half + i));

    // Each event was accepted once; every other copy was a duplicate.
    for (const o of orders) {
      expect((answers.get(o.eventId) ?? []).sort()).toEqual(['accepted', ...Array(o.copies - 1).fill('duplicate')]);
    }

    await until(
      'every order fulfilled and every outbox message dispatched',
      async () =>
        (await count(`SELECT 1 FROM orders WHERE status = 'fulfilled'`)) === ORDERS &&
        (await count(`SELECT 1 FROM outbox_message WHERE status = 'dispatched'`)) === ORDERS * 4,
      40_000,
    );
    await until('every event at the sink', () => new Set(sink.requests.filter((r) => r.answer === 200).map((r) => r.headers['webhook-id'])).size === ORDERS * 3, 20_000);
    expect(survivor.child.exitCode).toBeNull();

    // Exactly one shipment per order, at the carrier; and the order points at it.
    for (const o of orders) expect(sim.shipments.filter((s) => s.orderId === o.orderId)).toHaveLength(1);
    expect(sim.shipments).toHaveLength(ORDERS);
    const { rows: fulfillments } = await db.query<{ orderId: string; shipmentId: string }>(
      `SELECT order_id AS "orderId", shipment_id AS "shipmentId" FROM fulfillments`,
    );
    expect(fulfillments).toHaveLength(ORDERS);
    const shipmentOf = new Map(sim.shipments.map((s) => [s.orderId, s.id]));
    for (const f of fulfillments) expect(f.shipmentId).toBe(shipmentOf.get(f.orderId));
    // The calls in flight were asked again with the same key, and answered the same shipment.
    expect(sim.calls.filter((c) => c.result === 'replayed').length).toBeGreaterThanOrEqual(HUNG_CALLS);

    // The inbox: one row per distinct event, each processed.
    const { rows: inbox } = await db.query<{ eventId: string; status: string }>(`SELECT event_id AS "eventId", status FROM webhook_inbox`);
    expect(inbox).toHaveLength(ORDERS);
    expect(new Set(inbox.map((r) => r.eventId))).toEqual(new Set(orders.map((o) => o.eventId)));
    expect(inbox.every((r) => r.status === 'processed')).toBe(true);
    expect(await count(`SELECT 1 FROM outbox_message WHERE status <> 'dispatched'`)).toBe(0);

    // Each order's history, read through the other HTTP process: each change once, in order, ending where it stands.
    const unsound = (await inBatches(orders, 10, async (o) => [o.orderId, await orderHistoryProblems((path) => api(httpPorts[1], 'GET', path), o.orderId)] as const)).filter(([, p]) => p.length > 0);
    expect(unsound).toEqual([]);

    // The sink: every delivery verifies and names its event; 3 × N distinct webhook-ids, the three
    // types of each order, one body per id however often it came (at least once, none lost).
    const byId = new Map<string, Set<string>>();
    for (const req of sink.requests) {
      const event = new Webhook(SINK_SECRET).verify(req.rawBody, req.headers as Record<string, string>) as PaymentWebhooksEvent;
      expect(req.headers['webhook-id']).toBe(event.id);
      byId.set(event.id, (byId.get(event.id) ?? new Set()).add(req.rawBody));
    }
    expect(byId.size).toBe(ORDERS * 3);
    for (const [, variants] of byId) expect(variants.size).toBe(1);
    const events = [...byId.values()].map((v) => JSON.parse([...v][0]) as PaymentWebhooksEvent);
    for (const o of orders) {
      expect(events.filter((e) => e.data.order.id === o.orderId).map((e) => e.type).sort()).toEqual(['order.fulfilled', 'order.paid', 'payment.succeeded']);
    }
  }, 60_000);
});
