import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { deleteQueueKeys } from '../support/app';
import { TEST_REDIS_URL } from '../support/env';
import { PgInstance } from '../support/pg-instance';
import { orderHistoryProblems } from '../support/history-check';
import { freePort, ServiceProcess, waitForHttp, api as adminApi, until } from '../support/process';

/**
 * PostgreSQL outages against the built service, on a PostgreSQL of the test's own (initdb into a
 * temporary folder, a free port; the test starts, stops, freezes and removes it), with the shared
 * Redis under a queue prefix of its own:
 * - stopped (`pg_ctl stop -m immediate`) in the middle of a storm of retrying senders: every
 *   answer while it is down is 503 within 10 s (CONTRACT §2), never 2xx or 4xx; after the restart
 *   the senders' retries get every event recorded exactly once, each paid order is shipped
 *   exactly once, and its history lists each change once;
 * - frozen (SIGSTOP to the postmaster and its backends): new deliveries answer 503 within the
 *   ingest bound, not a hang, and `/health/ready` 503 within its bound; after SIGCONT all recovers;
 * - `/health/ready` 503 while it is stopped, and `/health` 200 throughout (CONTRACT §4).
 */

const ADMIN = 'e2e-admin-token';
const SECRET = 'whsec_ZTJlLXBvc3RncmVzLW91dGFnZS1rZXktMDE=';
const ACCOUNT = 'acc_outage';
/** The receive path's bound on a connection, a statement and a batch (PW_TUNING). */
const INGEST_TIMEOUT_MS = 1_500;
/** CONTRACT §2: the answer comes well inside 10 s whatever the rest of the system does. */
const ANSWER_BOUND_MS = 10_000;
/** Senders, each with its own events, retrying every non-2xx like a provider. */
const SENDERS = 10;
const EVENTS_PER_SENDER = 8;

interface Answer {
  status: number | 'error';
  startedAt: number;
  endedAt: number;
  body: string;
}

interface PaidEvent {
  orderId: string;
  eventId: string;
  body: string;
}

/** One request, timed; a request that gets no answer within 15 s is recorded as `error`. */
async function timed(url: string, init: RequestInit = {}): Promise<Answer> {
  const startedAt = Date.now();
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(15_000) });
    const body = await res.text();
    return { status: res.status, startedAt, endedAt: Date.now(), body };
  } catch (err) {
    return { status: 'error', startedAt, endedAt: Date.now(), body: (err as Error).message };
  }
}

const duration = (a: Answer) => a.endedAt - a.startedAt;

