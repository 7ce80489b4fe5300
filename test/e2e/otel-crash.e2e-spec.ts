import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { deleteQueueKeys } from '../support/app';
import { TEST_DATABASE_URL, TEST_REDIS_URL, testPgConnection } from '../support/env';
import { OtlpReceiver, ReceivedSpan, SPAN_KIND } from '../support/otlp-receiver';
import { freePort, ServiceProcess, stopProcesses, waitForHttp, api as adminApi, until } from '../support/process';

/**
 * Traces of the built service across a crash, exported over OTLP/HTTP (http/json) to a receiver
 * on 127.0.0.1. A delivery's receipt span is written with its inbox row, so the processing of a
 * worker started after another was killed mid-processing still links to that receipt and joins
 * its trace, and so does the carrier call it leads to. The same trace on the Fastify adapter.
 */

const ADMIN = 'e2e-admin-token';
const SECRET = 'whsec_ZTJlLW90ZWwtY3Jhc2gtdGVzdC1rZXktMDE=';
const ACCOUNT = 'acc_otel_crash';
const WEBHOOK_PATH = '/webhooks/standard-main';
const RECEIVE = 'webhook receive standard';
const PROCESS = 'webhook process standard';
const DISPATCH = 'outbox dispatch fulfillment.dispatch';
const TEST_TIMEOUT = 90_000;

/** The environment every process of a test shares; `instance` names the process in its spans' resource. */
function serviceEnv(prefix: string, carrierUrl: string, receiverUrl: string, instance: string): Record<string, string> {
  return {
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    QUEUE_PREFIX: prefix,
    ADMIN_TOKEN: ADMIN,
    CARRIER_URL: carrierUrl,
    WEBHOOK_ENDPOINTS: JSON.stringify([{ id: 'standard-main', provider: 'standard', secrets: [SECRET], merchantAccountId: ACCOUNT }]),
    // A dead worker's job is taken back within about a second, not thirty.
    PW_TUNING: JSON.stringify({
      jobLockMs: 1_000,
      stalledIntervalMs: 500,
      sweepIntervalMs: 300,
      sweepAfterMs: 200,
      carrierBackoffBaseMs: 50,
      carrierBackoffCapMs: 500,
    }),
    OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    // Spans leave within a tenth of a second: a killed process has exported what it had ended.
    OTEL_BSP_SCHEDULE_DELAY: '100',
    OTEL_RESOURCE_ATTRIBUTES: `service.instance.id=${instance}`,
  };
}

/** The process a span came from (its resource's `service.instance.id`). */
const instanceOf = (span: ReceivedSpan) => span.resource['service.instance.id'];

/** The path of an HTTP server span (the stable conventions' `url.path`, or the older `http.target`). */
function pathOf(span: ReceivedSpan): string | undefined {
  const path = span.attributes['url.path'] ?? span.attributes['http.target'];
  return typeof path === 'string' ? path.split('?')[0] : undefined;
}

/** Creates an order and delivers its signed `payment.succeeded`: the order's and the event's ids. */
async function payOrder(port: number): Promise<{ orderId: string; eventId: string }> {
  const order = await adminApi(port, ADMIN, 'POST', '/orders', {
    amount: '49.90',
    currency: 'EUR',
    shipTo: { name: 'Frances Allen', line1: '1 Harbor Rd', city: 'Arlington', postalCode: '22201', country: 'US' },
    items: [{ sku: 'SKU-1', quantity: 1 }],
  });
  expect(order.status).toBe(201);
  const eventId = `msg_${randomUUID()}`;
  const body = JSON.stringify({
    type: 'payment.succeeded',
    timestamp: new Date().toISOString(),
    data: { payment_id: `pay_${randomUUID()}`, order_id: order.body.id, amount: 4990, currency: 'EUR', account_id: ACCOUNT },
  });
  const res = await fetch(`http://127.0.0.1:${port}${WEBHOOK_PATH}`, {
    method: 'POST',
    headers: signedHeaders('standard', SECRET, body, { eventId }),
    body,
  });
  await res.arrayBuffer();
  expect(res.status).toBe(200);
  return { orderId: order.body.id as string, eventId };
}

