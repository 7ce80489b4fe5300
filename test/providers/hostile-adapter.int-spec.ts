import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EndpointDefinition, TuningOptions } from '../../src/config/options';
import { WebhookSignatureGuard } from '../../src/webhooks/webhook-signature.guard';
import { acmeEvent, acmeHeaders, acmeProvider } from '../support/acme-provider';
import { createTestApp, eventually, Platform, PLATFORMS, TEST_ENDPOINTS, TestApp, truncateAll } from '../support/app';
import { driver, uniqueId } from '../support/domain';
import {
  brittleProvider,
  hostileLate,
  hostileProvider,
  LATE_BEHAVIOURS,
  RECEIVE_ANSWERS,
  RECEIVE_BEHAVIOURS,
  type BrittleBehaviour,
  type ReceiveBehaviour,
} from '../support/hostile-provider';

/**
 * A provider of the host's own whose members misbehave, as a JavaScript host's can (docs/providers.md#what-the-module-does-with-an-adapters-values):
 * what they return is awaited within a deadline and checked, and whatever they do (throw, reject,
 * never settle, return what the interface cannot take) is that delivery's failure, never the
 * process's. On the receive path: `503 unavailable` (or the contract's `400`), nothing recorded,
 * and the budget of unverified bytes given back at the deadline or when the sender hangs up, even
 * when the adapter never answers. On the processing path: a failed attempt, retried and then
 * `failed` with the code in `last_error`, while other deliveries go on. Listening apps, real
 * PostgreSQL and Redis, Express and Fastify.
 */

const SECRET = 'acme_sk_hostile_0123456789';
const ACCOUNT = 'm_1';
const MiB = 1_048_576;

const ENDPOINTS: EndpointDefinition[] = [
  ...TEST_ENDPOINTS,
  { id: 'acme-main', provider: 'acme', secrets: [SECRET], merchantAccountId: ACCOUNT },
  { id: 'hostile-main', provider: 'hostile', secrets: [SECRET], merchantAccountId: ACCOUNT },
  { id: 'brittle-main', provider: 'brittle', secrets: [SECRET], merchantAccountId: ACCOUNT },
];

/** Every rejection nobody handled while the suite ran (none is the rule: the process would die on one). */
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
beforeAll(() => process.on('unhandledRejection', onUnhandled));
afterAll(() => process.off('unhandledRejection', onUnhandled));
afterEach(() => {
  // Each test answers for its own: what one left is not another's failure.
  expect(unhandled.splice(0).map((r) => String((r as Error)?.message ?? r))).toEqual([]);
});

interface Answer {
  status: number;
  body: string;
  connection: string | undefined;
  /** From the request's start to the answer's end. */
  ms: number;
}

/** A POST from `localAddress` (node:http can bind one: Linux routes all of 127/8 on loopback, each a client of its own). */
function post(port: number, path: string, headers: Record<string, string>, body: string | Buffer, localAddress = '127.0.0.1'): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, localAddress, agent: false, method: 'POST', path, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: text, connection: res.headers.connection, ms: performance.now() - started }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Resolves when `promise` does, or fails after `ms` (a deadline, not a sleep). */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** A listening app with the hostile providers, its guard, and helpers to send to it. */
function listeningApp(platform: Platform, tuning: Partial<TuningOptions>, lateMs: number) {
  const s = {} as { t: TestApp; port: number; guard: WebhookSignatureGuard; rows(eventId?: string): Promise<number> };
  beforeAll(async () => {
    s.t = await createTestApp({ providers: [acmeProvider, hostileProvider(lateMs), brittleProvider], endpoints: ENDPOINTS, tuning }, { platform });
    await s.t.app.listen(0, '127.0.0.1');
    s.port = (s.t.app.getHttpServer().address() as AddressInfo).port;
    s.guard = s.t.get(WebhookSignatureGuard);
    s.rows = (eventId) => driver(s.t).count(`SELECT 1 FROM webhook_inbox${eventId ? ' WHERE event_id = $1' : ''}`, eventId ? [eventId] : []);
  });
  afterAll(() => s.t?.close());
  beforeEach(() => truncateAll(s.t.dataSource));
  return s;
}

