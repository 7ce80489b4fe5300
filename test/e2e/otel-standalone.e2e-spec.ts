import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { signedHeaders } from '../../src/testing/sign';
import { deleteQueueKeys } from '../support/app';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { OtlpReceiver, ReceivedSpan, SPAN_KIND } from '../support/otlp-receiver';
import { emptyDir, Exited, freePort, ServiceProcess, until, waitForHttp } from '../support/process';

/**
 * The standalone service's OpenTelemetry SDK (src/observability/otel-sdk.ts): with
 * OTEL_EXPORTER_OTLP_ENDPOINT set, the built service exports its spans over OTLP/HTTP (`http/json`
 * or `http/protobuf`) to a receiver on 127.0.0.1, and exports what it still holds when stopped;
 * without it, nothing is sent. Each run is the built service as its own process.
 */
const SECRET = 'e2e-SUPERSECRET-value';
const ENDPOINTS = JSON.stringify([{ id: 'paymos-main', provider: 'paymos', secrets: [SECRET], merchantAccountId: 'acc_e2e' }]);
const WEBHOOK_PATH = '/webhooks/paymos-main';
// A prefix of this run's own (the service refuses a prefix whose queues hold another run's jobs).
const BASE = {
  DATABASE_URL: TEST_DATABASE_URL,
  REDIS_URL: TEST_REDIS_URL,
  QUEUE_PREFIX: `pw-otel-${randomUUID().slice(0, 8)}`,
  WEBHOOK_ENDPOINTS: ENDPOINTS,
};
/** Each protocol, its content type, and the signal its flush test stops the service with (both are covered). */
const PROTOCOLS = [
  ['http/json', 'application/json', 'SIGINT'],
  ['http/protobuf', 'application/x-protobuf', 'SIGTERM'],
] as const;
const TEST_TIMEOUT = 60_000;
/** The ranges the service names in its "what to install" line: the package's own dev dependencies. */
const { devDependencies } = JSON.parse(readFileSync(join(__dirname, '../../package.json'), 'utf8')) as { devDependencies: Record<string, string> };

let receiver: OtlpReceiver;
beforeEach(async () => {
  receiver = await OtlpReceiver.start();
});
afterEach(() => receiver.close());
afterAll(() => deleteQueueKeys(BASE.QUEUE_PREFIX));

/** The user agent and the forwarded client address of every delivery: personal data, in no span. */
const USER_AGENT = 'pw-otel-e2e-agent/1.0 (personal)';
const FORWARDED_FOR = '203.0.113.77';
/** The attributes of a client's address and user agent (stable and older conventions). */
const PERSONAL_KEYS = [
  'client.address',
  'network.peer.address',
  'net.peer.ip',
  'net.sock.peer.addr',
  'http.client_ip',
  'user_agent.original',
  'http.user_agent',
];
/** The client's addresses on this machine (the service's own, `server.address`, is not the client's). */
const PERSONAL_VALUES = ['127.0.0.1', '::1', '::ffff:127.0.0.1', FORWARDED_FOR, USER_AGENT];

/** A signed paymos delivery of `eventId` (with a W3C `traceparent` when given): its status. */
async function deliver(port: number, eventId: string, traceparent?: string): Promise<number> {
  const body = JSON.stringify({ event_id: eventId, type: 'invoice.paid', data: { id: `inv_${eventId}` } });
  const headers = signedHeaders('paymos', SECRET, body, { eventId });
  if (traceparent) headers.traceparent = traceparent;
  headers['user-agent'] = USER_AGENT;
  headers['x-forwarded-for'] = FORWARDED_FOR;
  const res = await fetch(`http://127.0.0.1:${port}${WEBHOOK_PATH}`, { method: 'POST', headers, body });
  await res.arrayBuffer();
  return res.status;
}

/** The path of an HTTP server span (the stable conventions' `url.path`, or the older `http.target`). */
function pathOf(span: ReceivedSpan): string | undefined {
  const path = span.attributes['url.path'] ?? span.attributes['http.target'];
  return typeof path === 'string' ? path.split('?')[0] : undefined;
}

function statusOf(span: ReceivedSpan): unknown {
  return span.attributes['http.response.status_code'] ?? span.attributes['http.status_code'];
}