describe('traces across a crash of the worker, and on Fastify (the built service exporting over OTLP)', () => {
  const sim = new CarrierSimulator();
  const db = new Client(testPgConnection());
  const prefixes: string[] = [];
  let receiver: OtlpReceiver;
  let processes: ServiceProcess[] = [];

  beforeAll(async () => {
    await Promise.all([sim.start(), db.connect()]);
  });

  beforeEach(async () => {
    sim.reset();
    receiver = await OtlpReceiver.start();
  });

  afterEach(async () => {
    await stopProcesses(processes);
    processes = [];
    await receiver.close();
  });

  afterAll(async () => {
    await db.end().catch(() => undefined);
    await sim.stop();
    for (const prefix of prefixes) await deleteQueueKeys(prefix);
  });

  function newPrefix(tag: string): string {
    const prefix = `pw-otel-${tag}-${randomUUID().slice(0, 8)}`;
    prefixes.push(prefix);
    return prefix;
  }

  function start(env: Record<string, string>): ServiceProcess {
    const service = new ServiceProcess(env);
    processes.push(service);
    return service;
  }

  /** A worker-only process, resolved once it says it started. */
  async function startWorker(env: Record<string, string>): Promise<ServiceProcess> {
    const worker = start({ ...env, RUN_HTTP: 'false' });
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

  const orderStatus = async (orderId: string): Promise<string> =>
    (await db.query<{ status: string }>(`SELECT status FROM orders WHERE id = $1`, [orderId])).rows[0]?.status;

  /** Waits for `probe` on the received spans; on a timeout, says which spans did arrive. */
  async function untilSpans(what: string, probe: () => boolean): Promise<void> {
    try {
      await until(what, probe, 30_000);
    } catch (err) {
      const seen = receiver.spans().map((s) => `${String(instanceOf(s))} ${s.name} ${s.traceId}/${s.spanId}<-${s.parentSpanId}`);
      throw new Error(`${(err as Error).message}; spans received: ${JSON.stringify(seen, null, 1)}`);
    }
  }

  const spansOf = (name: string, eventId: string) =>
    receiver.spans().filter((s) => s.name === name && s.attributes['messaging.message.id'] === eventId);

  it(
    'a worker killed with SIGKILL mid-processing, then a new worker: its processing links to the receipt of the HTTP-only process and is in its trace, as is the carrier call',
    async () => {
      const prefix = newPrefix('crash');
      const httpPort = await freePort();
      const base = (instance: string) => serviceEnv(prefix, sim.url, receiver.url, instance);

      // The receipt, by an HTTP-only process: no worker takes the delivery yet.
      const http = start({ ...base('http'), PORT: String(httpPort), RUN_WORKERS: 'false' });
      await waitForHttp(http, `http://127.0.0.1:${httpPort}/health/ready`, 30_000);
      const { orderId, eventId } = await payOrder(httpPort);
      const { rows } = await db.query<{ id: string }>(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [eventId]);
      expect(rows.length).toBe(1);
      const inboxId = rows[0].id;

      // The test holds the delivery's row locked, so the first worker's processing transaction
      // waits on it: that worker is then killed mid-processing, before anything of it committed.
      const locker = new Client(testPgConnection());
      await locker.connect();
      try {
        await locker.query('BEGIN');
        await locker.query(`SELECT id FROM webhook_inbox WHERE id = $1 FOR UPDATE`, [inboxId]);
        const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;

        const first = await startWorker(base('worker-1'));
        // Polled from another connection: inside the locker's transaction, pg_stat_activity would
        // stay the snapshot its first read took.
        await until('the first worker waiting on the delivery row the test holds', async () => {
          const { rows: waiting } = await db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_stat_activity
              WHERE $1 = ANY(pg_blocking_pids(pid)) AND wait_event_type = 'Lock'
                AND application_name = 'payment-webhooks' AND query LIKE '%FROM webhook_inbox WHERE id = ANY($1)%FOR UPDATE%'`,
            [lockerPid],
          );
          return waiting[0].n > 0;
        });
        first.kill('SIGKILL');
        expect((await first.exited()).signal).toBe('SIGKILL');
      } finally {
        await locker.query('ROLLBACK').catch(() => undefined);
        await locker.end().catch(() => undefined);
      }
      expect(await orderStatus(orderId)).not.toBe('fulfilled');
      expect(sim.calls).toEqual([]);

      // A new worker takes the dead one's job back and ships the order.
      await startWorker(base('worker-2'));
      await until('the order fulfilled by the new worker', async () => (await orderStatus(orderId)) === 'fulfilled');
      await until('the shipment at the carrier', () => sim.shipments.length === 1);

      await untilSpans(
        'the receipt, the new worker\'s processing and its dispatch at the receiver',
        () =>
          spansOf(RECEIVE, eventId).length > 0 &&
          spansOf(PROCESS, eventId).some((s) => instanceOf(s) === 'worker-2') &&
          receiver.spans().some((s) => s.name === DISPATCH && instanceOf(s) === 'worker-2'),
      );
      expect(receiver.errors).toEqual([]);

      // One receipt, by the HTTP-only process.
      const receipts = spansOf(RECEIVE, eventId);
      expect(receipts.length).toBe(1);
      const [receipt] = receipts;
      expect(instanceOf(receipt)).toBe('http');
      expect(receipt.attributes['payment_webhooks.outcome']).toBe('accepted');
      const traceId = receipt.traceId;

      // One processing span, the new worker's: in the receipt's trace, linked to it. The killed
      // worker's transaction never got the row, so it had started no span for the delivery.
      const processing = spansOf(PROCESS, eventId);
      expect(processing.map(instanceOf)).toEqual(['worker-2']);
      const [processed] = processing;
      expect(processed.traceId).toBe(traceId);
      expect(processed.links).toEqual([{ traceId, spanId: receipt.spanId }]);
      expect(processed.attributes['payment_webhooks.inbox_id']).toBe(inboxId);
      expect(receiver.spans().filter((s) => instanceOf(s) === 'worker-1' && (s.traceId === traceId || s.attributes['messaging.message.id'] === eventId))).toEqual([]);

      // Exactly one shipment, whose call carried the trace: the dispatch span, the processing's child, sent it.
      expect(sim.shipments.filter((s) => s.orderId === orderId).length).toBe(1);
      expect(sim.shipments.length).toBe(1);
      const dispatches = receiver.spans().filter((s) => s.name === DISPATCH && s.traceId === traceId);
      expect(dispatches.length).toBe(1);
      const [dispatch] = dispatches;
      expect(instanceOf(dispatch)).toBe('worker-2');
      expect(dispatch.parentSpanId).toBe(processed.spanId);
      expect(sim.calls.map((c) => c.result)).toEqual(['created']);
      expect(sim.calls[0].traceparent).toBe(`00-${traceId}-${dispatch.spanId}-01`);
    },
    TEST_TIMEOUT,
  );

  it(
    'HTTP_ADAPTER=fastify, all in one process: a paid order is one trace, from the webhook request to the carrier call',
    async () => {
      const port = await freePort();
      const service = start({ ...serviceEnv(newPrefix('fastify'), sim.url, receiver.url, 'fastify'), PORT: String(port), HTTP_ADAPTER: 'fastify' });
      await waitForHttp(service, `http://127.0.0.1:${port}/health/ready`, 30_000);
      const { orderId, eventId } = await payOrder(port);
      await until('the order fulfilled', async () => (await orderStatus(orderId)) === 'fulfilled');
      await until('the shipment at the carrier', () => sim.shipments.length === 1);

      const webhookServerSpans = () => receiver.spans().filter((s) => s.kind === SPAN_KIND.server && pathOf(s) === WEBHOOK_PATH);
      await untilSpans(
        'the webhook request, its receipt, the processing and the dispatch at the receiver',
        () =>
          webhookServerSpans().length > 0 &&
          spansOf(RECEIVE, eventId).length > 0 &&
          spansOf(PROCESS, eventId).length > 0 &&
          receiver.spans().some((s) => s.name === DISPATCH),
      );
      expect(receiver.errors).toEqual([]);

      // The request's server span, and the receipt as its child.
      const servers = webhookServerSpans();
      expect(servers.length).toBe(1);
      const [server] = servers;
      expect(server.parentSpanId).toBe('');
      const traceId = server.traceId;
      const receipts = spansOf(RECEIVE, eventId);
      expect(receipts.length).toBe(1);
      const [receipt] = receipts;
      expect(receipt).toMatchObject({ traceId, parentSpanId: server.spanId });
      expect(receipt.attributes['payment_webhooks.outcome']).toBe('accepted');

      // The processing: the receipt's child, linked to it.
      const processing = spansOf(PROCESS, eventId);
      expect(processing.length).toBe(1);
      const [processed] = processing;
      expect(processed).toMatchObject({ traceId, parentSpanId: receipt.spanId });
      expect(processed.links).toEqual([{ traceId, spanId: receipt.spanId }]);

      // The dispatch: the child of the processing that wrote its message, linked to it.
      const dispatches = receiver.spans().filter((s) => s.name === DISPATCH);
      expect(dispatches.length).toBe(1);
      const [dispatch] = dispatches;
      expect(dispatch).toMatchObject({ traceId, parentSpanId: processed.spanId });
      expect(dispatch.links).toEqual([{ traceId, spanId: processed.spanId }]);

      // One shipment; the carrier call carried the dispatch span's traceparent.
      expect(sim.shipments.length).toBe(1);
      expect(sim.shipments[0].orderId).toBe(orderId);
      expect(sim.calls.length).toBe(1);
      expect(sim.calls[0].traceparent).toBe(`00-${traceId}-${dispatch.spanId}-01`);
    },
    TEST_TIMEOUT,
  );
});