/** An authentic acme delivery, sent to `endpointId` with `x-hostile: behaviour`. */
function authentic(behaviour?: ReceiveBehaviour) {
  const { eventId, body } = acmeEvent('charge.paid', uniqueId('ch'));
  return { eventId, body, headers: { ...acmeHeaders(SECRET, body), ...(behaviour ? { 'x-hostile': behaviour } : {}) } };
}

describe.each(PLATFORMS)('%s: an adapter whose receive never settles, at the default deadline (receiveTimeoutMs 4.5 s)', (platform) => {
  const s = listeningApp(platform, {}, 60_000);
  const DEADLINE = 4_500;

  it('answered 503 unavailable at the deadline, nothing recorded, its bytes given back', async () => {
    const d = authentic('hang');
    const answer = await within(post(s.port, '/webhooks/hostile-main', d.headers, d.body), DEADLINE + 5_000, 'the hanging delivery answered');
    expect({ status: answer.status, body: JSON.parse(answer.body) }).toEqual({ status: 503, body: { error: 'unavailable' } });
    // At the deadline, not before (the bytes are read first, so it may come a little after).
    expect(answer.ms).toBeGreaterThanOrEqual(DEADLINE - 50);
    expect(answer.ms).toBeLessThan(DEADLINE + 3_000);
    expect(s.guard.unverified.inFlight).toBe(0);
    expect(s.guard.unverified.heldBy('127.0.0.1')).toBe(0);
    expect(await s.rows(d.eventId)).toBe(0);
  });

  it('a sender that hangs up while the adapter checks: its bytes are given back at once, not at the deadline', async () => {
    const d = authentic('hang');
    const req = request({ host: '127.0.0.1', port: s.port, agent: false, method: 'POST', path: '/webhooks/hostile-main', headers: { ...d.headers, 'content-length': String(Buffer.byteLength(d.body)) } });
    req.on('error', () => undefined);
    req.end(d.body);
    await eventually(async () => s.guard.unverified.inFlight === Buffer.byteLength(d.body), 3_000, 'the body read and held');
    const hungUp = performance.now();
    req.destroy();
    await eventually(async () => s.guard.unverified.inFlight === 0, DEADLINE, 'the bytes given back');
    expect(performance.now() - hungUp).toBeLessThan(DEADLINE / 2);
    expect(await s.rows(d.eventId)).toBe(0);
  });

  it("the review's case: 36 bodies of 1 MiB from 4 addresses hold the whole budget, then are answered 503 at the deadline; another client is accepted afterwards", async () => {
    const addresses = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'];
    // Exactly the body limit (1 MiB): JSON the adapter never reads.
    const big = Buffer.from(`{"pad":"${'x'.repeat(MiB - 10)}"}`);
    expect(big.length).toBe(MiB);
    const sent = addresses.flatMap((address) =>
      Array.from({ length: 9 }, () => post(s.port, '/webhooks/hostile-main', { 'content-type': 'application/json', 'x-hostile': 'hang' }, big, address)),
    );
    // Each address holds its share (8 bodies of its 9: the 9th is refused at once), and the four
    // shares are the whole budget (32 MiB): everyone's delivery is refused meanwhile.
    await eventually(async () => s.guard.unverified.inFlight === 32 * MiB, 4_000, 'the budget spent by the hanging deliveries');
    expect(addresses.map((a) => s.guard.unverified.heldBy(a))).toEqual([8 * MiB, 8 * MiB, 8 * MiB, 8 * MiB]);
    const other = authentic();
    const meanwhile = await post(s.port, '/webhooks/acme-main', other.headers, other.body, '127.0.0.6');
    expect({ status: meanwhile.status, body: meanwhile.body }).toEqual({ status: 503, body: '{"error":"unavailable"}' });

    // The deadline answers every one of them, whatever the adapter does.
    const answers = await within(Promise.all(sent), DEADLINE + 8_000, 'the 36 hanging deliveries answered');
    expect(answers.map((a) => `${a.status} ${a.body}`)).toEqual(Array(36).fill('503 {"error":"unavailable"}'));
    // Four refused at once (each address's ninth, over its share), the 32 held at the deadline.
    expect(answers.filter((a) => a.ms < DEADLINE - 50)).toHaveLength(4);
    expect(s.guard.unverified.inFlight).toBe(0);
    expect([...addresses, '127.0.0.6'].map((a) => s.guard.unverified.heldBy(a))).toEqual([0, 0, 0, 0, 0]);

    // An authentic delivery on another endpoint, from another address, is accepted.
    const after = await post(s.port, '/webhooks/acme-main', other.headers, other.body, '127.0.0.6');
    expect({ status: after.status, body: JSON.parse(after.body) }).toEqual({ status: 200, body: { status: 'accepted', eventId: other.eventId } });
    expect(await s.rows()).toBe(1);
    // The 32 MiB are out of the budget but still held by the checks that never answered: the endpoint
    // whose adapter holds them takes no more bodies (at once, unread) until they answer.
    expect(s.guard.abandonedBytes('hostile-main')).toBeGreaterThanOrEqual(32 * MiB);
    const refused = await post(s.port, '/webhooks/hostile-main', { 'content-type': 'application/json', 'x-hostile': 'hang' }, big, '127.0.0.7');
    expect({ status: refused.status, body: refused.body, connection: refused.connection }).toEqual({ status: 503, body: '{"error":"unavailable"}', connection: 'close' });
    expect(refused.ms).toBeLessThan(DEADLINE / 2);
  }, 60_000);
});

