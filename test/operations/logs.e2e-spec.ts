import { unsupportedNode } from '../../src/common/engine';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { eventually } from '../support/app';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { Exited, freePort, ServiceProcess, waitForHttp } from '../support/process';

/**
 * CONTRACT §1 ("Secrets never appear in logs") and the module's logging promise: the built service,
 * run as its own process, writes JSON lines only; one `webhook delivery` line per delivery with
 * endpoint, event id, answer, status and duration; never a secret, a signature, the admin token
 * or an order's address.
 */

const PAYMOS_SECRET = 'logs-PAYMOS-secret-9f8e7d';
const STANDARD_SECRET = `whsec_${Buffer.from('logs-standard-key-value-0123456789').toString('base64')}`;
const ADMIN_TOKEN = 'logs-ADMIN-token-5c4b3a';
const WRONG_SECRET = 'logs-wrong-secret-1a2b3c';
const QUEUE_PREFIX = `pw-logs-${randomUUID().slice(0, 8)}`;
const SHIP_TO = { name: 'Zebediah Quux', line1: '99 Secretstreet', city: 'Lisbon', postalCode: '1100-001', country: 'PT' };

const ENDPOINTS = [
  { id: 'paymos-logs', provider: 'paymos', secrets: [PAYMOS_SECRET], merchantAccountId: 'acc_logs' },
  { id: 'standard-logs', provider: 'standard', secrets: [STANDARD_SECRET], merchantAccountId: 'acc_logs' },
];

interface SentDelivery {
  endpoint: string;
  eventId: string | null;
  answer: string;
  status: number;
}

/** Every signature value a request carried: the hex and base64 strings, without their scheme labels. */
function signatureValues(headers: Record<string, string>): string[] {
  const out: string[] = [];
  for (const name of ['x-webhook-signature', 'webhook-signature']) {
    const value = headers[name];
    if (!value) continue;
    for (const part of value.split(/[ ,]/)) {
      const v = part.replace(/^v1=/, '');
      if (v !== 'v1' && v.length >= 16) out.push(v);
    }
  }
  return out;
}

