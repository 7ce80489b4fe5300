/**
 * The benchmark: starts the built service (and what it needs), drives it, and prints one table,
 * every ratio measured in the same run.
 *
 *   npm run bench -- [--platforms express,fastify] [--topologies all-in-one,split] [--duration 8]
 *                    [--connections 50] [--drain 3000] [--out docs/benchmarks.md] [--only <load>]
 *   npm run bench -- --tracing [--platforms express] [--topologies all-in-one] [--duration 3] [--drain 1000]
 *   npm run bench -- [--no-compare] [--reference-poll-ms 100]
 *
 * For each HTTP platform and each topology (one all-in-one process, or an HTTP-only process beside
 * a worker-only one) on a database of its own, it measures, in this order:
 * - `GET /health` (no I/O: the process's own ceiling);
 * - duplicates: one delivery, already recorded, sent again and again;
 * - new deliveries: each a signed `payment.succeeded` paying an order of its own, so the workers
 *   drain what the load records while it runs (req/s, and its ratio to `/health`);
 * - end to end at 20 and at 200 paid orders per second (open loop): p50/p99 from the POST to the
 *   carrier's shipment, at the carrier simulator;
 * - drain: N paid webhooks sent as fast as they are accepted, then shipments per second from the
 *   first to the last, and its ratio to the ingest rate of the new-delivery load;
 * - Adyen: new deliveries that are batches of 10 signed items (`AUTHORISATION`), each paying an
 *   order of its own (requests/s and events/s), then a drain of N items in such batches;
 * - Stripe: a drain of N `payment_intent.succeeded` snapshot events, and a drain of N thin
 *   notifications (`v1.payment_intent.succeeded`), each of which costs processing one fetch of its
 *   PaymentIntent from a local stand-in for Stripe's API (in this process).
 * With --tracing it measures only new deliveries, end to end at 20/s and the drain, once per tracing
 * mode (TRACING_MODES below: @opentelemetry/api absent, the API without an SDK, an SDK exporting
 * over OTLP to a collector stub in this process, and absent again), and prints each figure with its
 * ratio to the first row; it does not write the file.
 * Unless --no-compare (or --tracing), the same run then measures, each on a fresh database of its
 * own, issue 24's two baselines with the loads they support: the reference design
 * (tools/reference-receiver.ts: NestJS + pg, one transaction per delivery, a polling relay) and
 * the ceiling (tools/ceiling-receiver.ts: node:http + pg, the HMAC and a batched INSERT only; no
 * processing, so no end-to-end or shipment figure). Every figure of the module is printed with its
 * ratio to the reference's and to the ceiling's, and the targets of issue 24 are checked; the
 * carrier simulator's shipments are counted per order for every system (none may ship twice).
 * The carrier simulator and the load run in this process, on the same cores as the service,
 * PostgreSQL and Redis. The table, with the machine's CPU count and the Node and PostgreSQL
 * versions, goes to `--out` (default docs/benchmarks.md, between the markers there).
 */