const serverSpans = (path: string) => receiver.spans().filter((s) => s.kind === SPAN_KIND.server && pathOf(s) === path);
const named = (name: string) => receiver.spans().filter((s) => s.name === name);
/**
 * The first processing attempt of `eventId`. The suite's processes share its database, so a later
 * process's workers retry an earlier one's deliveries (an invoice without a payment is unmatched
 * and retried): their spans reach the receiver too, with their own event id and attempt.
 */
const firstProcessing = (eventId: string) =>
  named('webhook process paymos').filter(
    (s) => s.attributes['messaging.message.id'] === eventId && s.attributes['payment_webhooks.attempt'] === 1,
  );

/** The service started, healthy, on a port of its own. */
async function startService(env: Record<string, string>, cwd?: string): Promise<{ service: ServiceProcess; port: number }> {
  const port = await freePort();
  const service = new ServiceProcess({ ...BASE, PORT: String(port), ...env }, cwd);
  await waitForHttp(service, `http://127.0.0.1:${port}/health`);
  return { service, port };
}

/**
 * A stop signal, and the end Nest gives it with or without tracing: the app closed, then the
 * signal raised again (the process ends by it, as test/e2e/standalone.e2e-spec.ts has it).
 */
async function stop(service: ServiceProcess, signal: 'SIGTERM' | 'SIGINT' = 'SIGTERM'): Promise<Exited> {
  service.kill(signal);
  const exited = await service.exited();
  expect(exited.signal).toBe(signal);
  expect(exited.stdout).toContain(`shut down (${signal}): workers and connections closed`);
  expect(exited.stdout + exited.stderr).not.toContain(SECRET);
  return exited;
}

/** Which OpenTelemetry SDK packages the service's own code required (a preload notes each, from the start). */
function loadedProbe(): { preload: string; loaded: () => string[] } {
  const dir = emptyDir();
  const preload = join(dir, 'probe.js');
  const out = join(dir, 'loaded.txt');
  writeFileSync(
    preload,
    `const fs = require('node:fs');
const Module = require('node:module');
fs.writeFileSync(${JSON.stringify(out)}, '');
const load = Module._load;
Module._load = function (request, parent, ...rest) {
  const own = parent && parent.filename && !parent.filename.includes('node_modules');
  if (own && /^@opentelemetry\\/(sdk-|exporter-|instrumentation)/.test(request)) fs.appendFileSync(${JSON.stringify(out)}, request + '\\n');
  return load.call(this, request, parent, ...rest);
};
`,
  );
  // The file exists once the preload ran: an empty list means nothing was loaded, not no probe.
  return { preload, loaded: () => readFileSync(out, 'utf8').split('\n').filter(Boolean) };
}