describe.each(PLATFORMS)('%s: whatever an adapter receive returns, throws or never settles (receiveTimeoutMs 300)', (platform) => {
  const RECEIVE_TIMEOUT_MS = 300;
  const s = listeningApp(platform, { receiveTimeoutMs: RECEIVE_TIMEOUT_MS, adapterTimeoutMs: 200 }, RECEIVE_TIMEOUT_MS + 200);

  it('the hostile adapter is honest when asked (the cases below are meaningful)', async () => {
    for (const behaviour of ['honest', 'slow'] as const) {
      const d = authentic(behaviour);
      const answer = await post(s.port, '/webhooks/hostile-main', d.headers, d.body);
      expect({ behaviour, status: answer.status, body: JSON.parse(answer.body) }).toEqual({ behaviour, status: 200, body: { status: 'accepted', eventId: d.eventId } });
    }
    expect(await s.rows()).toBe(2);
  });

  it.each(RECEIVE_BEHAVIOURS.filter((b) => b !== 'honest' && b !== 'slow'))(
    '%s, on an authentic delivery: 503 unavailable or the contract 400, nothing recorded, the bytes given back, no rejection unhandled',
    async (behaviour) => {
      const late = hostileLate.settled;
      const d = authentic(behaviour);
      const answer = await within(post(s.port, '/webhooks/hostile-main', d.headers, d.body), RECEIVE_TIMEOUT_MS + 5_000, 'answered');
      const { status, ...body } = RECEIVE_ANSWERS[behaviour];
      expect({ behaviour, status: answer.status, body: JSON.parse(answer.body) }).toEqual({ behaviour, status, body });
      expect(s.guard.unverified.inFlight).toBe(0);
      if (LATE_BEHAVIOURS.includes(behaviour)) {
        // What the adapter says after the answer changes nothing (a late acceptance records nothing).
        await eventually(async () => hostileLate.settled > late, 5_000, 'the late settlement');
        await new Promise((r) => setImmediate(r));
      }
      expect(await s.rows()).toBe(0);
      // And the process goes on: the next delivery is received as ever.
      const next = authentic();
      expect((await post(s.port, '/webhooks/hostile-main', next.headers, next.body)).status).toBe(200);
    },
  );

  describe('answer(), once the events are recorded', () => {
    const answering = (answer: () => unknown) => {
      const provider = { ...acmeProvider, name: 'answering', answer } as never;
      return provider;
    };
    let t: TestApp;
    let port: number;
    let answerWith: () => unknown = () => ({ contentType: 'text/plain', body: 'ok' });
    beforeAll(async () => {
      t = await createTestApp(
        {
          providers: [answering(() => answerWith())],
          endpoints: [{ id: 'answering-main', provider: 'answering', secrets: [SECRET], merchantAccountId: ACCOUNT }],
          tuning: { adapterTimeoutMs: 200 },
        },
        { platform },
      );
      await t.app.listen(0, '127.0.0.1');
      port = (t.app.getHttpServer().address() as AddressInfo).port;
    });
    afterAll(() => t?.close());

    it.each<[string, () => unknown, number, string]>([
      ['a value', () => ({ contentType: 'text/plain; charset=utf-8', body: '[ok]' }), 200, '[ok]'],
      ['a promise of a value', () => Promise.resolve({ contentType: 'text/plain; charset=utf-8', body: '[ok later]' }), 200, '[ok later]'],
      ['a throw', () => { throw new Error('answer threw'); }, 503, '{"error":"unavailable"}'],
      ['a rejection', () => Promise.reject(new Error('answer rejected')), 503, '{"error":"unavailable"}'],
      ['a promise that never settles', () => new Promise(() => undefined), 503, '{"error":"unavailable"}'],
      ['no body of text', () => ({ contentType: 'text/plain', body: 42 }), 503, '{"error":"unavailable"}'],
      ['null', () => null, 503, '{"error":"unavailable"}'],
      ['a content type no header can hold', () => ({ contentType: 'text/plain\r\nx: y', body: 'x' }), 503, '{"error":"unavailable"}'],
    ])('%s: the delivery is recorded; the answer is its value, else 503 (the sender retries and is answered again)', async (_what, answer, status, text) => {
      answerWith = answer;
      const d = authentic();
      const res = await within(post(port, '/webhooks/answering-main', d.headers, d.body), 5_000, 'answered');
      expect({ status: res.status, body: res.body }).toEqual({ status, body: text });
      expect(await driver(t).count(`SELECT 1 FROM webhook_inbox WHERE event_id = $1`, [d.eventId])).toBe(1);
    });
  });
});