import autocannon from 'autocannon';
import { ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { Client } from 'pg';
import { signedHeaders } from '../src/testing/sign';
import { CarrierSimulator } from './carrier-sim';
import { seedReferenceOrders } from './baselines';
import { Seeded, seedHistory } from './seed';
import { freePort, seedOrders as seedInto, stopChild, until, withClient, withDatabase } from './harness';

const { values: args } = parseArgs({
  options: {
    // The defaults of these four depend on --tracing (below).
    platforms: { type: 'string' },
    topologies: { type: 'string' },
    duration: { type: 'string' },
    connections: { type: 'string', default: '50' },
    drain: { type: 'string' },
    out: { type: 'string', default: join(__dirname, '..', '..', 'docs', 'benchmarks.md') },
    only: { type: 'string' },
    'database-url': { type: 'string', default: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres' },
    'redis-url': { type: 'string', default: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379' },
    tuning: { type: 'string' },
    'keep-going': { type: 'boolean', default: false },
    tracing: { type: 'boolean', default: false },
    // On by default (off with --tracing); --no-compare skips the reference and the ceiling.
    compare: { type: 'boolean' },
    // The reference relay's poll interval (ms): the documented pattern polls; the interval is a choice.
    'reference-poll-ms': { type: 'string', default: '100' },
    // Where a paid order's time goes: the module's spans, per stage (receipt, queue pickup,
    // processing, relay, dispatch), at 20/s and 200/s, with an SDK exporting to the collector stub.
    breakdown: { type: 'boolean', default: false },
    // The 200/s load this many times in a row in the same service process: its RSS at the end of each
    // run shows whether memory grows from one run to the next.
    'memory-runs': { type: 'string', default: '1' },
    // Measure the module (Express, all-in-one) again on a database seeded with this many inbox rows
    // of history (a tenth as many orders with their payments), and a retention purge under load.
    'seed-rows': { type: 'string', default: '0' },
  },
  allowNegative: true,
});

const TRACING = args.tracing!;
const PLATFORMS = (args.platforms ?? (TRACING ? 'express' : 'express,fastify')).split(',') as Platform[];
const TOPOLOGIES = (args.topologies ?? (TRACING ? 'all-in-one' : 'all-in-one,split')).split(',') as Topology[];
/** The loads to run; undefined for all of them. */
const BREAKDOWN = args.breakdown!;
const ONLY: string[] | undefined = TRACING ? ['new', 'e2e20', 'drain'] : BREAKDOWN ? ['e2e20', 'e2e200'] : args.only?.split(',');

const MAIN = join(__dirname, '..', 'src', 'main.js');
/** Issue 24's baselines, built next to this file. */
const REFERENCE = join(__dirname, 'reference-receiver.js');
const CEILING = join(__dirname, 'ceiling-receiver.js');
const COMPARE = !TRACING && !BREAKDOWN && (args.compare ?? true);
const DURATION = Number(args.duration ?? (TRACING ? '3' : '8'));
const CONNECTIONS = Number(args.connections);
const DRAIN = Number(args.drain ?? (TRACING ? '1000' : '3000'));
const MEMORY_RUNS = Math.max(1, Number(args['memory-runs']));
const SEED_ROWS = Math.max(0, Number(args['seed-rows']));
const SECRET = 'whsec_YmVuY2gtc3RhbmRhcmQtd2ViaG9va3Mta2V5LTAwMDE=';
const ADMIN = 'bench-admin-token';
const ACCOUNT = 'acc_bench';
const PATH = '/webhooks/bench';
/** Adyen's HMAC key as its Customer Area shows it (hex), and the merchant account the items name. */
const ADYEN_KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
const ADYEN_ACCOUNT = 'BenchEU';
const ADYEN_PATH = '/webhooks/bench-adyen';
const ADYEN_BATCH = 10;
const STRIPE_SECRET = 'whsec_bench_stripe_snapshot_destination';
const STRIPE_THIN_SECRET = 'whsec_bench_stripe_thin_destination';
const STRIPE_KEY = 'sk_test_bench_objects_stub_key';
const STRIPE_ACCOUNT = 'acct_1BenchStripe';
const endpoints = (stripeApi: string) =>
  JSON.stringify([
    { id: 'bench', provider: 'standard', secrets: [SECRET], merchantAccountId: ACCOUNT },
    { id: 'bench-adyen', provider: 'adyen', secrets: [ADYEN_KEY], merchantAccountId: ADYEN_ACCOUNT },
    { id: 'bench-stripe', provider: 'stripe', secrets: [STRIPE_SECRET], merchantAccountId: STRIPE_ACCOUNT },
    { id: 'bench-stripe-thin', provider: 'stripe', secrets: [STRIPE_THIN_SECRET], merchantAccountId: STRIPE_ACCOUNT, payloadStyle: 'thin', apiKey: STRIPE_KEY, apiBaseUrl: stripeApi },
  ]);

type Platform = 'express' | 'fastify';
type Topology = 'all-in-one' | 'split';
/** What a row measured: the module, or one of issue 24's baselines. */
type System = 'module' | 'reference' | 'ceiling';

/** The loads each baseline supports: the reference has no Adyen or Stripe endpoint, the ceiling processes nothing (nothing ships). */
const BASELINE_LOADS: Record<Exclude<System, 'module'>, ReadonlySet<string>> = {
  reference: new Set(['health', 'duplicate', 'new', 'e2e20', 'e2e200', 'drain']),
  ceiling: new Set(['health', 'duplicate', 'new', 'drain']),
};

interface Row {
  system: System;
  platform: Platform;
  topology: Topology;
  health: number;
  fresh: number;
  freshP99: number;
  duplicate: number;
  duplicateP99: number;
  e2e20: OpenLoop;
  e2e200: OpenLoop;
  drainIngest: number;
  drain: number;
  /** Adyen batches of ADYEN_BATCH items: requests/s, p99, and the drain's shipments/s. */
  adyen: number;
  adyenP99: number;
  adyenDrain: number;
  /** Drains of Stripe snapshot events and of thin notifications (each one fetch): shipments/s. */
  stripeDrain: number;
  stripeThinDrain: number;
  /** Fetches the thin drain made of the stand-in API. */
  stripeFetches: number;
  /** The service's RSS (MiB, all its processes) during the 200/s load and the drain: the most, and at the end; after each 200/s run. */
  memory: { e2e200?: RssWindow; drain?: RssWindow; runs: number[] };
  /** With --seed-rows: what was seeded, and the purge of its expired rows measured under a new-delivery load. */
  seeded?: Seeded;
  purge?: { deleted: number; seconds: number; intake: number };
  /** With --breakdown: per load (e2e20, e2e200), each stage's p50/p99 from the spans of the paid orders. */
  breakdown?: Record<string, Breakdown>;
  /** With --tracing: the tracing mode, the spans the collector stub received, and the orders that shipped. */
  tracing?: { mode: TracingMode; spans: number; orders: number };
  /** At the carrier simulator after the loads: shipments, the distinct orders they ship, and orders paid by the loads. */
  carrier: { shipments: number; orders: number; paid: number };
  errors: string[];
}

// ---------------------------------------------------------------- processes and the database

class Service {
  readonly child: ChildProcess;
  stderr = '';
  constructor(env: Record<string, string>, extraNodeArgs: string[] = [], script = MAIN) {
    // BENCH_NODE_ARGS: flags for the service's node (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof).
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
    this.child = spawn(process.execPath, [...nodeArgs, ...extraNodeArgs, script], {
      cwd: mkdtempSync(join(tmpdir(), 'pw-bench-')),
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', ...env },
      // The service's delivery lines are written as in production, and thrown away here.
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child.stderr!.on('data', (d) => (this.stderr = (this.stderr + d).slice(-4_000)));
  }
  stop(): Promise<void> {
    return stopChild(this.child);
  }
}

// ---------------------------------------------------------------- what the loads send

function paidDelivery(orderId: string): { body: string; headers: Record<string, string> } {
  const eventId = `msg_${randomUUID()}`;
  const body = JSON.stringify({
    type: 'payment.succeeded',
    timestamp: new Date().toISOString(),
    data: { payment_id: `pay_${randomUUID()}`, order_id: orderId, amount: 4990, currency: 'EUR', account_id: ACCOUNT },
  });
  return { body, headers: signedHeaders('standard', SECRET, body, { eventId }) };
}

/** A PaymentIntent that succeeded, paying `orderId` (4990 EUR, as every seeded order). */
function paymentIntent(orderId: string): Record<string, unknown> {
  const id = `pi_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
  return { id, object: 'payment_intent', amount: 4990, amount_received: 4990, currency: 'eur', status: 'succeeded', metadata: { order_id: orderId }, livemode: false };
}

/** The snapshot event of a PaymentIntent that succeeded, signed as Stripe signs it. */
function stripeSnapshot(orderId: string): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    id: `evt_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
    object: 'event',
    api_version: '2025-03-31.basil',
    created: Math.floor(Date.now() / 1000),
    type: 'payment_intent.succeeded',
    data: { object: paymentIntent(orderId) },
  });
  return { body, headers: signedHeaders('stripe', STRIPE_SECRET, body) };
}

/** The thin notification of the same change; the PaymentIntent goes to the stand-in API, which processing reads. */
function stripeThin(orderId: string, api: StripeObjects): { body: string; headers: Record<string, string> } {
  const pi = paymentIntent(orderId);
  api.objects.set(pi.id as string, JSON.stringify(pi));
  const body = JSON.stringify({
    id: `evt_test_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
    object: 'v2.core.event',
    type: 'v1.payment_intent.succeeded',
    livemode: false,
    created: new Date().toISOString(),
    related_object: { id: pi.id, type: 'payment_intent', url: `/v1/payment_intents/${pi.id}` },
  });
  return { body, headers: signedHeaders('stripe', STRIPE_THIN_SECRET, body) };
}

/** A stand-in for Stripe's API that serves the PaymentIntents the thin drain names (`GET /v1/payment_intents/{id}`). */
class StripeObjects {
  readonly objects = new Map<string, string>();
  fetches = 0;
  private server: Server | undefined;
  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const id = /^\/v1\/payment_intents\/([A-Za-z0-9_]+)$/.exec(req.url ?? '')?.[1];
      const object = id === undefined || req.headers.authorization !== `Bearer ${STRIPE_KEY}` ? undefined : this.objects.get(id);
      this.fetches++;
      res.writeHead(object ? 200 : 404, { 'content-type': 'application/json' });
      res.end(object ?? JSON.stringify({ error: { type: 'invalid_request_error', code: 'resource_missing', message: `No such payment_intent: '${id}'` } }));
    });
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
  }
  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }
  reset(): void {
    this.objects.clear();
    this.fetches = 0;
  }
  stop(): Promise<void> {
    this.server?.closeAllConnections();
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/**
 * One Adyen delivery: a batch of `AUTHORISATION` items, one per order (its id as the merchant
 * reference), each signed on its own over Adyen's signing string with the official library.
 */
function adyenBatch(orderIds: string[]): { body: string; headers: Record<string, string> } {
  const items = orderIds.map((orderId) => {
    const item: Record<string, unknown> = {
      eventCode: 'AUTHORISATION',
      success: 'true',
      pspReference: String(Math.floor(1e15 + Math.random() * 9e15)),
      originalReference: '',
      merchantAccountCode: ADYEN_ACCOUNT,
      merchantReference: orderId,
      eventDate: new Date().toISOString(),
      amount: { value: 4990, currency: 'EUR' },
      paymentMethod: 'visa',
      reason: '',
      additionalData: {},
    };
    item.additionalData = { hmacSignature: adyenHmac().calculateHmac(item as never, ADYEN_KEY) };
    return { NotificationRequestItem: item };
  });
  return { body: JSON.stringify({ live: 'false', notificationItems: items }), headers: { 'content-type': 'application/json' } };
}

let hmacValidator: { calculateHmac(item: never, key: string): string } | undefined;
/** Adyen's own HMAC validator, loaded when the Adyen load runs. */
function adyenHmac(): { calculateHmac(item: never, key: string): string } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (!hmacValidator) hmacValidator = new (require('@adyen/api-library') as { hmacValidator: new () => { calculateHmac(item: never, key: string): string } }).hmacValidator();
  return hmacValidator;
}

async function load(url: string, request: autocannon.Request): Promise<{ rps: number; p99: number; failed: number }> {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: DURATION, requests: [request] });
  return { rps: result.requests.average, p99: result.latency.p99, failed: result.non2xx + result.errors + result.timeouts };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

// ---------------------------------------------------------------- one configuration

/** How the service's processes start besides their configuration: node flags and environment (a tracing mode's). */
interface Launch {
  nodeArgs: string[];
  env: Record<string, string>;
  /** Runs after the loads, before the service stops (the tracing modes wait for the last spans). */
  afterLoads?: () => Promise<void>;
  /** Inbox rows of history to seed before the loads (and a purge measured under load), with --seed-rows. */
  seedRows?: number;
}

async function measure(
  platform: Platform,
  topology: Topology,
  sim: CarrierSimulator,
  shipped: Map<string, number>,
  stripeApi: StripeObjects,
  launch: Launch = { nodeArgs: [], env: {} },
  system: System = 'module',
): Promise<Row> {
  const database = system === 'module' ? `payments_bench_${process.pid}_${platform}_${topology.replace(/-/g, '_')}` : `payments_bench_${process.pid}_${system}`;
  await admin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await c.query(`CREATE DATABASE "${database}"`);
  });
  const databaseUrl = withDatabase(args['database-url']!, database);
  const port = await freePort();
  const base: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: args['redis-url']!,
    QUEUE_PREFIX: `pw-bench-${randomUUID().slice(0, 8)}`,
    ADMIN_TOKEN: ADMIN,
    CARRIER_URL: sim.url,
    WEBHOOK_ENDPOINTS: endpoints(stripeApi.url),
    HTTP_ADAPTER: platform,
    ...(args.tuning ? { PW_TUNING: args.tuning } : {}),
    ...launch.env,
  };
  // A baseline gets what it needs of the same setup: the database, the carrier, the bench's secret.
  const baseline = { DATABASE_URL: databaseUrl, CARRIER_URL: sim.url, WEBHOOK_SECRET: SECRET, PORT: String(port), REF_RELAY_POLL_MS: args['reference-poll-ms']! };
  const services =
    system !== 'module'
      ? [new Service(baseline, launch.nodeArgs, system === 'reference' ? REFERENCE : CEILING)]
      : topology === 'all-in-one'
      ? [new Service({ ...base, PORT: String(port) }, launch.nodeArgs)]
      : [
          new Service({ ...base, PORT: String(port), RUN_WORKERS: 'false' }, launch.nodeArgs),
          new Service({ ...base, RUN_HTTP: 'false', DB_MIGRATIONS_RUN: 'false' }, launch.nodeArgs),
        ];
  const url = `http://127.0.0.1:${port}`;
  const errors: string[] = [];
  try {
    await until('the service', async () => {
      if (services.some((s) => s.child.exitCode !== null)) throw new Error(`a service exited: ${services.map((s) => s.stderr).join('\n')}`);
      return fetch(`${url}/health/ready`).then((r) => r.ok, () => false);
    }, 60_000, 100);
    const adyenOrders = system === 'module' && (!ONLY || ONLY.some((l) => /adyen/.test(l))) ? 200_000 + DRAIN : 0;
    const stripeOrders = system === 'module' && (!ONLY || ONLY.some((l) => /stripe/.test(l))) ? 2 * DRAIN : 0;
    // Enough for the new-delivery load at well over its rate here (a shorter load with --tracing).
    const freshOrders = TRACING ? 20_000 : 60_000;
    const orderCount = freshOrders + DRAIN + 3_000 + adyenOrders + stripeOrders;
    /** Whether this system's deliveries ship (the ceiling only records them). */
    const ships = system !== 'ceiling';
    // The ceiling has no orders (it processes nothing): the ids in its deliveries are only payload,
    // made as they are needed (it takes far more deliveries per load than any seeding would cover).
    const orders = !ships
      ? []
      : await withClient(databaseUrl, (db) => (system === 'reference' ? seedReferenceOrders(db, orderCount, 'Bench') : seedInto(db, orderCount, 'Bench')));
    let next = 0;
    const nextOrder = () => {
      if (!ships) {
        next++;
        return randomUUID();
      }
      if (next >= orders.length) throw new Error('the benchmark ran out of seeded orders');
      return orders[next++];
    };
    const waitShipped = async (ids: string[], what: string, timeoutMs = 180_000) =>
      ships ? until(what, () => ids.every((id) => shipped.has(id)), timeoutMs, 100) : undefined;
    const row: Row = {
      system, platform, topology, carrier: { shipments: 0, orders: 0, paid: 0 }, health: NaN, fresh: NaN, freshP99: NaN, duplicate: NaN, duplicateP99: NaN,
      e2e20: { p50: NaN, p99: NaN, count: 0 }, e2e200: { p50: NaN, p99: NaN, count: 0 }, drainIngest: NaN, drain: NaN,
      adyen: NaN, adyenP99: NaN, adyenDrain: NaN, stripeDrain: NaN, stripeThinDrain: NaN, stripeFetches: 0, errors, memory: { runs: [] },
    };
    const wants = (name: string) => (!ONLY || ONLY.includes(name)) && (system === 'module' || BASELINE_LOADS[system].has(name));
    if (launch.seedRows) {
      process.stdout.write(`seeding ${launch.seedRows} deliveries… `);
      row.seeded = await withClient(databaseUrl, (db) => seedHistory(db, launch.seedRows!, ACCOUNT));
      process.stdout.write(`${row.seeded.seconds.toFixed(0)} s; `);
    }
    // Warm up every path (JIT, connection pools, prepared statements).
    const warm = Array.from({ length: 200 }, () => nextOrder());
    await Promise.all(warm.map((id) => post(url, paidDelivery(id))));
    await waitShipped(warm, 'the warm-up orders shipped', 60_000);
    await autocannon({ url, connections: CONNECTIONS, duration: 2, requests: [{ method: 'GET', path: '/health' }] });

    if (wants('health')) {
      const health = await load(url, { method: 'GET', path: '/health' });
      row.health = health.rps;
      if (health.failed) errors.push(`/health: ${health.failed} failed`);
    }
    if (wants('duplicate')) {
      const repeated = paidDelivery(nextOrder());
      const first = await post(url, repeated);
      if (first !== 200) errors.push(`the repeated delivery answered ${first}`);
      const dup = await load(url, { method: 'POST', path: PATH, headers: repeated.headers, body: repeated.body });
      row.duplicate = dup.rps;
      row.duplicateP99 = dup.p99;
      if (dup.failed) errors.push(`duplicates: ${dup.failed} failed`);
    }
    /** New deliveries for the load's duration, each paying an order of its own; the orders it paid. */
    const newDeliveries = async () => {
      const paid: string[] = [];
      const result = await load(url, {
        method: 'POST',
        path: PATH,
        setupRequest: (req) => {
          const id = nextOrder();
          paid.push(id);
          return { ...req, ...paidDelivery(id) };
        },
      });
      return { result, paid };
    };
    if (wants('new')) {
      const { result: fresh, paid } = await newDeliveries();
      row.fresh = fresh.rps;
      row.freshP99 = fresh.p99;
      if (fresh.failed) errors.push(`new deliveries: ${fresh.failed} failed`);
      // What the load recorded drains before the next load begins.
      await waitShipped(paid.slice(0, paid.length - fresh.failed - CONNECTIONS), 'the new-delivery backlog shipped', 240_000).catch((e) => errors.push(String(e)));
      if (row.seeded) {
        // The same load again while retention purges the expired history: intake during the purge.
        const purgeStarted = performance.now();
        const purging = fetch(`${url}/admin/retention/purge`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}` } }).then(async (r) => {
          const body = (await r.json()) as { deleted?: number };
          if (!r.ok) errors.push(`the purge answered ${r.status}`);
          return { deleted: body.deleted ?? NaN, seconds: (performance.now() - purgeStarted) / 1000 };
        });
        const { result: load2, paid: during } = await newDeliveries();
        const done = await purging;
        row.purge = { ...done, intake: load2.rps };
        if (done.seconds < DURATION) errors.push(`the purge ended in ${done.seconds.toFixed(1)} s, before the load did: the intake figure is partly without it`);
        await waitShipped(during.slice(0, during.length - load2.failed - CONNECTIONS), 'the backlog of the load during the purge shipped', 240_000).catch((e) => errors.push(String(e)));
      }
    }
    const pids = services.map((s) => s.child.pid!);
    // 20/s, then 200/s (again --memory-runs - 1 times, for the memory only: the first run is the figure).
    for (const [run, rate] of [20, 200, ...Array.from({ length: MEMORY_RUNS - 1 }, () => 200)].entries()) {
      if (!wants(`e2e${rate}`)) continue;
      const watch = new RssWatch(pids);
      if (BREAKDOWN) await collector.quiet().then(() => collector.keep());
      const cpuBefore = cpuNow(pids);
      const loop = await openLoop(url, rate, Math.max(5, DURATION), nextOrder, shipped, errors);
      loop.cpu = cpuPerOrder(cpuBefore, cpuNow(pids), loop.count);
      const window = watch.stop();
      if (rate === 20) row.e2e20 = loop;
      else {
        if (run === 1) {
          row.e2e200 = loop;
          row.memory.e2e200 = window;
        }
        row.memory.runs.push(window.end);
      }
      if (BREAKDOWN && run <= 1) {
        await collector.quiet();
        (row.breakdown ??= {})[`e2e${rate}`] = breakdown(collector.take());
      }
    }
    if (wants('drain')) {
      const ids = Array.from({ length: DRAIN }, () => nextOrder());
      const deliveries = ids.map(paidDelivery);
      let sent = 0;
      const watch = new RssWatch(pids);
      const started = performance.now();
      await Promise.all(
        Array.from({ length: CONNECTIONS }, async () => {
          while (sent < deliveries.length) {
            const status = await post(url, deliveries[sent++]);
            if (status !== 200) errors.push(`drain delivery answered ${status}`);
          }
        }),
      );
      const sendSeconds = (performance.now() - started) / 1000;
      row.drainIngest = DRAIN / sendSeconds;
      await waitShipped(ids, 'the drain shipped', 300_000).catch((e) => errors.push(String(e)));
      const times = ids.map((id) => shipped.get(id)).filter((t): t is number => t !== undefined).sort((a, b) => a - b);
      if (times.length > 1) row.drain = (times.length - 1) / ((times[times.length - 1] - times[0]) / 1000);
      row.memory.drain = watch.stop();
      if (times.length > 0) {
        // Where the drain's time goes: how much ships while the deliveries still arrive, and after.
        const sentAt = started + sendSeconds * 1000;
        const at = (ms: number) => `${((ms - started) / 1000).toFixed(2)} s`;
        process.stdout.write(`[drain: sent in ${at(sentAt)}, ${times.filter((t) => t <= sentAt).length} shipped by then, the last at ${at(times[times.length - 1])}] `);
      }
    }
    if (wants('adyen')) {
      const paid: string[] = [];
      const batches = await load(url, {
        method: 'POST',
        path: ADYEN_PATH,
        setupRequest: (req) => {
          const ids = Array.from({ length: ADYEN_BATCH }, () => nextOrder());
          paid.push(...ids);
          return { ...req, ...adyenBatch(ids) };
        },
      });
      row.adyen = batches.rps;
      row.adyenP99 = batches.p99;
      if (batches.failed) errors.push(`adyen batches: ${batches.failed} failed`);
      await waitShipped(paid.slice(0, paid.length - (batches.failed + CONNECTIONS) * ADYEN_BATCH), 'the adyen backlog shipped', 240_000).catch((e) => errors.push(String(e)));
    }
    if (wants('adyen-drain')) {
      const ids = Array.from({ length: DRAIN }, () => nextOrder());
      const batches: string[][] = [];
      for (let i = 0; i < ids.length; i += ADYEN_BATCH) batches.push(ids.slice(i, i + ADYEN_BATCH));
      const deliveries = batches.map(adyenBatch);
      let sent = 0;
      await Promise.all(
        Array.from({ length: CONNECTIONS }, async () => {
          while (sent < deliveries.length) {
            const status = await post(url, deliveries[sent++], ADYEN_PATH);
            if (status !== 200) errors.push(`adyen drain batch answered ${status}`);
          }
        }),
      );
      await waitShipped(ids, 'the adyen drain shipped', 300_000).catch((e) => errors.push(String(e)));
      const times = ids.map((id) => shipped.get(id)).filter((t): t is number => t !== undefined).sort((a, b) => a - b);
      if (times.length > 1) row.adyenDrain = (times.length - 1) / ((times[times.length - 1] - times[0]) / 1000);
    }
    // The same change in each of Stripe's styles: snapshot events carry the PaymentIntent, thin
    // notifications name it and processing reads it from the stand-in API (one fetch each).
    for (const [load, endpoint, make] of [
      ['stripe-drain', 'bench-stripe', stripeSnapshot],
      ['stripe-thin-drain', 'bench-stripe-thin', (id: string) => stripeThin(id, stripeApi)],
    ] as const) {
      if (!wants(load)) continue;
      const ids = Array.from({ length: DRAIN }, () => nextOrder());
      const deliveries = ids.map((id) => make(id));
      const fetchesBefore = stripeApi.fetches;
      let sent = 0;
      await Promise.all(
        Array.from({ length: CONNECTIONS }, async () => {
          while (sent < deliveries.length) {
            const status = await post(url, deliveries[sent++], `/webhooks/${endpoint}`);
            if (status !== 200) errors.push(`${load} delivery answered ${status}`);
          }
        }),
      );
      await waitShipped(ids, `the ${load} shipped`, 300_000).catch((e) => errors.push(String(e)));
      const times = ids.map((id) => shipped.get(id)).filter((t): t is number => t !== undefined).sort((a, b) => a - b);
      const rate = times.length > 1 ? (times.length - 1) / ((times[times.length - 1] - times[0]) / 1000) : NaN;
      if (load === 'stripe-drain') row.stripeDrain = rate;
      else {
        row.stripeThinDrain = rate;
        row.stripeFetches = stripeApi.fetches - fetchesBefore;
      }
    }
    await launch.afterLoads?.();
    // Exactly once, counted where it matters: at the carrier. Every order a load paid ships once
    // (an order the load's last in-flight requests named may not have been sent, hence <=).
    const perOrder = new Map<string, number>();
    for (const s of sim.shipments) if (s.orderId) perOrder.set(s.orderId, (perOrder.get(s.orderId) ?? 0) + 1);
    row.carrier = { shipments: sim.shipments.length, orders: perOrder.size, paid: next };
    const twice = [...perOrder.values()].filter((n) => n > 1).length;
    if (twice) errors.push(`${twice} order(s) shipped more than once`);
    if (!ships && sim.shipments.length) errors.push(`${sim.shipments.length} shipment(s) from a system that processes nothing`);
    if (perOrder.size > next) errors.push(`${perOrder.size - next} shipped order(s) that no load paid`);
    return row;
  } finally {
    await Promise.all(services.map((s) => s.stop()));
    await admin((c) => c.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)).catch(() => undefined);
  }
}

async function post(url: string, delivery: { body: string; headers: Record<string, string> }, path = PATH): Promise<number> {
  try {
    const res = await fetch(`${url}${path}`, { method: 'POST', headers: delivery.headers, body: delivery.body });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0;
  }
}

/** The RSS of a set of processes over a load (MiB): the most seen, and at its end. */
interface RssWindow {
  max: number;
  end: number;
}

/** Reads the processes' RSS every 100 ms from its creation until stop(). */
class RssWatch {
  private max = 0;
  private readonly timer: NodeJS.Timeout;
  constructor(private readonly pids: number[]) {
    this.sample();
    this.timer = setInterval(() => this.sample(), 100);
  }
  private sample(): number {
    let kb = 0;
    for (const pid of this.pids) {
      try {
        kb += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      } catch {
        // gone
      }
    }
    const mib = kb / 1024;
    this.max = Math.max(this.max, mib);
    return mib;
  }
  stop(): RssWindow {
    clearInterval(this.timer);
    const end = this.sample();
    return { max: this.max, end };
  }
}

/** An open-loop load's latencies, and the CPU each order cost (ms) in the service, PostgreSQL and Redis. */
interface OpenLoop {
  p50: number;
  p99: number;
  count: number;
  cpu?: CpuPerOrder;
}
type CpuPerOrder = { service: number; postgres: number; redis: number };

/** CPU time (ms) used so far by each of the service's processes, each PostgreSQL process and each Redis server on this machine, by pid. */
interface CpuSnapshot {
  service: Map<string, number>;
  postgres: Map<string, number>;
  redis: Map<string, number>;
}

function cpuNow(servicePids: number[]): CpuSnapshot {
  const ticks = (pid: number | string) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in ticks of 10 ms
    } catch {
      return 0;
    }
  };
  const byName = (name: string) => {
    const out = new Map<string, number>();
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === name) out.set(pid, ticks(pid));
      } catch {
        // gone meanwhile
      }
    }
    return out;
  };
  return { service: new Map(servicePids.map((pid) => [String(pid), ticks(pid)])), postgres: byName('postgres'), redis: byName('redis-server') };
}

/**
 * CPU per order between two snapshots: each process's time since the first (all of it for a process
 * that started in between; a process that ended in between is not counted).
 */
function cpuPerOrder(before: CpuSnapshot, after: CpuSnapshot, orders: number): CpuPerOrder {
  const used = (k: keyof CpuSnapshot) => {
    let sum = 0;
    for (const [pid, ms] of after[k]) sum += Math.max(0, ms - (before[k].get(pid) ?? 0));
    return orders > 0 ? sum / orders : NaN;
  };
  return { service: used('service'), postgres: used('postgres'), redis: used('redis') };
}

/** What each open-loop load of a row cost per order, one line each. */
function cpuLines(r: Row): string {
  return (['e2e20', 'e2e200'] as const)
    .filter((k) => r[k].cpu)
    .map((k) => `  ${k.slice(3)}/s: CPU per order ${fmt(r[k].cpu!.service, 2)} ms in the service, ${fmt(r[k].cpu!.postgres, 2)} ms in PostgreSQL, ${fmt(r[k].cpu!.redis, 2)} ms in Redis`)
    .join('\n');
}


/** Paid orders at a fixed rate for `seconds` (open loop): latency from each POST to its shipment. */
async function openLoop(
  url: string,
  rate: number,
  seconds: number,
  nextOrder: () => string,
  shipped: Map<string, number>,
  errors: string[],
): Promise<OpenLoop> {
  const sentAt = new Map<string, number>();
  const total = rate * seconds;
  const started = performance.now();
  const inFlight: Array<Promise<void>> = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const id = nextOrder();
    const delivery = paidDelivery(id);
    sentAt.set(id, performance.now());
    inFlight.push(
      post(url, delivery).then((status) => {
        if (status !== 200) errors.push(`e2e ${rate}/s delivery answered ${status}`);
      }),
    );
  }
  await Promise.all(inFlight);
  const ids = [...sentAt.keys()];
  await until(`the ${rate}/s orders shipped`, () => ids.every((id) => shipped.has(id)), 120_000, 100).catch((e) => errors.push(String(e)));
  const latencies = ids
    .filter((id) => shipped.has(id))
    .map((id) => shipped.get(id)! - sentAt.get(id)!)
    .sort((a, b) => a - b);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), count: latencies.length };
}

// ---------------------------------------------------------------- the table

function fmt(n: number, digits = 0): string {
  return Number.isFinite(n) ? n.toFixed(digits) : '—';
}

function ms(n: number): string {
  if (!Number.isFinite(n)) return '—';
  return n >= 1000 ? `${(n / 1000).toFixed(2)} s` : `${n.toFixed(0)} ms`;
}

function table(rows: Row[]): string {
  const lines = [
    '| platform | process | `GET /health` req/s | new deliveries req/s (of /health), p99 | duplicates req/s (of /health), p99 | end to end 20/s p50 / p99 | end to end 200/s p50 / p99 | drain shipments/s (of ingest) |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    const pct = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) ? ` (${((a / b) * 100).toFixed(0)} %)` : '');
    lines.push(
      `| ${r.platform} | ${r.topology === 'all-in-one' ? 'all-in-one' : 'HTTP-only + worker-only'} | ${fmt(r.health)} | ${fmt(r.fresh)}${pct(r.fresh, r.health)}, ${ms(r.freshP99)} | ${fmt(r.duplicate)}${pct(r.duplicate, r.health)}, ${ms(r.duplicateP99)} | ${ms(r.e2e20.p50)} / ${ms(r.e2e20.p99)} | ${ms(r.e2e200.p50)} / ${ms(r.e2e200.p99)} | ${fmt(r.drain)}${pct(r.drain, r.fresh)} |`,
    );
  }
  if (rows.some((r) => Number.isFinite(r.adyen) || Number.isFinite(r.adyenDrain))) {
    lines.push(
      '',
      `Adyen: each request a batch of ${ADYEN_BATCH} signed items (each an \`AUTHORISATION\` paying an order of its own), recorded in one statement.`,
      '',
      '| platform | process | Adyen batches req/s (events/s), p99 | Adyen drain shipments/s |',
      '| --- | --- | ---: | ---: |',
    );
    for (const r of rows) {
      lines.push(
        `| ${r.platform} | ${r.topology === 'all-in-one' ? 'all-in-one' : 'HTTP-only + worker-only'} | ${fmt(r.adyen)} (${fmt(r.adyen * ADYEN_BATCH)}), ${ms(r.adyenP99)} | ${fmt(r.adyenDrain)} |`,
      );
    }
  }
  if (rows.some((r) => Number.isFinite(r.stripeDrain) || Number.isFinite(r.stripeThinDrain))) {
    lines.push(
      '',
      `Stripe: a drain of ${DRAIN} \`payment_intent.succeeded\` snapshot events, and one of ${DRAIN} thin notifications of the same change, each read by processing from a local stand-in for Stripe's API (one \`GET /v1/payment_intents/{id}\` per notification; the fetches column counts them).`,
      '',
      '| platform | process | Stripe snapshot drain shipments/s | Stripe thin drain shipments/s (of snapshot) | thin fetches |',
      '| --- | --- | ---: | ---: | ---: |',
    );
    for (const r of rows) {
      const pct = Number.isFinite(r.stripeDrain) && Number.isFinite(r.stripeThinDrain) ? ` (${((r.stripeThinDrain / r.stripeDrain) * 100).toFixed(0)} %)` : '';
      lines.push(
        `| ${r.platform} | ${r.topology === 'all-in-one' ? 'all-in-one' : 'HTTP-only + worker-only'} | ${fmt(r.stripeDrain)} | ${fmt(r.stripeThinDrain)}${pct} | ${r.stripeFetches} |`,
      );
    }
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------- against the reference and the ceiling (issue 24)

const SYSTEM_LABEL: Record<Exclude<System, 'module'>, string> = {
  reference: 'reference design (NestJS + pg, one transaction, polling relay)',
  ceiling: 'ceiling (node:http + pg, HMAC + batched INSERT)',
};

function label(r: Row): string {
  if (r.system !== 'module') return r.system;
  const seeded = r.seeded ? `, on ${millions(r.seeded.deliveries)} deliveries of history` : '';
  return `module, ${r.platform}, ${r.topology === 'all-in-one' ? 'all-in-one' : 'HTTP-only + worker-only'}${seeded}`;
}

function millions(n: number): string {
  return n >= 1e6 ? `${+(n / 1e6).toFixed(1)} M` : `${+(n / 1e3).toFixed(0)} k`;
}

/** With --seed-rows: the seeded run beside the empty one, each figure's ratio, and the purge. */
function seededTable(rows: Row[]): string {
  const seeded = rows.find((r) => r.seeded);
  const empty = rows.find((r) => r.system === 'module' && !r.seeded && r.platform === 'express' && r.topology === 'all-in-one');
  if (!seeded?.seeded) return '';
  const s = seeded.seeded;
  const ratio = (a: number, b: number, higherIsBetter: boolean) =>
    Number.isFinite(a) && Number.isFinite(b) && a > 0 && b > 0 ? `${(higherIsBetter ? a / b : b / a).toFixed(2)}` : 'n/a';
  const figures: Array<[string, (r: Row) => number, boolean, (n: number) => string]> = [
    ['new deliveries req/s', (r) => r.fresh, true, fmt],
    ['duplicates req/s', (r) => r.duplicate, true, fmt],
    ['end to end 200/s p50', (r) => r.e2e200.p50, false, ms],
    ['end to end 200/s p99', (r) => r.e2e200.p99, false, ms],
    ['drain shipments/s', (r) => r.drain, true, fmt],
  ];
  const lines = [
    `Seeded with ${s.deliveries} deliveries (${s.expired} past the 90-day retention) and ${s.orders} orders with their payments in ${s.seconds.toFixed(0)} s: ` +
      `database ${(s.databaseBytes / 2 ** 30).toFixed(2)} GiB, the inbox with its indexes ${(s.inboxBytes / 2 ** 30).toFixed(2)} GiB ` +
      `(${((s.inboxBytes / s.deliveries) * 1e6 / 2 ** 20).toFixed(0)} MiB per million deliveries).`,
    '',
    '| figure | empty database | seeded | seeded as a share of empty (target ≥ 0.80) |',
    '| --- | ---: | ---: | ---: |',
  ];
  for (const [name, get, higher, show] of figures) {
    lines.push(`| ${name} | ${empty ? show(get(empty)) : '—'} | ${show(get(seeded))} | ${empty ? ratio(get(seeded), get(empty), higher) : 'n/a'} |`);
  }
  if (seeded.purge) {
    const p = seeded.purge;
    lines.push(
      `| new deliveries req/s while retention purges ${fmt(p.deleted)} rows (${p.seconds.toFixed(0)} s) | ${fmt(seeded.fresh)} | ${fmt(p.intake)} | ${ratio(p.intake, seeded.fresh, true)} |`,
    );
  }
  return lines.join('\n');
}

/** The figures compared, each with how it prints. */
const FIGURES: Array<{ name: string; get: (r: Row) => number; show: (n: number) => string }> = [
  { name: '`GET /health` req/s', get: (r) => r.health, show: (n) => `${fmt(n)}/s` },
  { name: 'new deliveries req/s', get: (r) => r.fresh, show: (n) => `${fmt(n)}/s` },
  { name: 'new deliveries p99', get: (r) => r.freshP99, show: ms },
  { name: 'duplicates req/s', get: (r) => r.duplicate, show: (n) => `${fmt(n)}/s` },
  { name: 'duplicates p99', get: (r) => r.duplicateP99, show: ms },
  { name: 'end to end 20/s p50', get: (r) => r.e2e20.p50, show: ms },
  { name: 'end to end 20/s p99', get: (r) => r.e2e20.p99, show: ms },
  { name: 'end to end 200/s p50', get: (r) => r.e2e200.p50, show: ms },
  { name: 'end to end 200/s p99', get: (r) => r.e2e200.p99, show: ms },
  { name: 'drain ingest', get: (r) => r.drainIngest, show: (n) => `${fmt(n)}/s` },
  { name: 'drain shipments', get: (r) => r.drain, show: (n) => `${fmt(n)}/s` },
];

/** `a / b` as "1.31×", or "n/a" when either side was not measured. */
function times(a: number, b: number): string {
  return Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}×` : 'n/a';
}

/** One row per system, then the module's rows divided by the reference's and by the ceiling's. */
/** What each system cost: CPU per order at 20/s and 200/s, and the service's memory. */
function resourceTable(rows: Row[]): string {
  const lines = [
    '| system | CPU per order at 20/s: service / PostgreSQL / Redis | CPU per order at 200/s: service / PostgreSQL / Redis | RSS during 200/s: most / end | RSS during the drain: most / end | RSS after each 200/s run |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
  ];
  const cpu = (c?: CpuPerOrder) => (c ? `${fmt(c.service, 2)} / ${fmt(c.postgres, 2)} / ${fmt(c.redis, 2)} ms` : '—');
  const mem = (w?: RssWindow) => (w ? `${fmt(w.max)} / ${fmt(w.end)} MiB` : '—');
  for (const r of rows) {
    const name = r.system === 'module' ? label(r) : SYSTEM_LABEL[r.system];
    const runs = r.memory.runs.length ? `${r.memory.runs.map((m) => fmt(m)).join(', ')} MiB` : '—';
    lines.push(`| ${name} | ${cpu(r.e2e20.cpu)} | ${cpu(r.e2e200.cpu)} | ${mem(r.memory.e2e200)} | ${mem(r.memory.drain)} | ${runs} |`);
  }
  return lines.join('\n');
}

function compareTable(rows: Row[]): string {
  const reference = rows.find((r) => r.system === 'reference');
  const ceiling = rows.find((r) => r.system === 'ceiling');
  const lines = [
    '| system | `GET /health` req/s | new deliveries req/s, p99 | duplicates req/s (of /health), p99 | end to end 20/s p50 / p99 | end to end 200/s p50 / p99 | drain ingest → shipments/s (of new deliveries) | shipments (distinct orders) / orders the loads named |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  const pct = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? ` (${((a / b) * 100).toFixed(0)} %)` : '');
  for (const r of rows) {
    const name = r.system === 'module' ? label(r) : SYSTEM_LABEL[r.system];
    const carrier = r.system === 'ceiling' ? 'n/a' : `${r.carrier.shipments} (${r.carrier.orders} orders) / ${r.carrier.paid}`;
    lines.push(
      `| ${name} | ${fmt(r.health)} | ${fmt(r.fresh)}, ${ms(r.freshP99)} | ${fmt(r.duplicate)}${pct(r.duplicate, r.health)}, ${ms(r.duplicateP99)} | ` +
        `${ms(r.e2e20.p50)} / ${ms(r.e2e20.p99)} | ${ms(r.e2e200.p50)} / ${ms(r.e2e200.p99)} | ${fmt(r.drainIngest)} → ${fmt(r.drain)}${pct(r.drain, r.fresh)} | ${carrier} |`,
    );
  }
  for (const m of rows.filter((r) => r.system === 'module')) {
    for (const base of [reference, ceiling]) {
      if (!base) continue;
      lines.push(
        `| ${label(m)} ÷ ${base.system} | ${times(m.health, base.health)} | ${times(m.fresh, base.fresh)}, ${times(m.freshP99, base.freshP99)} | ` +
          `${times(m.duplicate, base.duplicate)}, ${times(m.duplicateP99, base.duplicateP99)} | ${times(m.e2e20.p50, base.e2e20.p50)} / ${times(m.e2e20.p99, base.e2e20.p99)} | ` +
          `${times(m.e2e200.p50, base.e2e200.p50)} / ${times(m.e2e200.p99, base.e2e200.p99)} | ${times(m.drainIngest, base.drainIngest)} → ${times(m.drain, base.drain)} | |`,
      );
    }
  }
  return lines.join('\n');
}

/**
 * Each figure of each module row with its ratios (a ratio above 1 is more throughput, or a longer
 * latency), then issue 24's targets, each with the figure it was judged on.
 */
function compareLines(rows: Row[]): string {
  const reference = rows.find((r) => r.system === 'reference');
  const ceiling = rows.find((r) => r.system === 'ceiling');
  const out: string[] = [];
  for (const m of rows.filter((r) => r.system === 'module')) {
    out.push(`${label(m)}:`, '');
    for (const f of FIGURES) {
      const value = f.get(m);
      if (!Number.isFinite(value)) continue;
      const ratios = [reference, ceiling].filter((b): b is Row => b !== undefined).map((b) => `${times(value, f.get(b))} ${b.system}`);
      out.push(`- ${f.name} ${f.show(value)} — ${ratios.join(', ')}`);
    }
    const verdict = (ok: boolean | undefined) => (ok === undefined ? 'not measured' : ok ? 'met' : 'NOT met');
    const known = (...n: number[]) => n.every(Number.isFinite);
    const t: Array<[string, boolean | undefined]> = [
      [
        `end to end 200/s p50 ≤ 15 ms and ≤ the reference's (${ms(m.e2e200.p50)}; reference ${ms(reference?.e2e200.p50 ?? NaN)})`,
        known(m.e2e200.p50) ? m.e2e200.p50 <= 15 && (!reference || !known(reference.e2e200.p50) || m.e2e200.p50 <= reference.e2e200.p50) : undefined,
      ],
      [
        `end to end 200/s p99 ≤ 100 ms and ≤ the reference's (${ms(m.e2e200.p99)}; reference ${ms(reference?.e2e200.p99 ?? NaN)})`,
        known(m.e2e200.p99) ? m.e2e200.p99 <= 100 && (!reference || !known(reference.e2e200.p99) || m.e2e200.p99 <= reference.e2e200.p99) : undefined,
      ],
      [`duplicates ≥ 80 % of /health (${times(m.duplicate, m.health)})`, known(m.duplicate, m.health) ? m.duplicate >= 0.8 * m.health : undefined],
      [
        `new deliveries and duplicates ≥ the reference's (${times(m.fresh, reference?.fresh ?? NaN)}, ${times(m.duplicate, reference?.duplicate ?? NaN)})`,
        reference && known(m.fresh, m.duplicate, reference.fresh, reference.duplicate) ? m.fresh >= reference.fresh && m.duplicate >= reference.duplicate : undefined,
      ],
      // Judged on the drain's own ingest rate (the issue's "ingest → shipped/s"); the ratio to the
      // new-delivery load, the module table's "(of ingest)", is shown beside it.
      [
        `drain ≥ 60 % of ingest (${times(m.drain, m.drainIngest)} of the drain's ingest; ${times(m.drain, m.fresh)} of new deliveries)`,
        known(m.drain, m.drainIngest) ? m.drain >= 0.6 * m.drainIngest : undefined,
      ],
      [`drain ≥ 1.5× the reference's (${times(m.drain, reference?.drain ?? NaN)})`, reference && known(m.drain, reference.drain) ? m.drain >= 1.5 * reference.drain : undefined],
    ];
    out.push('', "issue 24's targets:");
    for (const [what, ok] of t) out.push(`- ${what}: ${verdict(ok)}`);
    out.push('');
  }
  for (const b of [reference, ceiling]) {
    if (!b) continue;
    out.push(
      b.system === 'ceiling'
        ? `${b.system}: ${b.carrier.shipments} shipments (it processes nothing)`
        : `${b.system}: ${b.carrier.shipments} shipments for ${b.carrier.orders} distinct orders, ${b.carrier.paid} orders paid by the loads`,
    );
  }
  return out.join('\n');
}

// ---------------------------------------------------------------- tracing (--tracing)

/**
 * The tracing modes, each a fresh service on a database of its own, in this order; every ratio is
 * to the first. `off` runs again last, so the run shows how far two identical rows drift here.
 */
const TRACING_MODES = ['off', 'api', 'sdk', 'off-again'] as const;
type TracingMode = (typeof TRACING_MODES)[number];

const TRACING_LABEL: Record<TracingMode, string> = {
  off: 'tracing off (no @opentelemetry/api)',
  api: 'API, no SDK',
  sdk: 'tracing on (SDK, OTLP export)',
  'off-again': 'tracing off, again',
};

/** The preloads (built next to this file from tools/bench-otel-*.ts). */
const OTEL_ABSENT = join(__dirname, 'bench-otel-absent.js');
const OTEL_SDK = join(__dirname, 'bench-otel-sdk.js');

/**
 * How long the collector must hear nothing before a mode's span count is final (the batch processor
 * exports every 5 s; with --breakdown, every 200 ms).
 */
const SPANS_QUIET_MS = BREAKDOWN ? 1_500 : 6_000;

/**
 * A stand-in for an OpenTelemetry collector: `POST /v1/traces` with an OTLP/HTTP JSON body (gzip
 * or not), answered 200 at once; it counts the spans. Anything else is counted as refused.
 */
class CollectorStub {
  private kept: KeptSpan[] | undefined;
  spans = 0;
  exports = 0;
  refused = 0;
  lastAt = 0;
  private server: Server | undefined;
  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      void this.receive(req).then(
        (ok) => {
          res.writeHead(ok ? 200 : 400, { 'content-type': 'application/json' });
          res.end('{}');
        },
        () => {
          res.writeHead(500);
          res.end();
        },
      );
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
  }
  private async receive(req: IncomingMessage): Promise<boolean> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    this.lastAt = performance.now();
    if (req.method !== 'POST' || req.url !== '/v1/traces' || !/json/.test(req.headers['content-type'] ?? '')) {
      this.refused++;
      return false;
    }
    let body = Buffer.concat(chunks);
    if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
    const payload = JSON.parse(body.toString('utf8')) as { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: unknown[] }> }> };
    for (const rs of payload.resourceSpans ?? []) {
      for (const ss of rs.scopeSpans ?? []) {
        this.spans += ss.spans?.length ?? 0;
        if (this.kept) for (const span of (ss.spans ?? []) as OtlpSpan[]) this.kept.push(keptSpan(span));
      }
    }
    this.exports++;
    return true;
  }
  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/v1/traces`;
  }
  /** Keeps the spans that arrive from now on, for take(). */
  keep(): void {
    this.kept = [];
  }
  /** The spans kept since keep(), and stops keeping. */
  take(): KeptSpan[] {
    const kept = this.kept ?? [];
    this.kept = undefined;
    return kept;
  }
  reset(): void {
    this.kept = undefined;
    this.spans = 0;
    this.exports = 0;
    this.refused = 0;
    this.lastAt = 0;
  }
  /** Resolves once nothing has arrived for SPANS_QUIET_MS (and at least that long after it was called). */
  async quiet(): Promise<void> {
    const since = performance.now();
    await until('the collector stub to go quiet', () => performance.now() - Math.max(since, this.lastAt) >= SPANS_QUIET_MS, 60_000, 200);
  }
  stop(): Promise<void> {
    this.server?.closeAllConnections();
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** The collector stub of --tracing and --breakdown (started only for them). */
const collector = new CollectorStub();

/** How the service starts in each mode. */
function tracingLaunch(mode: TracingMode, collector: CollectorStub): Launch {
  const afterLoads = () => collector.quiet();
  switch (mode) {
    case 'off':
    case 'off-again':
      return { nodeArgs: ['--require', OTEL_ABSENT], env: {}, afterLoads };
    case 'api':
      return { nodeArgs: [], env: {}, afterLoads };
    case 'sdk':
      return { nodeArgs: ['--require', OTEL_SDK], env: { PW_BENCH_OTLP_TRACES_URL: collector.url }, afterLoads };
  }
}

/** With --breakdown: the SDK of the "tracing on" mode, exporting often and dropping nothing at 200/s. */
function breakdownLaunch(): Launch {
  return { nodeArgs: ['--require', OTEL_SDK], env: { PW_BENCH_OTLP_TRACES_URL: collector.url, OTEL_BSP_SCHEDULE_DELAY: '200', OTEL_BSP_MAX_QUEUE_SIZE: '65536', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '2048' } };
}

/** A span as the breakdown needs it: its trace, name and times (ms since the epoch). */
interface KeptSpan {
  traceId: string;
  name: string;
  start: number;
  end: number;
}
interface OtlpSpan {
  traceId?: string;
  name?: string;
  startTimeUnixNano?: string | number;
  endTimeUnixNano?: string | number;
}
function keptSpan(s: OtlpSpan): KeptSpan {
  const ms = (ns: string | number | undefined) => Number(BigInt(ns ?? 0) / 1000n) / 1000;
  return { traceId: s.traceId ?? '', name: s.name ?? '', start: ms(s.startTimeUnixNano), end: ms(s.endTimeUnixNano) };
}

/** The stages of a paid order, in order, as the spans of its one trace show them. */
const STAGES = ['receipt', 'queue pickup', 'processing', 'relay', 'dispatch (carrier call)', 'total'] as const;
type Breakdown = { orders: number } & Record<(typeof STAGES)[number], { p50: number; p99: number }>;

/**
 * Each stage's p50 and p99 over the traces that hold a receipt, a processing and a fulfillment
 * dispatch: receipt (request arrival → the answer's record), queue pickup (receipt end → the
 * processing span's start: commit, enqueue, the worker's pickup, its slot and batch), processing
 * (the transaction), relay (its end → the dispatch's start: commit, NOTIFY, enqueue, pickup),
 * dispatch (the carrier call and its record), total (arrival → dispatch end).
 */
function breakdown(spans: KeptSpan[]): Breakdown {
  const traces = new Map<string, KeptSpan[]>();
  for (const s of spans) traces.set(s.traceId, [...(traces.get(s.traceId) ?? []), s]);
  const stages: Record<string, number[]> = Object.fromEntries(STAGES.map((s) => [s, []]));
  for (const list of traces.values()) {
    const receipt = list.find((s) => s.name.startsWith('webhook receive'));
    const processing = list.filter((s) => s.name.startsWith('webhook process')).sort((a, b) => b.start - a.start)[0];
    const dispatch = list.filter((s) => s.name === 'outbox dispatch fulfillment.dispatch').sort((a, b) => a.start - b.start)[0];
    if (!receipt || !processing || !dispatch) continue;
    const values = [
      receipt.end - receipt.start,
      processing.start - receipt.end,
      processing.end - processing.start,
      dispatch.start - processing.end,
      dispatch.end - dispatch.start,
      dispatch.end - receipt.start,
    ];
    STAGES.forEach((stage, i) => stages[stage].push(values[i]));
  }
  const out = { orders: stages.total.length } as Breakdown;
  for (const stage of STAGES) {
    const sorted = stages[stage].sort((a, b) => a - b);
    out[stage] = { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
  }
  return out;
}

function breakdownTable(rows: Row[]): string {
  const lines = [
    `| platform | process | load | orders | ${STAGES.join(' | ')} |`,
    `| --- | --- | --- | ---: | ${STAGES.map(() => '---:').join(' | ')} |`,
  ];
  for (const r of rows) {
    for (const [load, b] of Object.entries(r.breakdown ?? {})) {
      lines.push(
        `| ${r.platform} | ${r.topology === 'all-in-one' ? 'all-in-one' : 'HTTP-only + worker-only'} | ${load.replace('e2e', '')}/s | ${b.orders} | ` +
          `${STAGES.map((s) => `${ms1(b[s].p50)} / ${ms1(b[s].p99)}`).join(' | ')} |`,
      );
    }
  }
  return lines.join('\n');
}

function ms1(n: number): string {
  return Number.isFinite(n) ? `${n.toFixed(1)}` : '—';
}

/** The modes measure what they say: the preload hides the API, and without it the API resolves from the service. */
function checkTracingModes(): void {
  for (const file of [OTEL_ABSENT, OTEL_SDK]) if (!existsSync(file)) throw new Error(`${file} is missing: npm run build first`);
  const hidden = spawnSync(process.execPath, ['--require', OTEL_ABSENT, '-e', "require('@opentelemetry/api')"], { encoding: 'utf8' });
  if (hidden.status === 0 || !/MODULE_NOT_FOUND/.test(hidden.stderr)) throw new Error(`${OTEL_ABSENT} does not hide @opentelemetry/api`);
  try {
    require.resolve('@opentelemetry/api', { paths: [dirname(MAIN)] });
  } catch {
    throw new Error('@opentelemetry/api is not installed: the "API, no SDK" and "tracing on" rows need it (npm install)');
  }
}

/** A figure and its ratio to the first row's, as "812 (0.93×)". */
function withRatio(value: number, base: number, show: (n: number) => string): string {
  if (!Number.isFinite(value)) return '—';
  return Number.isFinite(base) && base > 0 ? `${show(value)} (${(value / base).toFixed(2)}×)` : show(value);
}

function tracingTable(rows: Row[]): string {
  const lines = [
    '| platform | process | tracing | new deliveries/s (× off) | new deliveries p99 (× off) | end to end 20/s p50 / p99 (× off) | drain ingest/s (× off) | drain shipments/s (× off) | spans at the stub (per shipped order) |',
    '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  for (const r of rows) {
    const base = rows.find((b) => b.platform === r.platform && b.topology === r.topology && b.tracing?.mode === 'off') ?? r;
    const t = r.tracing!;
    const perOrder = t.orders > 0 ? ` (${(t.spans / t.orders).toFixed(2)})` : '';
    lines.push(
      `| ${r.platform} | ${r.topology === 'all-in-one' ? 'all-in-one' : 'HTTP-only + worker-only'} | ${TRACING_LABEL[t.mode]} | ` +
        `${withRatio(r.fresh, base.fresh, fmt)} | ${withRatio(r.freshP99, base.freshP99, ms)} | ` +
        `${withRatio(r.e2e20.p50, base.e2e20.p50, ms)} / ${withRatio(r.e2e20.p99, base.e2e20.p99, ms)} | ` +
        `${withRatio(r.drainIngest, base.drainIngest, fmt)} | ${withRatio(r.drain, base.drain, fmt)} | ${t.spans}${perOrder} |`,
    );
  }
  return lines.join('\n');
}

/** One line per figure of a mode, with its ratio to the first row's. */
function tracingLines(r: Row, base: Row): string {
  const label = TRACING_LABEL[r.tracing!.mode];
  const ratio = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `, ${(a / b).toFixed(2)}× off` : '');
  return [
    `  ${label}: ${fmt(r.fresh)} new deliveries/s${ratio(r.fresh, base.fresh)}; p99 ${ms(r.freshP99)}${ratio(r.freshP99, base.freshP99)}`,
    `  ${label}: end to end at 20/s p50 ${ms(r.e2e20.p50)}${ratio(r.e2e20.p50, base.e2e20.p50)}; p99 ${ms(r.e2e20.p99)}${ratio(r.e2e20.p99, base.e2e20.p99)}`,
    `  ${label}: drain ingest ${fmt(r.drainIngest)}/s${ratio(r.drainIngest, base.drainIngest)}; ${fmt(r.drain)} shipped/s${ratio(r.drain, base.drain)}`,
    `  ${label}: ${r.tracing!.spans} spans at the collector stub for ${r.tracing!.orders} shipped orders`,
  ].join('\n');
}

/** A connection to the admin database (`--database-url`). */
function admin<T>(work: (client: Client) => Promise<T>): Promise<T> {
  return withClient(args['database-url']!, work);
}

async function main(): Promise<void> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: npm run build first`);
  if (TRACING) checkTracingModes();
  if (TRACING || BREAKDOWN) await collector.start();
  const sim = new CarrierSimulator();
  const shipped = new Map<string, number>();
  sim.onShipment = (s) => {
    if (s.orderId) shipped.set(s.orderId, performance.now());
  };
  await sim.start();
  const stripeApi = new StripeObjects();
  await stripeApi.start();
  const [pg] = await admin((c) =>
    c
      .query<{ server_version: string; shared_buffers: string; work_mem: string; synchronous_commit: string }>(
        `SELECT current_setting('server_version') AS server_version, current_setting('shared_buffers') AS shared_buffers,
                current_setting('work_mem') AS work_mem, current_setting('synchronous_commit') AS synchronous_commit`,
      )
      .then((r) => r.rows),
  );
  const rows: Row[] = [];
  const started = Date.now();
  /** A system measured since `t`: its line, its CPU per order, and the stand-ins emptied for the next. */
  const done = (row: Row, t: number) => {
    console.log(`done in ${((Date.now() - t) / 1000).toFixed(0)} s${row.errors.length ? ` (${row.errors.length} problem(s): ${row.errors.slice(0, 3).join('; ')})` : ''}`);
    console.log(cpuLines(row));
    sim.reset();
    stripeApi.reset();
    shipped.clear();
  };
  try {
    for (const topology of TOPOLOGIES) {
      for (const platform of PLATFORMS) {
        for (const mode of TRACING ? TRACING_MODES : [undefined]) {
          process.stdout.write(`${platform}, ${topology}${mode ? `, ${TRACING_LABEL[mode]}` : ''}: `);
          const t = Date.now();
          const launch = mode ? tracingLaunch(mode, collector) : BREAKDOWN ? breakdownLaunch() : undefined;
          const row = await measure(platform, topology, sim, shipped, stripeApi, launch);
          if (mode) {
            row.tracing = { mode, spans: collector.spans, orders: shipped.size };
            if (collector.refused) row.errors.push(`the collector stub refused ${collector.refused} request(s)`);
            if (mode === 'sdk' ? collector.spans === 0 : collector.spans !== 0) {
              row.errors.push(`${TRACING_LABEL[mode]}: the collector stub received ${collector.spans} spans`);
            }
            collector.reset();
          }
          rows.push(row);
          done(row, t);
          if (mode) {
            const base = rows.find((b) => b.platform === platform && b.topology === topology && b.tracing?.mode === 'off') ?? row;
            console.log(tracingLines(row, base));
          }
        }
      }
    }
    // The module again on a database holding a busy service's history (--seed-rows).
    if (SEED_ROWS > 0) {
      process.stdout.write(`express, all-in-one, on ${millions(SEED_ROWS)} deliveries of history: `);
      const t = Date.now();
      const row = await measure('express', 'all-in-one', sim, shipped, stripeApi, { nodeArgs: [], env: {}, seedRows: SEED_ROWS });
      rows.push(row);
      done(row, t);
    }
    // The baselines after the module, each on a fresh database, against the same carrier simulator.
    if (COMPARE) {
      for (const file of [REFERENCE, CEILING]) if (!existsSync(file)) throw new Error(`${file} is missing: npm run build first`);
      for (const system of ['reference', 'ceiling'] as const) {
        process.stdout.write(`${SYSTEM_LABEL[system]}: `);
        const t = Date.now();
        const row = await measure('express', 'all-in-one', sim, shipped, stripeApi, undefined, system);
        rows.push(row);
        done(row, t);
      }
    }
  } finally {
    await sim.stop();
    await stripeApi.stop();
    await collector.stop();
  }
  const header =
    `${new Date().toISOString().slice(0, 10)}: ${cpus().length} CPUs (${cpus()[0]?.model.trim() ?? 'unknown'}), Node ${process.version}, ` +
    `PostgreSQL ${pg.server_version} (shared_buffers ${pg.shared_buffers}, work_mem ${pg.work_mem}, synchronous_commit ${pg.synchronous_commit}); ${CONNECTIONS} connections, ${DURATION} s per load, drain of ${DRAIN}; ` +
    `load generator, carrier simulator, service, PostgreSQL and Redis on the same machine; ${((Date.now() - started) / 1000).toFixed(0)} s in all.`;
  const modules = rows.filter((r) => r.system === 'module');
  const comparison = COMPARE ? `\n${compareTable(rows)}\n\n${compareLines(rows)}\n` : '';
  const resources = `\nCPU per paid order (the CPU time each used during the open-loop load, over the orders it shipped) and the service's memory:\n\n${resourceTable(rows)}\n`;
  const breakdowns = BREAKDOWN ? `\nWhere a paid order's time goes (ms, p50 / p99 of each stage, from the module's spans; an SDK exports them, so the totals are a little above the plain run's):\n\n${breakdownTable(modules)}\n` : '';
  const seededPart = SEED_ROWS > 0 ? `\n${seededTable(rows)}\n` : '';
  const result = `${header}\n\n${TRACING ? tracingTable(modules) : table(modules)}\n${breakdowns}${comparison}${TRACING ? '' : resources}${seededPart}`;
  console.log(`\n${result}`);
  const problems = rows.flatMap((r) => r.errors.map((e) => `${label(r)}: ${e}`));
  if (problems.length) console.log(`problems:\n${problems.map((p) => `- ${p}`).join('\n')}`);
  if (args.out && !args.only && !TRACING && !BREAKDOWN) writeResult(args.out, result);
  if (problems.length && !args['keep-going']) process.exitCode = 1;
}

/** Replaces the text between the markers of `file` (or appends a section with them). */
function writeResult(file: string, result: string): void {
  const start = '<!-- bench:start -->';
  const end = '<!-- bench:end -->';
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '# Benchmarks\n';
  const block = `${start}\n${result}${end}`;
  const next = text.includes(start) && text.includes(end)
    ? text.slice(0, text.indexOf(start)) + block + text.slice(text.indexOf(end) + end.length)
    : `${text.trimEnd()}\n\n## Latest run\n\n${block}\n`;
  writeFileSync(file, next);
  console.log(`written to ${file}`);
}

void main().catch((err: Error) => {
  console.error(`bench failed: ${err.message}`);
  process.exit(1);
});
