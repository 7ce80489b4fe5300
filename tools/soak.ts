/**
 * The soak: the built service under a steady mixed load for a long time, watched once a minute.
 *
 *   npm run soak -- [--minutes 30] [--rate R] [--topology all-in-one|split] [--platform express|fastify]
 *                   [--mix new=60,duplicate=25,bad-signature=10,malformed=5] [--max-growth 20]
 *                   [--warmup 2] [--drain-timeout 300] [--database-url …] [--redis-url …]
 *
 * It starts the built service (`<this file's dir>/../src/main.js`, so a copy of dist/ elsewhere in
 * the repository runs its own service), the carrier simulator (in this process) and a database of
 * its own (created, seeded with orders, dropped at the end). Without `--rate` it first measures the
 * ingest capacity with a 10-s closed-loop burst of new deliveries (50 connections) and takes a
 * quarter of it. Then, open loop at `--rate` req/s for `--minutes`:
 * - new: a signed `payment.succeeded` paying a seeded order of its own (200 accepted; the order
 *   ships to the carrier);
 * - duplicate: an earlier accepted delivery sent again (same id and body, signed anew as a
 *   sender's retry is): 200 duplicate;
 * - bad-signature: signed with another secret: 401;
 * - malformed: authentic but not JSON: 400.
 * Once a minute one line: the service's RSS (`/proc/<pid>/status` VmRSS; both processes for
 * split) and V8 heap, the service's event-loop delay (a `--require`d probe in the service process,
 * `perf_hooks.monitorEventLoopDelay`, since /metrics has no event-loop metric), the backlog (inbox
 * `received` and outbox `pending` rows in the soak's database, BullMQ `wait` lists), the answers by
 * status so far, and shipments against paid orders. At the end it waits for the backlog to drain
 * and prints a summary; it exits 1 when RSS grew more than `--max-growth` % (the median of the
 * last third of the minutes after the warm-up against the first third's), when a paid order did
 * not ship exactly once, the inbox does not hold exactly one row per accepted delivery, a message
 * is dead, any answer was 5xx or a transport error, an answer was not the one expected, or the
 * backlog did not drain in time.
 */
import autocannon from 'autocannon';
import { ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import { signedHeaders } from '../src/testing/sign';
import { CarrierSimulator } from './carrier-sim';
import { freePort, seedOrders as seedInto, stopChild, until, withClient, withDatabase } from './harness';

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    rate: { type: 'string' },
    topology: { type: 'string', default: 'all-in-one' },
    platform: { type: 'string', default: 'express' },
    mix: { type: 'string', default: 'new=60,duplicate=25,bad-signature=10,malformed=5' },
    'max-growth': { type: 'string', default: '20' },
    warmup: { type: 'string', default: '2' },
    'drain-timeout': { type: 'string', default: '300' },
    'database-url': { type: 'string', default: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres' },
    'redis-url': { type: 'string', default: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379' },
  },
});

const MAIN = join(__dirname, '..', 'src', 'main.js');
const MINUTES = Number(args.minutes);
const WARMUP_MINUTES = Number(args.warmup);
const MAX_GROWTH = Number(args['max-growth']);
const DRAIN_TIMEOUT_MS = Number(args['drain-timeout']) * 1000;
const TOPOLOGY = args.topology as 'all-in-one' | 'split';
const SECRET = 'whsec_c29hay1zdGFuZGFyZC13ZWJob29rcy1rZXktMDAwMQ==';
const WRONG_SECRET = 'whsec_bm90LXRoZS1zb2FrLXNlY3JldC1hdC1hbGwtMDA=';
const ADMIN = 'soak-admin-token';
const ACCOUNT = 'acc_soak';
const PATH = '/webhooks/soak';
const ENDPOINTS = JSON.stringify([{ id: 'soak', provider: 'standard', secrets: [SECRET], merchantAccountId: ACCOUNT }]);
const MIB = 1024 * 1024;

type Kind = 'new' | 'duplicate' | 'bad-signature' | 'malformed';
const EXPECTED: Record<Kind, string> = { new: '200 accepted', duplicate: '200 duplicate', 'bad-signature': '401', malformed: '400' };