describe.each(PLATFORMS)('%s: an adapter whose normalize or fetchesState misbehaves while processing (workers on)', (platform) => {
  const ATTEMPTS = 3;
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  beforeAll(async () => {
    t = await createTestApp(
      {
        providers: [acmeProvider, hostileProvider(60_000), brittleProvider],
        endpoints: ENDPOINTS,
        runWorkers: true,
        carriers: [],
        carrierAdapters: [{ name: 'default', ship: async () => ({ ok: true, shipmentId: 'shp_1' }) }],
        tuning: { inboxAttempts: ATTEMPTS, inboxBackoffMs: 50, unmatchedAfterAttempts: ATTEMPTS, adapterTimeoutMs: 300, providerApiTimeoutMs: 100, sweepIntervalMs: 200, sweepAfterMs: 100 },
      },
      { platform },
    );
    d = driver(t);
  });
  afterAll(() => t?.close());

  /** A signed brittle delivery of a charge of a new order (matched through its order id), its processing told by `brittle`. */
  async function deliver(brittle: BrittleBehaviour) {
    const order = await d.createOrder();
    const { eventId, body } = acmeEvent('charge.paid', uniqueId('ch'), { orderId: order.id });
    const text = JSON.stringify({ ...JSON.parse(body), brittle });
    const res = await d.http().post('/webhooks/brittle-main').set(acmeHeaders(SECRET, text)).send(text);
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: 'accepted', eventId } });
    return { eventId, orderId: order.id };
  }

  it.each<[string, BrittleBehaviour, string, RegExp]>([
    ['normalize returns a rejected promise', { normalize: 'reject' }, 'provider_adapter_failed', /^provider_adapter_failed: provider "brittle" normalize failed: brittle: normalize rejected$/],
    ['normalize throws', { normalize: 'throw' }, 'provider_adapter_failed', /^provider_adapter_failed: provider "brittle" normalize failed: brittle: normalize threw$/],
    ['normalize never settles', { normalize: 'hang' }, 'provider_adapter_timeout', /^provider_adapter_timeout: provider "brittle" normalize did not answer within 300 ms$/],
    ['normalize returns a string', { normalize: 'string' }, 'provider_adapter_invalid', /^provider_adapter_invalid: provider "brittle" normalize returned string, not an event object or null$/],
    ['fetchesState.wants returns a rejected promise', { wants: 'reject' }, 'provider_adapter_failed', /^provider_adapter_failed: provider "brittle" fetchesState\.wants failed: brittle: wants rejected$/],
    ['fetchesState.wants never settles', { wants: 'hang' }, 'provider_adapter_timeout', /^provider_adapter_timeout: provider "brittle" fetchesState\.wants did not answer within 300 ms$/],
    ['fetchesState.wants returns a string', { wants: 'string' }, 'provider_adapter_invalid', /^provider_adapter_invalid: provider "brittle" fetchesState\.wants returned string, not true or false$/],
    ['fetchesState.fetch rejects', { wants: 'resolveTrue', fetch: 'reject' }, 'internal_error', /^internal_error: brittle: fetch rejected$/],
    ['fetchesState.fetch returns what is no state', { wants: 'resolveTrue', fetch: 'garbage' }, 'provider_adapter_invalid', /^provider_adapter_invalid: provider "brittle" fetchesState\.fetch returned neither/],
  ])('%s: retried, then failed after exactly 3 attempts with its code in last_error; a good delivery beside it is processed', async (_what, brittle, code, lastError) => {
    const bad = await deliver(brittle);
    const good = await deliver({});
    expect(await d.processed(good.eventId)).toMatchObject({ status: 'processed', outcome: 'applied', attempts: 1 });
    const row = await d.processed(bad.eventId, 30_000);
    expect({ status: row.status, outcome: row.outcome, attempts: row.attempts }).toEqual({ status: 'failed', outcome: code, attempts: ATTEMPTS });
    expect(row.lastError).toMatch(lastError);
    expect((await d.getOrder(bad.orderId)).status).toBe('awaiting_payment');
    // The process is alive and goes on: another delivery after it is processed too.
    const later = await deliver({});
    expect(await d.processed(later.eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
  }, 60_000);

  it('fetchesState.fetch never settles: each attempt fails at its deadline (2 provider API timeouts and 5 s), then the delivery is failed', async () => {
    const bad = await deliver({ wants: 'resolveTrue', fetch: 'hang' });
    const row = await d.processed(bad.eventId, 60_000);
    expect({ status: row.status, outcome: row.outcome, attempts: row.attempts }).toEqual({ status: 'failed', outcome: 'provider_adapter_timeout', attempts: ATTEMPTS });
    expect(row.lastError).toBe('provider_adapter_timeout: provider "brittle" fetchesState.fetch did not answer within 5200 ms');
  }, 90_000);

  it.each<[string, BrittleBehaviour]>([
    ['normalize returns a promise of the event', { normalize: 'resolve' }],
    ['wants resolves true, fetch answers the state', { wants: 'resolveTrue' }],
    ['wants resolves false', { wants: 'resolveFalse' }],
  ])('%s: awaited, and applied as any', async (_what, brittle) => {
    const { eventId, orderId } = await deliver(brittle);
    expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied', attempts: 1 });
    await eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 15_000, 'the order fulfilled');
  });
});
