import request from 'supertest';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { useCarrierSimulator } from '../support/carrier-suite';
import { AUTH, createTestApp, eventually, secretOf, TEST_ENDPOINTS, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { TcpProxy } from '../support/tcp-proxy';

/** CONTRACT §4: `/metrics` (Prometheus text, admin token) and `/health`, `/health/ready` (no auth). */

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition; every non-comment line must parse. */
function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/g;
      let consumed = 0;
      for (let l = re.exec(m[2]); l; l = re.exec(m[2])) {
        labels[l[1]] = l[2];
        consumed += l[0].length;
      }
      if (consumed !== m[2].length) throw new Error(`bad label set: ${line}`);
    }
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    if (Number.isNaN(value) && m[3] !== 'NaN') throw new Error(`bad sample value: ${line}`);
    samples.push({ name: m[1], labels, value });
  }
  return samples;
}

/** The value of the sample with exactly these labels, or undefined. */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = JSON.stringify(Object.entries(labels).sort());
  const hits = samples.filter((s) => s.name === name && JSON.stringify(Object.entries(s.labels).sort()) === wanted);
  if (hits.length > 1) throw new Error(`${name} ${wanted} appears ${hits.length} times`);
  return hits[0]?.value;
}

async function scrape(t: TestApp): Promise<{ text: string; samples: Sample[] }> {
  const res = await request(t.app.getHttpServer()).get('/metrics').set(AUTH);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return { text: res.text, samples: parsePrometheus(res.text) };
}

/** Polls the metrics until `probe` holds (counters are bumped right after the commit the test saw). */
async function metricsWhen(t: TestApp, probe: (samples: Sample[]) => boolean, what: string): Promise<Sample[]> {
  let last: Sample[] = [];
  await eventually(
    async () => {
      last = (await scrape(t)).samples;
      return probe(last);
    },
    10_000,
    what,
  );
  return last;
}

const count = async (t: TestApp, sql: string): Promise<number> => (await t.dataSource.query(`SELECT count(*)::int AS n FROM (${sql}) x`))[0].n;

const ROTATION = { id: 'paymos-rot', provider: 'paymos' as const, secrets: ['rot-secret-new', 'rot-secret-old'], merchantAccountId: 'acc_rot' };

function paymosDelivery(secret: string, eventId = uniqueId('evt'), type = 'invoice.updated') {
  const body = JSON.stringify({ event_id: eventId, type, created: Math.floor(Date.now() / 1000), data: { object: 'invoice', id: uniqueId('inv') } });
  return { eventId, body, headers: signedHeaders('paymos', secret, body, { eventId }) };
}