describe('PostgreSQL outages: stopped mid-storm, frozen, and the health routes', () => {
  const sim = new CarrierSimulator();
  const prefix = `pw-pgout-${randomUUID().slice(0, 8)}`;
  let pg: PgInstance | undefined;
  let service: ServiceProcess | undefined;
  let port = 0;
  let db: Client | undefined;
  /** `/health`, asked every 200 ms from start to end: it must answer 200 every time. */
  const liveness: Answer[] = [];
  let probing = true;
  let prober: Promise<void> | undefined;

  const base = () => `http://127.0.0.1:${port}`;

  const api = (method: string, path: string, body?: unknown) => adminApi(base(), ADMIN, method, path, body);

  /** A delivery of `e`, signed afresh as a provider signs each attempt. */
  const deliver = (e: PaidEvent) =>
    timed(`${base()}/webhooks/standard-main`, {
      method: 'POST',
      headers: signedHeaders('standard', SECRET, e.body, { eventId: e.eventId }),
      body: e.body,
    });

  async function paidEvents(count: number): Promise<PaidEvent[]> {
    const out: PaidEvent[] = [];
    for (let i = 0; i < count; i += 10) {
      out.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(10, count - i) }, async () => {
            const order = await api('POST', '/orders', {
              amount: '49.90',
              currency: 'EUR',
              shipTo: { name: 'Edsger Dijkstra', line1: '1 Nuenen Rd', city: 'Nuenen', postalCode: '5671', country: 'NL' },
              items: [{ sku: 'SKU-1', quantity: 1 }],
            });
            expect(order.status).toBe(201);
            const eventId = `msg_${randomUUID()}`;
            const body = JSON.stringify({
              type: 'payment.succeeded',
              timestamp: new Date().toISOString(),
              data: { payment_id: `pay_${randomUUID()}`, order_id: order.body.id, amount: 4990, currency: 'EUR', account_id: ACCOUNT },
            });
            return { orderId: order.body.id as string, eventId, body };
          }),
        )),
      );
    }
    return out;
  }

  const count = async (sql: string, params: unknown[] = []): Promise<number> =>
    (await db!.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${sql}) x`, params)).rows[0].n;

  /** A client of the test's own on the instance, opened afresh after each restart. */
  async function openDb(): Promise<void> {
    await db?.end().catch(() => undefined);
    db = new Client({ connectionString: pg!.url, options: '-c search_path=payment_webhooks' });
    db.on('error', () => undefined); // the instance is stopped on purpose
    await db.connect();
  }

  /** Where the orders stand, and the service's last words: the message of a failure. */
  async function diagnosis(orderIds: string[]): Promise<string> {
    const q = async (sql: string, params: unknown[] = []) => JSON.stringify((await db!.query(sql, params)).rows);
    return [
      `orders: ${await q(`SELECT status, count(*)::int AS n FROM orders WHERE id = ANY($1::uuid[]) GROUP BY status`, [orderIds])}`,
      `inbox: ${await q(`SELECT status, outcome, last_error, count(*)::int AS n FROM webhook_inbox GROUP BY 1, 2, 3`)}`,
      `outbox: ${await q(`SELECT type, status, last_error, count(*)::int AS n FROM outbox_message GROUP BY 1, 2, 3`)}`,
      `carrier calls: ${sim.calls.length}, shipments: ${sim.shipments.length}`,
      `service stderr: ${service!.stderr.slice(-3000)}`,
      `service stdout: ${service!.stdout.slice(-3000)}`,
    ].join('\n');
  }

  /** Every order of `events` fulfilled, one shipment each at the carrier, one inbox row per event. */
  async function expectExactlyOnce(events: PaidEvent[]): Promise<void> {
    const orderIds = events.map((e) => e.orderId);
    await until(
      'every order fulfilled',
      async () => (await count(`SELECT 1 FROM orders WHERE id = ANY($1::uuid[]) AND status = 'fulfilled'`, [orderIds])) === orderIds.length,
      40_000,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}\n${await diagnosis(orderIds)}`);
    });
    for (const e of events) expect(sim.shipments.filter((s) => s.orderId === e.orderId)).toHaveLength(1);
    const { rows } = await db!.query<{ eventId: string; n: number }>(
      `SELECT event_id AS "eventId", count(*)::int AS n FROM webhook_inbox WHERE event_id = ANY($1::text[]) GROUP BY event_id`,
      [events.map((e) => e.eventId)],
    );
    expect(rows).toHaveLength(events.length);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    // Each order's history: each change once, in order, ending where it stands.
    const unsound: Array<[string, string[]]> = [];
    for (const e of events) {
      const problems = await orderHistoryProblems((path) => api('GET', path), e.orderId);
      if (problems.length > 0) unsound.push([e.orderId, problems]);
    }
    expect(unsound).toEqual([]);
  }

  beforeAll(async () => {
    pg = await PgInstance.create();
    await sim.start();
    port = await freePort();
    service = new ServiceProcess({
      PORT: String(port),
      DATABASE_URL: pg.url,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: prefix,
      ADMIN_TOKEN: ADMIN,
      CARRIER_URL: sim.url,
      CARRIER_TIMEOUT_MS: '2000',
      WEBHOOK_ENDPOINTS: JSON.stringify([{ id: 'standard-main', provider: 'standard', secrets: [SECRET], merchantAccountId: ACCOUNT }]),
      PW_TUNING: JSON.stringify({
        ingestTimeoutMs: INGEST_TIMEOUT_MS,
        sweepIntervalMs: 300,
        sweepAfterMs: 200,
        inboxBackoffMs: 200,
        carrierBackoffBaseMs: 50,
        carrierBackoffCapMs: 500,
      }),
    });
    await waitForHttp(service, `${base()}/health/ready`, 30_000);
    await openDb();
    prober = (async () => {
      while (probing) {
        liveness.push(await timed(`${base()}/health`));
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
  }, 90_000);

  afterAll(async () => {
    probing = false;
    await prober;
    await db?.end().catch(() => undefined);
    if (service) {
      service.kill('SIGTERM');
      await service.exited(10_000).catch(() => service!.kill('SIGKILL'));
    }
    await pg?.remove();
    await sim.stop();
    await deleteQueueKeys(prefix);
  });

  it('stopped in the middle of a storm of retrying senders: 503 within 10 s while down, then every event exactly once and one shipment per order', async () => {
    const events = await paidEvents(SENDERS * EVENTS_PER_SENDER);
    const answers: Array<Answer & { eventId: string }> = [];
    const accepted = new Set<string>();
    let downFrom = Infinity; // the stop has returned: nothing of PostgreSQL runs
    let downUntil = Infinity; // the start is about to be asked for

    // Each sender posts its events one after another, each until it is answered 2xx.
    const senders = Array.from({ length: SENDERS }, async (_, s) => {
      for (const e of events.slice(s * EVENTS_PER_SENDER, (s + 1) * EVENTS_PER_SENDER)) {
        for (;;) {
          const answer = await deliver(e);
          answers.push({ ...answer, eventId: e.eventId });
          if (typeof answer.status === 'number' && answer.status >= 200 && answer.status < 300) break;
          await new Promise((r) => setTimeout(r, 100)); // a provider's (short) retry delay
        }
        accepted.add(e.eventId);
        await new Promise((r) => setTimeout(r, 60)); // the next event of this sender, a little later
      }
    });

    // About a third of the events in, PostgreSQL stops as in a crash.
    await until('a third of the events accepted', () => accepted.size >= events.length / 3);
    await pg!.stop('immediate');
    downFrom = Date.now();
    expect(pg!.running).toBe(false);
    // Down until every sender has been refused at least five times while it is down.
    const refusedWhileDown = (eventIds: Set<string>) =>
      answers.filter((a) => a.startedAt >= downFrom && a.status === 503 && eventIds.has(a.eventId)).length;
    await until('every sender refused while PostgreSQL is down', () =>
      Array.from({ length: SENDERS }, (_, s) => new Set(events.slice(s * EVENTS_PER_SENDER, (s + 1) * EVENTS_PER_SENDER).map((e) => e.eventId))).every(
        (ids) => refusedWhileDown(ids) >= 5,
      ),
    );
    // Readiness says so, within its bound, while liveness stays 200.
    const ready = await timed(`${base()}/health/ready`);
    expect(ready.status).toBe(503);
    expect(duration(ready)).toBeLessThan(3_000);
    expect((await timed(`${base()}/health`)).status).toBe(200);

    downUntil = Date.now();
    await pg!.start();
    await Promise.all(senders);
    await openDb();

    // Every answer: 200 or 503, within the bound; while it was down, 503 only.
    const whileDown = answers.filter((a) => a.startedAt >= downFrom && a.endedAt <= downUntil);
    expect(whileDown.length).toBeGreaterThanOrEqual(SENDERS * 4);
    expect(whileDown.filter((a) => a.status !== 503)).toEqual([]);
    for (const a of answers) expect(duration(a)).toBeLessThan(ANSWER_BOUND_MS);
    expect(answers.filter((a) => a.status !== 200 && a.status !== 503)).toEqual([]);
    for (const a of answers.filter((x) => x.status === 503)) expect(JSON.parse(a.body)).toEqual({ error: 'unavailable' });
    expect(accepted.size).toBe(events.length);
    console.log(
      `storm: ${answers.length} answers, ${whileDown.length} while down (${Math.round(downUntil - downFrom)} ms), ` +
        `slowest ${Math.max(...answers.map(duration))} ms, slowest while down ${Math.max(...whileDown.map(duration))} ms`,
    );

    // Nothing lost, nothing doubled: one inbox row per event, one shipment per order. (A carrier
    // call claimed just before the stop keeps its lease, jobLockMs, before it is made again.)
    await expectExactlyOnce(events);
    console.log(`storm: every order shipped ${Date.now() - downUntil} ms after the restart was asked for`);
    expect(service!.child.exitCode).toBeNull();
  }, 100_000);

  it('frozen (SIGSTOP): new deliveries answer 503 within the ingest bound, readiness 503 within its bound; after SIGCONT all recovers', async () => {
    const events = await paidEvents(6);
    // The service's connections are warm: one delivery recorded before the freeze.
    expect((await deliver(events[0])).status).toBe(200);
    pg!.freeze();
    try {
      // SIGSTOP lands asynchronously; a backend that had already exited stays a zombie ('Z') while
      // the postmaster that would reap it is stopped. Every live process must be stopped ('T').
      await until('every PostgreSQL process stopped', () => {
        const states = [...pg!.states().values()];
        return states.length > 1 && states.every((state) => state === 'T' || state === 'Z');
      }, 5_000);
      expect([...pg!.states().values()].filter((state) => state === 'T').length).toBeGreaterThan(1);

      // Deliveries at once, then one after another: each answered 503 within the bound, none hangs.
      const concurrent = await Promise.all(events.slice(1).map(deliver));
      const sequential: Answer[] = [];
      for (const e of events.slice(1, 4)) sequential.push(await deliver(e));
      for (const a of [...concurrent, ...sequential]) {
        expect(a.status).toBe(503);
        expect(duration(a)).toBeLessThan(INGEST_TIMEOUT_MS * 2 + 1_000);
      }
      const ready = await timed(`${base()}/health/ready`);
      expect(ready.status).toBe(503);
      expect(duration(ready)).toBeLessThan(3_000);
      const live = await timed(`${base()}/health`);
      expect(live.status).toBe(200);
      expect(duration(live)).toBeLessThan(1_000);
      console.log(
        `frozen: deliveries answered 503 in ${[...concurrent, ...sequential].map(duration).join(', ')} ms; readiness in ${duration(ready)} ms`,
      );
    } finally {
      pg!.thaw();
    }

    // Thawed: each delivery is answered 2xx again (a refused one may have been recorded after all:
    // then it is a duplicate), readiness is back, and every order is shipped once.
    await until('readiness back after SIGCONT', async () => (await timed(`${base()}/health/ready`)).status === 200, 20_000);
    for (const e of events.slice(1)) {
      await until(`a delivery of ${e.eventId} answered 200`, async () => (await deliver(e)).status === 200, 20_000);
    }
    await expectExactlyOnce(events);
  }, 90_000);

  it('/health/ready answers 503 while PostgreSQL is stopped and 200 once it is back; /health answers 200 throughout', async () => {
    await pg!.stop('immediate');
    await until('readiness 503', async () => {
      const ready = await timed(`${base()}/health/ready`);
      expect(duration(ready)).toBeLessThan(3_000);
      return ready.status === 503;
    });
    for (let i = 0; i < 3; i++) {
      const ready = await timed(`${base()}/health/ready`);
      expect(ready.status).toBe(503);
      expect(duration(ready)).toBeLessThan(3_000);
      expect((await timed(`${base()}/health`)).status).toBe(200);
    }
    await pg!.start();
    await until('readiness 200', async () => (await timed(`${base()}/health/ready`)).status === 200, 20_000);

    // Liveness, asked every 200 ms since the service started, through every outage above.
    probing = false;
    await prober;
    expect(liveness.length).toBeGreaterThan(20);
    expect(liveness.filter((a) => a.status !== 200)).toEqual([]);
    expect(Math.max(...liveness.map(duration))).toBeLessThan(1_000);
    expect(service!.child.exitCode).toBeNull();
  }, 60_000);
});