// ---------------------------------------------------------------- processes and the database (as tools/bench.ts)

/**
 * Preloaded into the service (`node --require`): the event loop's delay, in windows of 10 s,
 * appended to a file as JSON lines with the process's RSS and heap. Nothing else of the service changes.
 */
const PROBE = `'use strict';
const { monitorEventLoopDelay } = require('node:perf_hooks');
const { appendFileSync } = require('node:fs');
const file = process.env.SOAK_PROBE_FILE;
const h = monitorEventLoopDelay({ resolution: 10 });
h.enable();
setInterval(() => {
  const m = process.memoryUsage();
  const line = { at: Date.now(), p50: h.percentile(50) / 1e6, p99: h.percentile(99) / 1e6, max: h.max / 1e6, rss: m.rss, heap: m.heapUsed };
  h.reset();
  try { appendFileSync(file, JSON.stringify(line) + '\\n'); } catch {}
}, 10000).unref();
`;

interface ProbeWindow {
  at: number;
  p50: number;
  p99: number;
  max: number;
  rss: number;
  heap: number;
}

class Service {
  readonly child: ChildProcess;
  readonly probeFile: string;
  private probeOffset = 0;
  stderr = '';
  constructor(readonly name: string, env: Record<string, string>) {
    const cwd = mkdtempSync(join(tmpdir(), 'pw-soak-'));
    const probe = join(cwd, 'soak-probe.js');
    writeFileSync(probe, PROBE);
    this.probeFile = join(cwd, 'probe.jsonl');
    this.child = spawn(process.execPath, ['--require', probe, MAIN], {
      cwd,
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', SOAK_PROBE_FILE: this.probeFile, ...env },
      // The service's delivery lines are written as in production, and thrown away here.
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    this.child.stderr!.on('data', (d) => (this.stderr = (this.stderr + d).slice(-4_000)));
  }
  /** VmRSS of the service's process, in bytes (NaN once it is gone). */
  rss(): number {
    try {
      const status = readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
      const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
      return kb ? Number(kb[1]) * 1024 : NaN;
    } catch {
      return NaN;
    }
  }
  /** The probe's windows written since the last call. */
  windows(): ProbeWindow[] {
    if (!existsSync(this.probeFile)) return [];
    const text = readFileSync(this.probeFile, 'utf8');
    const fresh = text.slice(this.probeOffset);
    const complete = fresh.slice(0, fresh.lastIndexOf('\n') + 1);
    this.probeOffset += complete.length;
    return complete.split('\n').filter(Boolean).map((l) => JSON.parse(l) as ProbeWindow);
  }
  stop(): Promise<void> {
    return stopChild(this.child);
  }
}

// ---------------------------------------------------------------- what the load sends

interface Delivery {
  body: string;
  headers: Record<string, string>;
}

function paidBody(orderId: string): string {
  return JSON.stringify({
    type: 'payment.succeeded',
    timestamp: new Date().toISOString(),
    data: { payment_id: `pay_${randomUUID()}`, order_id: orderId, amount: 4990, currency: 'EUR', account_id: ACCOUNT },
  });
}

function paidDelivery(orderId: string, eventId = `msg_${randomUUID()}`): Delivery & { eventId: string } {
  const body = paidBody(orderId);
  return { body, eventId, headers: signedHeaders('standard', SECRET, body, { eventId }) };
}

async function post(url: string, delivery: Delivery): Promise<string> {
  try {
    const res = await fetch(`${url}${PATH}`, { method: 'POST', headers: delivery.headers, body: delivery.body, signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    if (res.status === 200) {
      const status = (JSON.parse(text) as { status?: string }).status;
      return `200 ${status}`;
    }
    return String(res.status);
  } catch {
    return 'error';
  }
}

function parseMix(spec: string): Array<[Kind, number]> {
  const kinds: Kind[] = ['new', 'duplicate', 'bad-signature', 'malformed'];
  const mix = spec.split(',').map((part) => {
    const [kind, weight] = part.split('=');
    if (!kinds.includes(kind as Kind) || !(Number(weight) >= 0)) throw new Error(`--mix: cannot read "${part}"`);
    return [kind as Kind, Number(weight)] as [Kind, number];
  });
  if (!mix.some(([k, w]) => k === 'new' && w > 0)) throw new Error('--mix needs new deliveries');
  return mix;
}

// ---------------------------------------------------------------- figures

function linearSlope(points: Array<[number, number]>): number {
  if (points.length < 2) return NaN;
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const num = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return den === 0 ? NaN : num / den;
}

const mib = (bytes: number) => (Number.isFinite(bytes) ? (bytes / MIB).toFixed(1) : '—');
const msf = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '—');

interface Sample {
  minute: number;
  rss: number[];
  heap: number[];
  loopP99: number;
  loopMax: number;
  clientP99: number;
  inbox: number;
  outbox: number;
}

// ---------------------------------------------------------------- the soak

/** A connection to the admin database (`--database-url`). */
function admin<T>(work: (client: Client) => Promise<T>): Promise<T> {
  return withClient(args['database-url']!, work);
}

async function main(): Promise<void> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: npm run build first`);
  if (!['all-in-one', 'split'].includes(TOPOLOGY)) throw new Error('--topology: all-in-one or split');
  const mix = parseMix(args.mix!);
  const mixTotal = mix.reduce((s, [, w]) => s + w, 0);
  const newShare = mix.find(([k]) => k === 'new')![1] / mixTotal;

  const sim = new CarrierSimulator();
  const shipments = new Map<string, number>();
  let strayShipments = 0;
  sim.onShipment = (s) => {
    if (s.orderId) shipments.set(s.orderId, (shipments.get(s.orderId) ?? 0) + 1);
    else strayShipments++;
  };
  await sim.start();

  const database = `payments_soak_${process.pid}`;
  await admin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await c.query(`CREATE DATABASE "${database}"`);
  });
  const databaseUrl = withDatabase(args['database-url']!, database);
  const prefix = `pw-soak-${randomUUID().slice(0, 8)}`;
  const port = await freePort();
  const base: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: args['redis-url']!,
    QUEUE_PREFIX: prefix,
    ADMIN_TOKEN: ADMIN,
    CARRIER_URL: sim.url,
    WEBHOOK_ENDPOINTS: ENDPOINTS,
    HTTP_ADAPTER: args.platform!,
  };
  const services =
    TOPOLOGY === 'all-in-one'
      ? [new Service('service', { ...base, PORT: String(port) })]
      : [new Service('http', { ...base, PORT: String(port), RUN_WORKERS: 'false' }), new Service('worker', { ...base, RUN_HTTP: 'false', DB_MIGRATIONS_RUN: 'false' })];
  const url = `http://127.0.0.1:${port}`;
  const redis = new Redis(args['redis-url']!, { maxRetriesPerRequest: 2, lazyConnect: true });
  await redis.connect();
  const db = new Client({ connectionString: databaseUrl });
  const problems: string[] = [];
  const clientLoop = monitorEventLoopDelay({ resolution: 10 });
  clientLoop.enable();
  let exitCode = 0;

  try {
    await until('the service', async () => {
      if (services.some((s) => s.child.exitCode !== null)) throw new Error(`a service exited: ${services.map((s) => s.stderr).join('\n')}`);
      return fetch(`${url}/health/ready`).then((r) => r.ok, () => false);
    }, 60_000, 100);
    await db.connect();
    const [pg] = (await db.query<{ server_version: string }>('SHOW server_version')).rows;

    // Everything accepted, whatever the phase: each of these orders must ship exactly once.
    const paid = new Set<string>();
    const answers = new Map<string, number>();
    let unexpected = 0;
    const note = (kind: Kind, answer: string) => {
      answers.set(answer, (answers.get(answer) ?? 0) + 1);
      if (answer !== EXPECTED[kind]) {
        unexpected++;
        if (unexpected <= 10) problems.push(`a ${kind} delivery answered ${answer}`);
      }
    };
    let orders = await seedInto(db, 200 + 20_000, 'Soak');
    let next = 0;
    const nextOrder = () => {
      if (next >= orders.length) throw new Error('the soak ran out of seeded orders');
      return orders[next++];
    };
    // Deliveries accepted before the open-loop load (warm-up, capacity burst): the inbox's rows.
    let acceptedBefore = 0;
    const waitShipped = (what: string, timeoutMs: number) =>
      until(what, () => [...paid].every((id) => shipments.has(id)), timeoutMs, 200);

    // Warm-up: every path once (JIT, pools, prepared statements).
    const warm = Array.from({ length: 200 }, () => nextOrder());
    await Promise.all(warm.map(async (id) => {
      const answer = await post(url, paidDelivery(id));
      if (answer === '200 accepted') paid.add(id);
      else problems.push(`a warm-up delivery answered ${answer}`);
    }));
    await waitShipped('the warm-up orders shipped', 60_000);
    acceptedBefore = paid.size;

    let rate = Number(args.rate);
    if (!args.rate) {
      // Capacity: new deliveries, closed loop, 50 connections for 10 s; the soak runs at a quarter.
      const burst: string[] = [];
      const result = await autocannon({
        url, connections: 50, duration: 10,
        requests: [{ method: 'POST', path: PATH, setupRequest: (req) => {
          const id = nextOrder();
          burst.push(id);
          return { ...req, ...paidDelivery(id) };
        } }],
      });
      const capacity = result.requests.average;
      if (result.non2xx || result.errors || result.timeouts) problems.push(`capacity burst: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
      // The orders the burst paid are those its deliveries recorded (the last requests may not
      // have been answered when the burst stopped, and may still be recorded after it): read back
      // from the inbox once its row count has stopped moving.
      let before = -1;
      await until('the burst recorded', async () => {
        await new Promise((r) => setTimeout(r, 1_000));
        const [{ n }] = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM payment_webhooks.webhook_inbox')).rows;
        const settled = n === before;
        before = n;
        return settled;
      }, 60_000, 0);
      const { rows } = await db.query<{ order_id: string }>(
        `SELECT body::jsonb->'data'->>'order_id' AS order_id FROM payment_webhooks.webhook_inbox`,
      );
      const burstIds = new Set(burst);
      for (const r of rows) if (burstIds.has(r.order_id)) paid.add(r.order_id);
      acceptedBefore = rows.length;
      rate = Math.max(1, Math.round(capacity / 4));
      console.log(`capacity: ${capacity.toFixed(0)} new deliveries/s (10 s, 50 connections, closed loop); the soak runs at ${rate} req/s`);
      await waitShipped('the capacity burst shipped', 300_000);
    }
    const needed = Math.ceil(rate * 60 * MINUTES * newShare * 1.1) + 1_000;
    orders = orders.slice(next).concat(await seedInto(db, needed, 'Soak'));
    next = 0;

    console.log(
      `soak: ${MINUTES} min at ${rate} req/s (${mix.map(([k, w]) => `${k} ${((w / mixTotal) * 100).toFixed(0)} %`).join(', ')}), ` +
      `${args.platform} ${TOPOLOGY}; ${cpus().length} CPUs, Node ${process.version}, PostgreSQL ${pg.server_version}; ${new Date().toISOString()}`,
    );

    // ---- the load, open loop
    const recent: Array<{ body: string; eventId: string }> = [];
    let recentAt = 0;
    const RECENT = 2_000;
    let inFlight = 0;
    let skipped = 0;
    const MAX_IN_FLIGHT = 2_000;
    const pick = (): Kind => {
      let r = Math.random() * mixTotal;
      for (const [k, w] of mix) if ((r -= w) < 0) return k;
      return 'new';
    };
    const sendOne = async () => {
      let kind = pick();
      if (kind === 'duplicate' && recent.length === 0) kind = 'new';
      if (kind === 'new') {
        const id = nextOrder();
        const d = paidDelivery(id);
        const answer = await post(url, d);
        note(kind, answer);
        if (answer === '200 accepted') {
          paid.add(id);
          if (recent.length < RECENT) recent.push({ body: d.body, eventId: d.eventId });
          else recent[recentAt++ % RECENT] = { body: d.body, eventId: d.eventId };
        }
      } else if (kind === 'duplicate') {
        const earlier = recent[Math.floor(Math.random() * recent.length)];
        note(kind, await post(url, { body: earlier.body, headers: signedHeaders('standard', SECRET, earlier.body, { eventId: earlier.eventId }) }));
      } else if (kind === 'bad-signature') {
        const body = paidBody(randomUUID());
        note(kind, await post(url, { body, headers: signedHeaders('standard', WRONG_SECRET, body, { eventId: `msg_${randomUUID()}` }) }));
      } else {
        const body = `{"type":"payment.succeeded","data":{"order_id":"${randomUUID()}"`;
        note(kind, await post(url, { body, headers: signedHeaders('standard', SECRET, body, { eventId: `msg_${randomUUID()}` }) }));
      }
    };

    const samples: Sample[] = [];
    const loadMs = MINUTES * 60_000;
    const started = performance.now();
    let sent = 0;
    let nextMinute = 1;
    const pending = new Set<Promise<void>>();
    const sample = async (minute: number): Promise<Sample> => {
      const windows = services.map((s) => s.windows());
      const all = windows.flat();
      const [{ inbox, outbox }] = (await db.query<{ inbox: number; outbox: number }>(
        `SELECT (SELECT count(*) FROM payment_webhooks.webhook_inbox WHERE status = 'received')::int AS inbox,
                (SELECT count(*) FROM payment_webhooks.outbox_message WHERE status = 'pending')::int AS outbox`,
      )).rows;
      const [inboxWait, outboxWait] = await Promise.all([redis.llen(`${prefix}:inbox:wait`), redis.llen(`${prefix}:outbox:wait`)]).catch(() => [NaN, NaN]);
      const s: Sample = {
        minute,
        rss: services.map((sv) => sv.rss()),
        heap: windows.map((w) => (w.length ? w[w.length - 1].heap : NaN)),
        loopP99: all.length ? Math.max(...all.map((w) => w.p99)) : NaN,
        loopMax: all.length ? Math.max(...all.map((w) => w.max)) : NaN,
        clientP99: clientLoop.percentile(99) / 1e6,
        inbox,
        outbox,
      };
      clientLoop.reset();
      const answered = [...answers.entries()].sort().map(([k, v]) => `${k}: ${v}`).join(', ');
      const shipped = [...paid].filter((id) => shipments.has(id)).length;
      console.log(
        `[${String(minute).padStart(3)} min] rss ${services.map((sv, i) => `${TOPOLOGY === 'split' ? `${sv.name} ` : ''}${mib(s.rss[i])}`).join(' / ')} MiB ` +
        `(heap ${s.heap.map(mib).join(' / ')}) | loop p99 ${msf(s.loopP99)} ms, max ${msf(s.loopMax)} ms (soak's own p99 ${msf(s.clientP99)}) | ` +
        `backlog inbox ${inbox}, outbox ${outbox}, bull wait ${inboxWait}/${outboxWait}, in flight ${inFlight} | ` +
        `${answered} | shipments ${shipments.size} (paid ${paid.size}, shipped ${shipped})${skipped ? ` | skipped ${skipped}` : ''}`,
      );
      // The simulator's call log grows with every call: the soak reads none of it.
      sim.calls.length = 0;
      return s;
    };

    while (true) {
      const elapsed = performance.now() - started;
      if (elapsed >= loadMs) break;
      const due = Math.floor((elapsed / 1000) * rate);
      while (sent < due) {
        sent++;
        if (inFlight >= MAX_IN_FLIGHT) {
          skipped++;
          continue;
        }
        inFlight++;
        const p: Promise<void> = sendOne().catch((e) => { problems.push(String(e)); }).finally(() => {
          inFlight--;
          pending.delete(p);
        });
        pending.add(p);
      }
      if (elapsed >= nextMinute * 60_000) {
        samples.push(await sample(nextMinute));
        nextMinute++;
      }
      if (services.some((s) => s.child.exitCode !== null)) throw new Error(`a service exited: ${services.map((s) => s.stderr).join('\n')}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    await Promise.all(pending);
    if (samples.length < MINUTES) samples.push(await sample(MINUTES));

    // ---- drain
    const drainStarted = Date.now();
    let drained = true;
    await until('the backlog drained', async () => {
      const [{ inbox, outbox }] = (await db.query<{ inbox: number; outbox: number }>(
        `SELECT (SELECT count(*) FROM payment_webhooks.webhook_inbox WHERE status = 'received')::int AS inbox,
                (SELECT count(*) FROM payment_webhooks.outbox_message WHERE status = 'pending')::int AS outbox`,
      )).rows;
      return inbox === 0 && outbox === 0 && [...paid].every((id) => shipments.has(id));
    }, DRAIN_TIMEOUT_MS, 500).catch((e) => {
      drained = false;
      problems.push(String(e));
    });
    const drainSeconds = (Date.now() - drainStarted) / 1000;

    // ---- checks
    const [counts] = (await db.query<{ inbox: number; received: number; dead: number; pending: number; paidOrders: number; outboxTotal: number }>(
      `SELECT (SELECT count(*) FROM payment_webhooks.webhook_inbox)::int AS inbox,
              (SELECT count(*) FROM payment_webhooks.webhook_inbox WHERE status = 'received')::int AS received,
              (SELECT count(*) FROM payment_webhooks.outbox_message WHERE status = 'dead')::int AS dead,
              (SELECT count(*) FROM payment_webhooks.outbox_message WHERE status = 'pending')::int AS pending,
              (SELECT count(*) FROM payment_webhooks.orders WHERE status <> 'awaiting_payment')::int AS "paidOrders",
              (SELECT count(*) FROM payment_webhooks.outbox_message)::int AS "outboxTotal"`,
    )).rows;
    const accepted = (answers.get('200 accepted') ?? 0) + acceptedBefore;
    const neverShipped = [...paid].filter((id) => !shipments.has(id)).length;
    const doubled = [...shipments.values()].filter((n) => n > 1).length;
    const unpaidShipped = [...shipments.keys()].filter((id) => !paid.has(id)).length;
    const fivexx = [...answers.entries()].filter(([k]) => k.startsWith('5') || k === 'error').reduce((s, [, v]) => s + v, 0);
    const exactlyOnce = neverShipped === 0 && doubled === 0 && unpaidShipped === 0 && strayShipments === 0 && shipments.size === paid.size;
    if (!exactlyOnce) problems.push(`shipments: ${shipments.size} for ${paid.size} paid orders (${neverShipped} never shipped, ${doubled} shipped twice or more, ${unpaidShipped + strayShipments} not paid by the soak)`);
    if (counts.paidOrders !== paid.size) problems.push(`${counts.paidOrders} orders left awaiting_payment's state, ${paid.size} paid by the soak`);
    if (counts.inbox !== accepted) problems.push(`the inbox holds ${counts.inbox} rows for ${accepted} accepted deliveries`);
    if (counts.dead) problems.push(`${counts.dead} outbox message(s) dead`);
    if (fivexx) problems.push(`${fivexx} answer(s) 5xx or a transport error`);
    if (skipped) problems.push(`${skipped} request(s) not sent: ${MAX_IN_FLIGHT} already in flight`);

    const rssOf = (s: Sample) => s.rss.reduce((a, b) => a + b, 0);
    const steady = samples.filter((s) => s.minute > WARMUP_MINUTES);
    const from = steady[0] ?? samples[0];
    const to = samples[samples.length - 1];
    // Growth: the median RSS of the last third of the minutes after the warm-up against that of
    // the first third. One minute's figure moves by tens of MiB with the collector (and V8 may
    // still be sizing its heap for minutes after the warm-up), so a first-against-last figure
    // would read noise as growth; a leak moves the medians.
    const third = Math.max(1, Math.floor((steady.length || samples.length) / 3));
    const base = steady.length ? steady : samples;
    const early = base.slice(0, third);
    const late = base.slice(-third);
    const growth = (median(late.map(rssOf)) / median(early.map(rssOf)) - 1) * 100;
    const span = (list: Sample[]) => `${list[0].minute}–${list[list.length - 1].minute}`;
    const slope = linearSlope(steady.map((s) => [s.minute, rssOf(s) / MIB])) * 10;
    const secondHalf = steady.slice(Math.floor(steady.length / 2));
    const slopeSecondHalf = linearSlope(secondHalf.map((s) => [s.minute, rssOf(s) / MIB])) * 10;
    const heapSlope = linearSlope(steady.map((s) => [s.minute, s.heap.reduce((a, b) => a + b, 0) / MIB])) * 10;
    const rssMax = Math.max(...samples.map(rssOf));
    if (growth > MAX_GROWTH) problems.push(`RSS grew ${growth.toFixed(1)} % (median of minutes ${span(late)} against minutes ${span(early)}; more than ${MAX_GROWTH} %)`);

    const perService = TOPOLOGY === 'split' ? ` (${services.map((sv, i) => `${sv.name} ${mib(samples[0].rss[i])} → ${mib(to.rss[i])}`).join(', ')})` : '';
    console.log(`
summary (${MINUTES} min at ${rate} req/s, ${args.platform} ${TOPOLOGY}; ${cpus().length} CPUs shared with whatever else runs here)
  RSS: first ${mib(rssOf(samples[0]))} MiB, minute ${from.minute} ${mib(rssOf(from))}, last ${mib(rssOf(to))}, max ${mib(rssMax)}${perService}; ` +
      `growth ${growth.toFixed(1)} % (median of minutes ${span(late)} ${mib(median(late.map(rssOf)))} MiB against minutes ${span(early)} ${mib(median(early.map(rssOf)))} MiB; limit ${MAX_GROWTH} %); ` +
      `minute ${from.minute} to the last ${((rssOf(to) / rssOf(from) - 1) * 100).toFixed(1)} %
  slope after minute ${WARMUP_MINUTES}: RSS ${slope.toFixed(2)} MiB per 10 min (second half ${slopeSecondHalf.toFixed(2)}), heap ${heapSlope.toFixed(2)} MiB per 10 min
  event-loop delay (service): p99 max ${msf(Math.max(...samples.map((s) => s.loopP99)))} ms, median of the minutes' p99 ${msf(median(samples.map((s) => s.loopP99)))} ms, max ${msf(Math.max(...samples.map((s) => s.loopMax)))} ms
  backlog: max inbox received ${Math.max(...samples.map((s) => s.inbox))}, outbox pending ${Math.max(...samples.map((s) => s.outbox))}; ` +
      `${drained ? `drained ${drainSeconds.toFixed(0)} s after the load` : 'NOT drained'} (inbox received ${counts.received}, outbox pending ${counts.pending}, dead ${counts.dead})
  answers: ${[...answers.entries()].sort().map(([k, v]) => `${k} ${v}`).join(', ')}; unexpected ${unexpected}; 5xx/errors ${fivexx}
  exactly once: ${shipments.size} shipments for ${paid.size} paid orders, ${neverShipped} missing, ${doubled} doubled -> ${exactlyOnce ? 'yes' : 'NO'}; inbox rows ${counts.inbox}, outbox messages ${counts.outboxTotal}
  ${problems.length ? `FAILED:\n${problems.map((p) => `  - ${p}`).join('\n')}` : 'passed'}`);
    if (problems.length) exitCode = 1;
  } finally {
    clientLoop.disable();
    await Promise.all(services.map((s) => s.stop()));
    await db.end().catch(() => undefined);
    await admin((c) => c.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)).catch(() => undefined);
    // The run's BullMQ keys go with it.
    let cursor = '0';
    do {
      const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 500).catch(() => ['0', [] as string[]] as [string, string[]]);
      cursor = nextCursor;
      if (keys.length) await redis.del(...keys).catch(() => undefined);
    } while (cursor !== '0');
    redis.disconnect();
    await sim.stop();
  }
  process.exitCode = exitCode;
}

function median(values: number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor(sorted.length / 2)] : NaN;
}

void main().catch((err: Error) => {
  console.error(`soak failed: ${err.message}`);
  process.exit(1);
});