describe('the service logs (built service, its own process)', () => {
  const sim = new CarrierSimulator();
  let service: ServiceProcess | undefined;
  let base: string;
  let exited: Exited;
  const sent: SentDelivery[] = [];
  const signatures: string[] = [];
  let orderId: string;

  async function post(endpoint: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: any }> {
    const res = await fetch(`${base}/webhooks/${endpoint}`, { method: 'POST', headers, body });
    return { status: res.status, body: await res.json() };
  }

  const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${base}${path}`, {
      method: init.method ?? 'GET',
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });

  beforeAll(async () => {
    await sim.start();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    service = new ServiceProcess({
      PORT: String(port),
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX,
      WEBHOOK_ENDPOINTS: JSON.stringify(ENDPOINTS),
      ADMIN_TOKEN,
      CARRIER_URL: sim.url,
      RUN_WORKERS: 'true',
    });
    await waitForHttp(service, `${base}/health`);

    // 1. Paymos: accepted, then the same bytes again (duplicate).
    const eventId = `evt_logs_${randomUUID().slice(0, 8)}`;
    const body = JSON.stringify({
      event_id: eventId,
      type: 'invoice.updated',
      created: Math.floor(Date.now() / 1000),
      data: { object: 'invoice', id: 'inv_logs_1' },
    });
    const headers = signedHeaders('paymos', PAYMOS_SECRET, body, { eventId });
    signatures.push(...signatureValues(headers));
    expect(await post('paymos-logs', headers, body)).toEqual({ status: 200, body: { status: 'accepted', eventId } });
    sent.push({ endpoint: 'paymos-logs', eventId, answer: 'accepted', status: 200 });
    expect(await post('paymos-logs', headers, body)).toEqual({ status: 200, body: { status: 'duplicate', eventId } });
    sent.push({ endpoint: 'paymos-logs', eventId, answer: 'duplicate', status: 200 });

    // 2. A bad signature (signed with a secret the endpoint does not have; no id header).
    const badBody = JSON.stringify({ event_id: `evt_logs_bad_${randomUUID().slice(0, 8)}`, type: 'invoice.paid', data: { id: 'inv_logs_2' } });
    const badHeaders = signedHeaders('paymos', WRONG_SECRET, badBody);
    signatures.push(...signatureValues(badHeaders));
    expect(await post('paymos-logs', badHeaders, badBody)).toEqual({ status: 401, body: { error: 'invalid_signature' } });
    sent.push({ endpoint: 'paymos-logs', eventId: null, answer: 'invalid_signature', status: 401 });

    // 3. Standard Webhooks (base64 signatures): accepted.
    const stdId = `msg_logs_${randomUUID().slice(0, 8)}`;
    const stdBody = JSON.stringify({
      type: 'payment.updated',
      timestamp: new Date().toISOString(),
      data: { payment_id: 'pay_logs_1', amount: 100, currency: 'EUR', account_id: 'acc_logs' },
    });
    const stdHeaders = signedHeaders('standard', STANDARD_SECRET, stdBody, { eventId: stdId });
    signatures.push(...signatureValues(stdHeaders));
    expect(await post('standard-logs', stdHeaders, stdBody)).toEqual({ status: 200, body: { status: 'accepted', eventId: stdId } });
    sent.push({ endpoint: 'standard-logs', eventId: stdId, answer: 'accepted', status: 200 });

    // 4. An order with a distinctive address, paid by the support path, dispatched to the carrier.
    const created = await admin('/orders', {
      method: 'POST',
      body: { amount: '12.50', currency: 'EUR', shipTo: SHIP_TO, items: [{ sku: 'SKU-LOGS', quantity: 1 }] },
    });
    expect(created.status).toBe(201);
    orderId = ((await created.json()) as { id: string }).id;
    const paid = await admin(`/orders/${orderId}/mark-paid`, { method: 'POST', body: { reason: 'logs test' } });
    expect(paid.status).toBe(200);
    await eventually(
      async () => ((await (await admin(`/orders/${orderId}`)).json()) as { status: string }).status === 'fulfilled',
      20_000,
      'the order fulfilled',
    );

    service.kill('SIGTERM');
    exited = await service.exited();
  }, 60_000);

  afterAll(async () => {
    service?.kill('SIGKILL');
    await sim.stop();
    const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await redis.connect();
      const keys = await redis.keys(`${QUEUE_PREFIX}:*`);
      if (keys.length > 0) await redis.del(...keys);
    } finally {
      redis.disconnect();
    }
  });

  const lines = () => exited.stdout.split('\n').filter((l) => l.trim() !== '');
  const records = () => lines().map((l) => JSON.parse(l) as Record<string, unknown>);

  it('stopped on SIGTERM after the carrier got the shipment (the address really went through)', () => {
    expect(exited.signal).toBe('SIGTERM');
    const shipments = sim.shipments.filter((s) => s.orderId === orderId);
    expect(shipments.length).toBe(1);
  });

  it('on a Node.js older than 22, one line says what to install (on 22 and later, none)', () => {
    const said = records().filter((r) => typeof r.msg === 'string' && r.msg.startsWith('Node.js '));
    const expected = unsupportedNode();
    expect(said.map((r) => r.msg)).toEqual(expected === null ? [] : [expected]);
  });

  it('every stdout line is a JSON object', () => {
    expect(lines().length).toBeGreaterThan(0);
    for (const line of lines()) {
      let parsed: unknown;
      expect(() => (parsed = JSON.parse(line))).not.toThrow();
      expect(typeof parsed).toBe('object');
      expect(parsed).not.toBeNull();
    }
  });

  it('exactly one "webhook delivery" line per delivery, with endpoint, eventId, answer, status and durationMs', () => {
    const deliveries = records().filter((r) => r.msg === 'webhook delivery');
    expect(deliveries.length).toBe(sent.length);
    for (const expected of sent) {
      const matching = deliveries.filter(
        (r) => r.endpoint === expected.endpoint && r.eventId === expected.eventId && r.answer === expected.answer,
      );
      expect({ expected, lines: matching.length }).toEqual({ expected, lines: 1 });
      const [line] = matching;
      expect(line).toMatchObject({ endpoint: expected.endpoint, eventId: expected.eventId, answer: expected.answer, status: expected.status });
      expect(typeof line.durationMs).toBe('number');
      expect(line.durationMs as number).toBeGreaterThanOrEqual(0);
    }
  });

  it('a delivery line carries no header or body', () => {
    for (const r of records().filter((x) => x.msg === 'webhook delivery')) {
      expect(Object.keys(r)).not.toContain('headers');
      expect(Object.keys(r)).not.toContain('body');
    }
  });

  it('never writes the webhook secrets, a signature sent, the admin token, or the order address', () => {
    const output = exited.stdout + exited.stderr;
    expect(signatures.length).toBe(3);
    const forbidden = [
      PAYMOS_SECRET,
      STANDARD_SECRET,
      STANDARD_SECRET.slice('whsec_'.length),
      WRONG_SECRET,
      ADMIN_TOKEN,
      ...signatures,
      'Zebediah',
      'Secretstreet',
    ];
    for (const value of forbidden) expect({ value, found: output.includes(value) }).toEqual({ value, found: false });
  });
});