describe.each(PROTOCOLS)('OTEL_EXPORTER_OTLP_PROTOCOL=%s', (protocol, contentType, signal) => {
  const other = PROTOCOLS.find(([p]) => p !== protocol)![0];

  it(
    'exports a delivery as one trace while running: the server span, its receipt and its processing',
    async () => {
      // The endpoint from a local .env; the protocol from the environment, which wins over the .env's.
      const dir = emptyDir();
      writeFileSync(join(dir, '.env'), `OTEL_EXPORTER_OTLP_ENDPOINT=${receiver.url}\nOTEL_EXPORTER_OTLP_PROTOCOL=${other}\n`);
      const { service, port } = await startService({ OTEL_EXPORTER_OTLP_PROTOCOL: protocol, OTEL_BSP_SCHEDULE_DELAY: '100' }, dir);
      const traceId = randomBytes(16).toString('hex');
      const callerSpanId = randomBytes(8).toString('hex');
      const eventId = `evt_otel_live_${randomBytes(4).toString('hex')}`;
      try {
        expect(await deliver(port, eventId, `00-${traceId}-${callerSpanId}-01`)).toBe(200);
        await until(
          'the server span, the receipt span and the processing span at the receiver',
          () => serverSpans(WEBHOOK_PATH).length > 0 && named('webhook receive paymos').length > 0 && firstProcessing(eventId).length > 0,
        );
      } finally {
        const exited = await stop(service);
        expect(exited.stdout).toContain(`tracing on: OpenTelemetry exports spans over OTLP (${protocol}) as service payment-webhooks`);
      }
      expect(receiver.errors).toEqual([]);
      for (const r of receiver.requests) expect([r.method, r.path, r.contentType]).toEqual(['POST', '/v1/traces', contentType]);

      // The request: one server span, the caller's span's child (W3C traceparent).
      const [server, ...moreServers] = serverSpans(WEBHOOK_PATH);
      expect(moreServers).toEqual([]);
      expect(server).toMatchObject({ traceId, parentSpanId: callerSpanId });
      expect(statusOf(server)).toBe(200);
      expect(server.resource['service.name']).toBe('payment-webhooks');
      // Probes are not traced: the health polls before the delivery left no span.
      expect(receiver.spans().filter((s) => s.kind === SPAN_KIND.server && pathOf(s) !== WEBHOOK_PATH)).toEqual([]);

      // Its receipt (src/observability/tracing.ts), under the server span.
      const [receipt, ...moreReceipts] = named('webhook receive paymos');
      expect(moreReceipts).toEqual([]);
      expect(receipt).toMatchObject({ traceId, parentSpanId: server.spanId });
      expect(receipt.attributes).toMatchObject({
        'messaging.system': 'payment_webhooks',
        'messaging.destination.name': 'paymos-main',
        'messaging.message.id': eventId,
        'payment_webhooks.outcome': 'accepted',
      });

      // Its processing on the worker, linked to the receipt; the statements it ran are its children (pg instrumentation).
      const [processing, ...moreProcessing] = firstProcessing(eventId);
      expect(moreProcessing).toEqual([]);
      expect(processing.traceId).toBe(traceId);
      expect(processing.links).toEqual([{ traceId, spanId: receipt.spanId }]);
      const statements = receiver
        .spans()
        .filter((s) => s.parentSpanId === processing.spanId && s.kind === SPAN_KIND.client)
        .filter((s) => s.attributes['db.system'] === 'postgresql' || s.attributes['db.system.name'] === 'postgresql');
      expect(statements.length).toBeGreaterThan(0);
      // Statements and Redis commands are recorded inside traces only: none without a parent (the workers' polls).
      expect(receiver.spans().filter((s) => s.parentSpanId === '' && s.kind === SPAN_KIND.client)).toEqual([]);

      // No personal data: no span has the client's address or user agent, under any key (a client
      // span's addresses are its server's: the database's, Redis's; `server.address` the service's own).
      const personal = receiver.spans().flatMap((s) =>
        Object.entries(s.attributes)
          .filter(
            ([key, value]) =>
              PERSONAL_KEYS.includes(key) ||
              (s.kind !== SPAN_KIND.client && key !== 'server.address' && PERSONAL_VALUES.includes(String(value))),
          )
          .map(([key, value]) => `${s.name}: ${key}=${String(value)}`),
      );
      expect(personal).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  it(
    `exports on ${signal} the spans it still holds, after the app has closed`,
    async () => {
      const probe = loadedProbe();
      const { service, port } = await startService({
        NODE_OPTIONS: `--require ${probe.preload}`,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
        // A batch delay of an hour: nothing leaves before the process is stopped.
        OTEL_BSP_SCHEDULE_DELAY: '3600000',
        OTEL_SERVICE_NAME: 'pw-otel-e2e',
      });
      const eventId = `evt_otel_flush_${randomBytes(4).toString('hex')}`;
      let exited: Exited;
      try {
        expect(await deliver(port, eventId)).toBe(200);
        expect(await deliver(port, eventId)).toBe(200);
        expect(receiver.requests).toEqual([]);
      } finally {
        exited = await stop(service, signal);
      }
      expect(exited.stdout).toContain(`tracing on: OpenTelemetry exports spans over OTLP (${protocol}) as service pw-otel-e2e`);
      expect(receiver.errors).toEqual([]);
      // Exported once the app had closed (its last line), before the process ended.
      const closed = exited.stdout.split('\n').find((l) => l.includes(`shut down (${signal})`))!;
      expect(receiver.requests.length).toBeGreaterThan(0);
      expect(receiver.requests[0].receivedAt).toBeGreaterThanOrEqual(Date.parse(JSON.parse(closed).time));
      for (const r of receiver.requests) expect([r.method, r.path, r.contentType]).toEqual(['POST', '/v1/traces', contentType]);
      const servers = serverSpans(WEBHOOK_PATH);
      expect(servers.map(statusOf)).toEqual([200, 200]);
      expect(servers.map((s) => s.resource['service.name'])).toEqual(['pw-otel-e2e', 'pw-otel-e2e']);
      const receipts = named('webhook receive paymos');
      expect(receipts.map((s) => s.attributes['payment_webhooks.outcome'])).toEqual(['accepted', 'duplicate']);
      expect(receipts.map((s) => s.parentSpanId)).toEqual(servers.map((s) => s.spanId));
      // The SDK, the exporter of the protocol (and not the other's) and the three instrumentations.
      expect([...new Set(probe.loaded())].sort()).toEqual(
        [
          '@opentelemetry/sdk-node',
          protocol === 'http/json' ? '@opentelemetry/exporter-trace-otlp-http' : '@opentelemetry/exporter-trace-otlp-proto',
          '@opentelemetry/instrumentation-http',
          '@opentelemetry/instrumentation-pg',
          '@opentelemetry/instrumentation-ioredis',
        ].sort(),
      );
    },
    TEST_TIMEOUT,
  );
});

describe('without OpenTelemetry', () => {
  /** A preload that hides the named packages from require, as an install without them. */
  function hiding(packages: string[]): string {
    const file = join(emptyDir(), 'hide.js');
    writeFileSync(
      file,
      `const Module = require('node:module');
const hidden = new Set(${JSON.stringify(packages)});
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (hidden.has(request)) throw Object.assign(new Error("Cannot find module '" + request + "'"), { code: 'MODULE_NOT_FOUND' });
  return resolve.call(this, request, ...rest);
};
`,
    );
    return file;
  }

  it(
    'with no OTLP endpoint set, loads no SDK and sends nothing',
    async () => {
      const probe = loadedProbe();
      // Every other OTEL_* variable may be there: without an endpoint they change nothing.
      const { service, port } = await startService({
        NODE_OPTIONS: `--require ${probe.preload}`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'pw-otel-e2e',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      });
      try {
        expect(await deliver(port, `evt_otel_off_${randomBytes(4).toString('hex')}`)).toBe(200);
      } finally {
        await stop(service).then((exited) => expect(exited.stdout.split('\n').filter((l) => /\btracing (on|is off):/.test(l))).toEqual([]));
      }
      expect(receiver.requests).toEqual([]);
      expect(probe.loaded()).toEqual([]);
    },
    TEST_TIMEOUT,
  );

  it(
    'with the endpoint set but SDK packages missing: one line saying what to install, and the service runs without tracing',
    async () => {
      const { service, port } = await startService({
        NODE_OPTIONS: `--require ${hiding(['@opentelemetry/sdk-node', '@opentelemetry/instrumentation-pg'])}`,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_BSP_SCHEDULE_DELAY: '100',
      });
      try {
        expect(await deliver(port, `evt_otel_missing_${randomBytes(4).toString('hex')}`)).toBe(200);
      } finally {
        const exited = await stop(service);
        const lines = exited.stdout.split('\n').filter((l) => l.includes('tracing'));
        expect(lines.length).toBe(1);
        expect(JSON.parse(lines[0])).toMatchObject({
          level: 'warn',
          msg:
            'tracing is off: OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not installed; ' +
            `install it with: npm install @opentelemetry/sdk-node@${devDependencies['@opentelemetry/sdk-node']} ` +
            `@opentelemetry/instrumentation-pg@${devDependencies['@opentelemetry/instrumentation-pg']}`,
        });
      }
      expect(receiver.requests).toEqual([]);
    },
    TEST_TIMEOUT,
  );
});

describe('a protocol the service cannot export with stops it with one line naming the variable', () => {
  const cases: Array<[string, Record<string, string>, string]> = [
    ['grpc', { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL: must be http/protobuf or http/json'],
    [
      'grpc for traces only',
      { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' },
      'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: must be http/protobuf or http/json',
    ],
  ];

  it.each(cases)('%s', async (_name, env, problem) => {
    const service = new ServiceProcess({ ...BASE, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...env });
    const exited = await service.exited();
    expect(exited.code).toBe(1);
    const lines = exited.stderr.trimEnd().split('\n');
    expect(lines.length).toBe(1);
    expect(lines[0]).toBe(`Configuration error: ${problem} (the standalone service has no gRPC exporter)`);
    expect(exited.stdout).toBe('');
    expect(receiver.requests).toEqual([]);
  });
});