describe('/metrics: the receive path (workers off, a registry of its own)', () => {
  let t: TestApp;
  const post = (endpoint: string, headers: Record<string, string>, body: string) =>
    request(t.app.getHttpServer()).post(`/webhooks/${endpoint}`).set(headers).send(body);

  beforeAll(async () => {
    t = await createTestApp({ endpoints: [...TEST_ENDPOINTS, ROTATION] });
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  it('answers Prometheus text with the token, 401 without it', async () => {
    const res = await request(t.app.getHttpServer()).get('/metrics').set(AUTH);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(res.text).toContain('# TYPE pw_webhook_deliveries_total counter');
    expect(res.text).toContain('# TYPE pw_inbox_backlog gauge');
    expect(() => parsePrometheus(res.text)).not.toThrow();
    const anonymous = await request(t.app.getHttpServer()).get('/metrics');
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ error: 'unauthorized' });
  });

  it('one accepted delivery and one duplicate of it: exactly 1 each', async () => {
    const d = paymosDelivery(secretOf('paymos-a'));
    const first = await post('paymos-a', d.headers, d.body);
    const again = await post('paymos-a', d.headers, d.body);
    expect([first.body.status, again.body.status]).toEqual(['accepted', 'duplicate']);

    const samples = await metricsWhen(
      t,
      (s) => valueOf(s, 'pw_webhook_deliveries_total', { endpoint: 'paymos-a', provider: 'paymos', answer: 'duplicate' }) === 1,
      'the duplicate counted',
    );
    const { text } = await scrape(t);
    expect(text.split('\n')).toContain('pw_webhook_deliveries_total{endpoint="paymos-a",provider="paymos",answer="accepted"} 1');
    expect(text.split('\n')).toContain('pw_webhook_deliveries_total{endpoint="paymos-a",provider="paymos",answer="duplicate"} 1');
    expect(valueOf(samples, 'pw_webhook_deliveries_total', { endpoint: 'paymos-a', provider: 'paymos', answer: 'accepted' })).toBe(1);
    // Both were verified with the endpoint's only secret.
    expect(valueOf(samples, 'pw_webhook_secret_matches_total', { endpoint: 'paymos-a', secret_index: '0' })).toBe(2);
    expect(valueOf(samples, 'pw_webhook_receive_duration_seconds_count', { answer: 'accepted' })).toBe(1);
    expect(valueOf(samples, 'pw_webhook_receive_duration_seconds_count', { answer: 'duplicate' })).toBe(1);
  });

  it('a bad signature counts under answer="invalid_signature", and not as a secret match', async () => {
    const d = paymosDelivery('not-the-secret');
    const res = await post('paymos-b', d.headers, d.body);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'invalid_signature' });
    const samples = await metricsWhen(
      t,
      (s) => valueOf(s, 'pw_webhook_deliveries_total', { endpoint: 'paymos-b', provider: 'paymos', answer: 'invalid_signature' }) === 1,
      'the invalid signature counted',
    );
    expect(valueOf(samples, 'pw_webhook_deliveries_total', { endpoint: 'paymos-b', provider: 'paymos', answer: 'accepted' })).toBeUndefined();
    expect(samples.filter((s) => s.name === 'pw_webhook_secret_matches_total' && s.labels.endpoint === 'paymos-b')).toEqual([]);
  });

  it('a missing signature counts under answer="missing_signature"', async () => {
    const res = await post('paymos-b', { 'content-type': 'application/json' }, '{"event_id":"evt_nosig"}');
    expect(res.status).toBe(401);
    await metricsWhen(
      t,
      (s) => valueOf(s, 'pw_webhook_deliveries_total', { endpoint: 'paymos-b', provider: 'paymos', answer: 'missing_signature' }) === 1,
      'the missing signature counted',
    );
  });

  it('unknown endpoints share endpoint="unknown" (a scanner cannot grow the label set)', async () => {
    const d = paymosDelivery('whatever');
    for (const id of ['no-such-endpoint', 'another-unknown-one']) {
      const res = await post(id, d.headers, d.body);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'unknown_endpoint' });
    }
    const samples = await metricsWhen(
      t,
      (s) => valueOf(s, 'pw_webhook_deliveries_total', { endpoint: 'unknown', provider: 'unknown', answer: 'unknown_endpoint' }) === 2,
      'the unknown endpoint counted',
    );
    const endpoints = new Set(samples.filter((s) => s.name === 'pw_webhook_deliveries_total').map((s) => s.labels.endpoint));
    expect(endpoints.has('no-such-endpoint')).toBe(false);
    expect(endpoints.has('another-unknown-one')).toBe(false);
  });

  it('secret rotation: a delivery signed with the second configured secret counts under secret_index="1"', async () => {
    const old = paymosDelivery('rot-secret-old');
    expect((await post('paymos-rot', old.headers, old.body)).body).toEqual({ status: 'accepted', eventId: old.eventId });
    let samples = await metricsWhen(
      t,
      (s) => valueOf(s, 'pw_webhook_secret_matches_total', { endpoint: 'paymos-rot', secret_index: '1' }) === 1,
      'the second secret counted',
    );
    expect(valueOf(samples, 'pw_webhook_secret_matches_total', { endpoint: 'paymos-rot', secret_index: '0' })).toBeUndefined();

    const fresh = paymosDelivery('rot-secret-new');
    expect((await post('paymos-rot', fresh.headers, fresh.body)).body).toEqual({ status: 'accepted', eventId: fresh.eventId });
    samples = await metricsWhen(
      t,
      (s) => valueOf(s, 'pw_webhook_secret_matches_total', { endpoint: 'paymos-rot', secret_index: '0' }) === 1,
      'the first secret counted',
    );
    expect(valueOf(samples, 'pw_webhook_secret_matches_total', { endpoint: 'paymos-rot', secret_index: '1' })).toBe(1);
  });

  it('pw_inbox_backlog equals the received rows; the oldest one has an age > 0', async () => {
    let samples = (await scrape(t)).samples;
    expect(valueOf(samples, 'pw_inbox_backlog')).toBe(0);
    expect(valueOf(samples, 'pw_inbox_oldest_unprocessed_age_seconds')).toBe(0);

    for (let i = 0; i < 3; i++) {
      const d = paymosDelivery(secretOf('paymos-a'));
      expect((await post('paymos-a', d.headers, d.body)).status).toBe(200);
    }
    expect(await count(t, `SELECT 1 FROM webhook_inbox WHERE status = 'received'`)).toBe(3);
    samples = (await scrape(t)).samples;
    expect(valueOf(samples, 'pw_inbox_backlog')).toBe(3);
    samples = await metricsWhen(t, (s) => (valueOf(s, 'pw_inbox_oldest_unprocessed_age_seconds') ?? 0) > 0, 'an age above 0');
    expect(valueOf(samples, 'pw_inbox_oldest_unprocessed_age_seconds')).toBeLessThan(60);
  });

  it('pw_outbox_backlog counts pending outbox messages (an order marked paid, no relay running)', async () => {
    const d = driver(t);
    const order = await d.createOrder();
    const paid = await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'metrics test' });
    expect(paid.status).toBe(200);
    expect(await count(t, `SELECT 1 FROM outbox_message WHERE status = 'pending'`)).toBe(1);
    const samples = (await scrape(t)).samples;
    expect(valueOf(samples, 'pw_outbox_backlog')).toBe(1);
    expect(valueOf(samples, 'pw_outbox_dead')).toBe(0);
  });
});

describe('/metrics: processing and carriers (workers on)', () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  useCarrierSimulator(
    sim,
    (url) => ({
      carriers: [{ name: 'default', url, timeoutMs: 2_000 }],
      carrierMaxAttempts: 3,
    }),
    (app) => {
      t = app;
      d = driver(app);
    },
  );

  const markPaid = async (orderId: string) => {
    const res = await d.http().post(`/orders/${orderId}/mark-paid`).set(AUTH).send({ reason: 'metrics test' });
    expect(res.status).toBe(200);
  };

  it('a dispatch to the carrier: pw_carrier_calls_total{carrier="default",status="201"} 1', async () => {
    const order = await d.createOrder();
    await markPaid(order.id);
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, 'order fulfilled');
    expect(sim.calls.map((c) => c.result)).toEqual(['created']);
    const samples = await metricsWhen(
      t,
      (s) => valueOf(s, 'pw_carrier_calls_total', { carrier: 'default', status: '201' }) === 1,
      'the carrier call counted',
    );
    expect((await scrape(t)).text.split('\n')).toContain('pw_carrier_calls_total{carrier="default",status="201"} 1');
    expect(valueOf(samples, 'pw_carrier_call_duration_seconds_count', { carrier: 'default' })).toBe(1);
    expect(valueOf(samples, 'pw_outbox_backlog')).toBe(0);
    expect(valueOf(samples, 'pw_outbox_dead')).toBe(0);
  });

  it('a carrier refusal: the call counted under its status, and pw_outbox_dead 1', async () => {
    sim.fault('reject', 1);
    const order = await d.createOrder();
    await markPaid(order.id);
    await eventually(
      async () => (await count(t, `SELECT 1 FROM outbox_message WHERE status = 'dead'`)) === 1,
      15_000,
      'the message dead',
    );
    const samples = await metricsWhen(
      t,
      (s) => valueOf(s, 'pw_carrier_calls_total', { carrier: 'default', status: '400' }) === 1,
      'the refused call counted',
    );
    expect(valueOf(samples, 'pw_outbox_dead')).toBe(1);
    expect(valueOf(samples, 'pw_outbox_backlog')).toBe(0);
  });

  it('a delivery with no handler: pw_processing_outcomes_total{status="ignored",outcome="no_handler"} and the duration count rise', async () => {
    const before = valueOf((await scrape(t)).samples, 'pw_processing_duration_seconds_count', { provider: 'paymos' }) ?? 0;
    const { eventId, body } = bodies.paymos('invoice.updated', uniqueId('inv'));
    expect((await d.send('paymos-a', 'paymos', body, { eventId })).status).toBe(200);
    expect(await d.processed(eventId)).toMatchObject({ status: 'ignored', outcome: 'no_handler' });
    const samples = await metricsWhen(
      t,
      (s) => valueOf(s, 'pw_processing_outcomes_total', { provider: 'paymos', status: 'ignored', outcome: 'no_handler' }) === 1,
      'the no_handler outcome counted',
    );
    expect(valueOf(samples, 'pw_processing_duration_seconds_count', { provider: 'paymos' })).toBe(before + 1);
    expect(valueOf(samples, 'pw_inbox_backlog')).toBe(0);
    expect(valueOf(samples, 'pw_inbox_oldest_unprocessed_age_seconds')).toBe(0);
  });

  it('a delivery that pays an order: pw_processing_outcomes_total{status="processed",outcome="applied"} 1', async () => {
    const before = valueOf((await scrape(t)).samples, 'pw_processing_duration_seconds_count', { provider: 'standard' }) ?? 0;
    const order = await d.createOrder();
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    expect((await d.send('standard-main', 'standard', body, { eventId })).status).toBe(200);
    expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    const samples = await metricsWhen(
      t,
      (s) => valueOf(s, 'pw_processing_outcomes_total', { provider: 'standard', status: 'processed', outcome: 'applied' }) === 1,
      'the applied outcome counted',
    );
    expect((await scrape(t)).text.split('\n')).toContain('pw_processing_outcomes_total{provider="standard",status="processed",outcome="applied"} 1');
    expect(valueOf(samples, 'pw_processing_duration_seconds_count', { provider: 'standard' })).toBe(before + 1);
    // Let the dispatch it started finish before the next truncation.
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, 'order fulfilled');
  });
});

const READY_OK = {
  status: 'ok',
  info: { database: { status: 'up' }, redis: { status: 'up' } },
  error: {},
  details: { database: { status: 'up' }, redis: { status: 'up' } },
};

describe('/health and /health/ready (CONTRACT §4)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  it('/health: 200 {status:"ok"} without a token', async () => {
    const res = await request(t.app.getHttpServer()).get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', info: {}, error: {}, details: {} });
  });

  it('/health/ready: 200 with the database and Redis up, without a token', async () => {
    const res = await request(t.app.getHttpServer()).get('/health/ready');
    expect(res.status).toBe(200);
    expect(res.body).toEqual(READY_OK);
  });
});

describe.each([
  { dependency: 'redis' as const, other: 'database' as const, url: TEST_REDIS_URL, port: 6379 },
  { dependency: 'database' as const, other: 'redis' as const, url: TEST_DATABASE_URL, port: 5432 },
])('/health/ready with $dependency behind a proxy', ({ dependency, other, url, port }) => {
  const proxy = new TcpProxy('127.0.0.1', Number(new URL(url).port || port));
  let t: TestApp;
  const ready = () => request(t.app.getHttpServer()).get('/health/ready');

  beforeAll(async () => {
    await proxy.up();
    t = await createTestApp(dependency === 'redis' ? { redisUrl: proxy.urlFor(url) } : { databaseUrl: proxy.urlFor(url) });
  });
  // Closing waits for the connections the proxy cut to come back (ioredis' and pg's reconnect
  // backoff), which under a loaded machine has taken longer than Jest's default 30 s hook bound.
  afterAll(async () => {
    await proxy.up();
    await t?.close();
    await proxy.down();
  }, 90_000);
  afterEach(() => proxy.up());

  /** Polls until /health/ready answers `status`; returns the answer. */
  async function readyAnswers(status: number, timeoutMs: number) {
    let last: request.Response | undefined;
    await eventually(
      async () => {
        last = await ready();
        return last.status === status;
      },
      timeoutMs,
      `/health/ready ${status}`,
    );
    return last!;
  }

  it(`${dependency} taken down: 503 with error.${dependency}.status "down" within 3 s; 200 again once it is back`, async () => {
    expect((await ready()).body).toEqual(READY_OK);

    await proxy.down();
    const started = Date.now();
    const down = await readyAnswers(503, 3_000);
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(down.body.status).toBe('error');
    expect(down.body.error[dependency].status).toBe('down');
    expect(down.body.details[dependency].status).toBe('down');
    expect(down.body.error[other]).toBeUndefined();
    expect(down.body.info[other]).toEqual({ status: 'up' });

    await proxy.up();
    const back = await readyAnswers(200, 10_000);
    expect(back.body).toEqual(READY_OK);
  });

  it(`${dependency} hanging (connections accepted, never answered): 503 within 3 s, each answer bounded`, async () => {
    await readyAnswers(200, 10_000);
    proxy.hang();
    const started = Date.now();
    const res = await ready();
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(res.status).toBe(503);
    expect(res.body.error[dependency].status).toBe('down');

    await proxy.down();
    await proxy.up();
    expect((await readyAnswers(200, 10_000)).body).toEqual(READY_OK);
  });
});
