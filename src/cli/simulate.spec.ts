import { createHmac, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CliExit, EXIT } from './context';
import type { Answer, Delivery } from './remote/delivery';
import { SCHEDULES, ScheduleName, seededRandom } from './remote/schedules';
import type { RemoteProvider } from './remote/events';
import { Clock, paymentCount, planRun, PlannedPayment, Simulation, SimulationReport } from './remote/simulation';
import { awaitObjectReads, failure, formatObjects, formatProgress, formatSummary, parseSimulateArgs, ProgressLine, RunInfo, simulateCommand, summaryJson, totals } from './simulate.command';

/**
 * `payment-webhooks simulate` without a network or a real clock: a virtual clock
 * that jumps to the next timer once everything else has settled, and an in-memory receiver.
 */

const T0 = 1_800_000_000_000;
const MIN = 60_000;

class VirtualClock implements Clock {
  private t = T0;
  private seq = 0;
  private timers: Array<{ at: number; seq: number; resolve: () => void }> = [];

  now(): number {
    return this.t;
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.timers.push({ at: this.t + ms, seq: this.seq++, resolve }));
  }

  /** Runs `work` to its end: whenever nothing but timers is left, time jumps to the earliest one. */
  async drive<T>(work: Promise<T>): Promise<T> {
    let settled: { value?: T; error?: unknown } | undefined;
    work.then(
      (value) => (settled = { value }),
      (error: unknown) => (settled = { error }),
    );
    for (;;) {
      await new Promise((resolve) => setImmediate(resolve));
      if (settled) {
        if ('error' in settled && settled.error !== undefined) throw settled.error;
        return settled.value as T;
      }
      if (this.timers.length === 0) throw new Error('the simulation waits for nothing and never ends');
      this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.timers.shift()!;
      this.t = next.at;
      next.resolve();
    }
  }
}

const answer = (status: number, json?: Record<string, unknown>): Answer => ({ status, json, ms: 1 });
const UNAVAILABLE = answer(503, { error: 'unavailable' });

interface Received {
  at: number;
  delivery: Delivery;
}

/** A receiver: idempotent by event id unless told otherwise, unavailable until `downUntil`, with a latency in virtual ms. */
class FakeService {
  readonly received: Received[] = [];
  readonly seen = new Set<string>();
  inFlight = 0;
  maxInFlight = 0;
  unavailable = 0;

  constructor(
    private readonly clock: VirtualClock,
    private readonly options: {
      downUntil?: number;
      latencyMs?: number;
      answer?: (d: Delivery, now: number) => Answer | undefined;
      /** Answers accepted every time: a broken deduplication. */
      naive?: boolean;
      /** Called as each request arrives. */
      onRequest?: () => void;
    } = {},
  ) {}

  transport = async (delivery: Delivery): Promise<Answer> => {
    const now = this.clock.now();
    this.received.push({ at: now, delivery });
    this.options.onRequest?.();
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.options.latencyMs) await this.clock.sleep(this.options.latencyMs);
      const forced = this.options.answer?.(delivery, now);
      if (forced) return forced;
      if (this.options.downUntil !== undefined && now < this.options.downUntil) {
        this.unavailable += 1;
        return UNAVAILABLE;
      }
      const duplicate = !this.options.naive && this.seen.has(delivery.eventId);
      this.seen.add(delivery.eventId);
      return answer(200, { status: duplicate ? 'duplicate' : 'accepted', eventId: delivery.eventId });
    } finally {
      this.inFlight -= 1;
    }
  };

  of(eventId: string): Received[] {
    return this.received.filter((r) => r.delivery.eventId === eventId);
  }
}

interface Setup {
  provider?: RemoteProvider;
  schedule?: ScheduleName;
  events?: number;
  duplicates?: number;
  outOfOrder?: number;
  copies?: number;
  concurrency?: number;
  timeScale?: number;
  secrets?: string[];
  seed?: number;
  /** Adyen: events a delivery carries. */
  batch?: number;
  merchant?: string;
  service?: ConstructorParameters<typeof FakeService>[1];
}

function setup(s: Setup = {}) {
  const provider = s.provider ?? 'factuarea';
  const clock = new VirtualClock();
  const service = new FakeService(clock, s.service);
  const random = seededRandom(s.seed ?? 1);
  const payments = planRun({ provider, events: s.events ?? 9, duplicates: s.duplicates ?? 0, outOfOrder: s.outOfOrder ?? 0, batch: s.batch, merchant: s.merchant }, random);
  const simulation = new Simulation(
    {
      provider,
      url: 'http://service.test/webhooks/main',
      secrets: s.secrets ?? ['whsec_current'],
      schedule: SCHEDULES[s.schedule ?? provider],
      timeScale: s.timeScale ?? 1,
      copies: s.copies ?? 1,
      concurrency: s.concurrency ?? 8,
      payments,
    },
    { transport: service.transport, clock },
  );
  const run = () => clock.drive(simulation.run());
  return { clock, service, payments, simulation, run };
}

const gaps = (received: Received[]) => received.slice(1).map((r, i) => r.at - received[i].at);
const allEvents = (payments: PlannedPayment[]) => payments.flatMap((p) => p.events);

describe('Simulation (the provider played against a receiver)', () => {
  it('Factuarea against a receiver down for its first minute: every event retried on the schedule, then accepted exactly once', async () => {
    const { service, payments, run } = setup({ events: 9, service: { downUntil: T0 + MIN } });
    const report = await run();

    expect(totals(report)).toMatchObject({ events: 9, sent: 9, accepted: 9, acceptedMoreThanOnce: 0, gaveUp: 0, giveUps: 0, unfinished: 0 });
    expect(report.answers['503 unavailable']).toBe(service.unavailable);
    expect(service.unavailable).toBeGreaterThanOrEqual(9);
    expect(report.answers['200 accepted']).toBe(9);
    expect(report.retries).toBe(report.attempts - 9);
    expect(report.requests).toBe(service.received.length);
    for (const event of allEvents(payments)) {
      const tries = service.of(event.eventId);
      expect(tries.at(-1)!.at).toBeGreaterThanOrEqual(T0 + MIN);
      // Each wait is the schedule's for that attempt, ±10 %.
      gaps(tries).forEach((gap, i) => {
        expect(gap).toBeGreaterThanOrEqual(SCHEDULES.factuarea.waitsMs[i] * 0.9);
        expect(gap).toBeLessThanOrEqual(SCHEDULES.factuarea.waitsMs[i] * 1.1);
      });
    }
    expect(failure(report)).toBeUndefined();
  });

  it('Paymos against a receiver that never answers 2xx: 11 attempts 1 min to 8 h apart, 16.3 h in all, then a give-up', async () => {
    const { service, payments, run } = setup({ provider: 'paymos', events: 1, service: { downUntil: Infinity } });
    const report = await run();

    const tries = service.of(payments[0].events[0].eventId);
    expect(tries).toHaveLength(11);
    expect(gaps(tries)).toEqual([1, 2, 5, 10, 20, 40, 60, 120, 240, 480].map((m) => m * MIN));
    expect(tries.at(-1)!.at - T0).toBe(978 * MIN);
    expect(report.giveUps).toEqual([
      { eventId: payments[0].events[0].eventId, type: 'invoice.paid', delivery: 'first', attempts: 11, lastAnswer: '503 unavailable', reason: 'schedule_exhausted' },
    ]);
    expect(totals(report)).toMatchObject({ gaveUp: 1, accepted: 0, retries: 10 });
    expect(failure(report)).toBe('simulate: 1 delivery gave up (1× 503 unavailable)');
  });

  it("a proxy that answers 200 itself (not the service's answer): acknowledged, yet a failure that says the events are lost", async () => {
    const { run } = setup({ events: 3, service: { answer: () => answer(200, { ok: true }) } });
    const report = await run();
    expect(totals(report)).toMatchObject({ events: 3, accepted: 0, acknowledgedOtherwise: 3, gaveUp: 0 });
    expect(failure(report)).toBe(
      "simulate: 3 event(s) acknowledged with a 2xx that is not the service's answer (neither accepted nor duplicate): " +
        'something in front of the service answers for it, and a provider would never send those events again',
    );
  });

  it('orders not fulfilled after every event was acknowledged (events rejected, say): a failure naming one', async () => {
    const { run } = setup({ events: 3 });
    const report = await run();
    expect(failure(report)).toBeUndefined();
    const orders = { total: 1, fulfilled: 0, notFulfilled: [{ id: 'ord_1', status: 'awaiting_payment' }], waitedMs: 30_000 };
    expect(failure(report, orders)).toBe(
      'simulate: 1 of 1 orders not fulfilled within 30 s (order ord_1 is awaiting_payment): look at the archive, ' +
        'GET /admin/webhook-deliveries?status=rejected or ?status=unmatched',
    );
    expect(failure(report, { ...orders, fulfilled: 1, notFulfilled: [] })).toBeUndefined();
  });

  it('the time scale divides every wait: Paymos at 120× is over in 8.15 min', async () => {
    const { service, run } = setup({ provider: 'paymos', events: 1, timeScale: 120, service: { downUntil: Infinity } });
    await run();
    expect(gaps(service.received)).toEqual([1, 2, 5, 10, 20, 40, 60, 120, 240, 480].map((m) => (m * MIN) / 120));
    expect(service.received.at(-1)!.at - T0).toBe((978 * MIN) / 120);
  });

  it("a seed fixes each event's waits, whatever order the answers come in", async () => {
    /** The waits of each event (by its place in the plan) when event i takes latencyOf(i) ms to be answered. */
    const waitsOf = async (latencyOf: (index: number) => number): Promise<number[][]> => {
      const clock = new VirtualClock();
      const events = allEvents(planRun({ provider: 'factuarea', events: 6, duplicates: 0, outOfOrder: 0 }, seededRandom(11)));
      const sentAt = events.map((): number[] => []);
      const transport = async (d: Delivery): Promise<Answer> => {
        const i = events.findIndex((e) => e.eventId === d.eventId);
        sentAt[i].push(clock.now());
        await clock.sleep(latencyOf(i));
        return UNAVAILABLE;
      };
      const payments = [{ resourceId: 'r', reversed: false, events }];
      const plan = { provider: 'factuarea' as const, url: 'http://x/webhooks/e', secrets: ['s'], schedule: SCHEDULES.factuarea, timeScale: 1, copies: 1, concurrency: 8, payments };
      await clock.drive(new Simulation(plan, { transport, clock }).run());
      return sentAt.map((times, i) => gaps(times.map((at) => ({ at }) as Received)).map((gap) => gap - latencyOf(i)));
    };
    const inOrder = await waitsOf(() => 1);
    const otherOrder = await waitsOf((i) => ((i * 5) % 6) * 1_000 + 1);
    expect(inOrder.map((w) => w.length)).toEqual([7, 7, 7, 7, 7, 7]);
    expect(otherOrder).toEqual(inOrder);
    expect(new Set(inOrder.map((w) => w[0])).size).toBe(6);
  });

  it('Factuarea stops at once on a 401 (not retried): one attempt per event, every event a give-up', async () => {
    const { service, run } = setup({ events: 6, service: { answer: () => answer(401, { error: 'invalid_signature' }) } });
    const report = await run();
    expect(service.received).toHaveLength(6);
    expect(totals(report)).toMatchObject({ sent: 6, gaveUp: 6, giveUps: 6, retries: 0, accepted: 0 });
    expect(report.giveUps.every((g) => g.attempts === 1 && g.reason === 'not_retried' && g.lastAnswer === '401 invalid_signature')).toBe(true);
    expect(report.answers).toEqual({ '401 invalid_signature': 6 });
    expect(failure(report)).toBe('simulate: 6 deliveries gave up (6× 401 invalid_signature)');
  });

  it('Factuarea retries 429 and no answer; Stripe retries a 401 too', async () => {
    let n = 0;
    const flaky = () => [answer(429, { error: 'rate_limited' }), { status: 0, error: 'timeout', cause: 'no answer within 10000 ms', ms: 10_000 } as Answer][n++];
    const f = setup({ events: 1, service: { answer: flaky } });
    const report = await f.run();
    expect(f.service.received).toHaveLength(3);
    expect(report.answers).toEqual({ '200 accepted': 1, '429 rate_limited': 1, timeout: 1 });

    let m = 0;
    const s = setup({ provider: 'stripe', events: 1, service: { answer: () => (m++ < 2 ? answer(401, { error: 'invalid_signature' }) : undefined) } });
    expect(totals(await s.run())).toMatchObject({ accepted: 1, retries: 2, giveUps: 0 });
  });

  it('no answer: a failed connection is counted with its cause, a timeout as a timeout; a give-up names both', async () => {
    const { run } = setup({ events: 1, service: { answer: () => ({ status: 0, error: 'connection', cause: 'ECONNREFUSED', ms: 1 }) } });
    const report = await run();
    expect(report.giveUps[0]).toMatchObject({ attempts: 8, lastAnswer: 'connection (ECONNREFUSED)', reason: 'schedule_exhausted' });
    expect(report.answers).toEqual({ 'connection (ECONNREFUSED)': 8 });

    const slow = setup({ events: 1, service: { answer: () => ({ status: 0, error: 'timeout', cause: 'no answer within 10000 ms', ms: 10_000 }) } });
    const late = await slow.run();
    expect(late.answers).toEqual({ timeout: 8 });
    expect(late.giveUps[0].lastAnswer).toBe('timeout (no answer within 10000 ms)');
  });

  it("every attempt signs again with the clock's time, over the same bytes, the same event id and delivery id; every secret signs", async () => {
    const secrets = ['whsec_new', 'whsec_old'];
    const { service, payments, run } = setup({ events: 3, secrets, service: { downUntil: T0 + 10 * MIN } });
    await run();
    for (const event of allEvents(payments)) {
      const tries = service.of(event.eventId);
      expect(tries.length).toBeGreaterThanOrEqual(3);
      const timestamps = new Set<string>();
      for (const { at, delivery } of tries) {
        expect(delivery.body).toBe(event.body);
        expect(delivery.headers['factuarea-event-id']).toBe(event.eventId);
        expect(delivery.headers['factuarea-delivery-id']).toBe(event.deliveryId);
        const [t, ...v1] = delivery.headers['factuarea-signature'].split(',');
        expect(t).toBe(`t=${Math.floor(at / 1000)}`);
        const ts = t.slice(2);
        expect(v1).toEqual(secrets.map((s) => `v1=${createHmac('sha256', s).update(`${ts}.${event.body}`).digest('hex')}`));
        timestamps.add(ts);
      }
      expect(timestamps.size).toBe(tries.length);
    }
    const deliveryIds = allEvents(payments).map((e) => e.deliveryId);
    expect(new Set(deliveryIds).size).toBe(3);
  });

  it('duplicates: the share asked is sent again once acknowledged, within the first wait, and answered duplicate', async () => {
    const { service, payments, run } = setup({ events: 20, duplicates: 0.25 });
    const report = await run();
    const again = allEvents(payments).filter((e) => e.redeliver);
    expect(again).toHaveLength(5);
    expect(report.redeliveries).toBe(5);
    expect(report.answers).toEqual({ '200 accepted': 20, '200 duplicate': 5 });
    expect(totals(report)).toMatchObject({ sent: 20, accepted: 20, acceptedMoreThanOnce: 0, duplicateOnly: 0, redeliveries: 5, retries: 0 });
    for (const e of again) {
      const [first, second] = service.of(e.eventId);
      expect(second.delivery.body).toBe(first.delivery.body);
      expect(second.at - first.at).toBeLessThanOrEqual(SCHEDULES.factuarea.waitsMs[0]);
    }
    expect(report.events.filter((e) => e.redelivered).map((e) => e.eventId).sort()).toEqual(again.map((e) => e.eventId).sort());
  });

  it('a receiver that answers accepted twice for one event id is caught: counted, named, and the run fails', async () => {
    const { payments, run } = setup({ events: 10, duplicates: 0.2, service: { naive: true } });
    const report = await run();
    expect(totals(report)).toMatchObject({ accepted: 10, acceptedMoreThanOnce: 2, giveUps: 0 });
    expect(failure(report)).toBe('simulate: the service answered accepted more than once for 2 event(s): a broken deduplication');
    const lines = formatSummary(runInfo(), report);
    expect(lines).toContain('accepted more than once: 2  <- SERVICE BUG: an event id must be accepted once');
    for (const e of allEvents(payments).filter((x) => x.redeliver)) expect(lines).toContain(`  accepted 2 times: ${e.eventId} (${e.type})`);
  });

  it('an event acknowledged only as duplicate (its first answer lost) is not a failure, and is counted apart', async () => {
    let first = true;
    const { service, run } = setup({
      events: 1,
      service: {
        answer: (d) => {
          if (!first) return undefined;
          first = false;
          service.seen.add(d.eventId); // recorded, but the answer never came back
          return { status: 0, error: 'timeout', ms: 10_000 };
        },
      },
    });
    const report = await run();
    expect(totals(report)).toMatchObject({ accepted: 0, duplicateOnly: 1, gaveUp: 0 });
    expect(failure(report)).toBeUndefined();
  });

  it('copies: the first attempt goes as k copies at once (one accepted, the others duplicate); retries go alone', async () => {
    const { service, payments, run } = setup({ events: 3, copies: 3, concurrency: 3, service: { latencyMs: 50, downUntil: T0 + 1_000 } });
    const report = await run();
    for (const e of allEvents(payments)) {
      const tries = service.of(e.eventId);
      expect(tries.slice(0, 3).map((r) => r.at)).toEqual([tries[0].at, tries[0].at, tries[0].at]);
      expect(tries).toHaveLength(4);
    }
    expect(service.maxInFlight).toBe(3);
    expect(report.answers).toEqual({ '200 accepted': 3, '503 unavailable': 9 });
    expect(totals(report)).toMatchObject({ requests: 12, attempts: 6, retries: 3, accepted: 3, acceptedMoreThanOnce: 0 });

    const ok = setup({ events: 3, copies: 4, concurrency: 4, service: { latencyMs: 5 } });
    const r = await ok.run();
    expect(r.answers).toEqual({ '200 accepted': 3, '200 duplicate': 9 });
    expect(totals(r).acceptedMoreThanOnce).toBe(0);
  });

  it('concurrency bounds the requests in flight only: retries waiting hold no slot', async () => {
    let maxWaiting = 0;
    const onRequest = () => (maxWaiting = Math.max(maxWaiting, simulation.progress().waiting));
    const { service, simulation, run } = setup({ events: 60, concurrency: 4, service: { latencyMs: 20, downUntil: T0 + 2 * MIN, onRequest } });
    const report = await run();
    expect(service.maxInFlight).toBe(4);
    expect(maxWaiting).toBeGreaterThan(4);
    expect(totals(report)).toMatchObject({ accepted: 60, giveUps: 0 });
  });

  it("lifecycles: a payment's next event goes once the previous one's first attempt is answered; reversed ones last first", async () => {
    const inOrder = setup({ provider: 'standard', events: 6, service: { latencyMs: 10 } });
    await inOrder.run();
    for (const p of inOrder.payments) {
      const firsts = p.events.map((e) => inOrder.service.of(e.eventId)[0].at);
      expect(p.events.map((e) => e.type)).toEqual(['payment.pending', 'payment.processing', 'payment.succeeded']);
      expect(gaps(firsts.map((at) => ({ at }) as Received))).toEqual([10, 10]);
    }

    const reversed = setup({ provider: 'standard', events: 6, outOfOrder: 1, service: { latencyMs: 10 } });
    await reversed.run();
    for (const p of reversed.payments) {
      expect(p.reversed).toBe(true);
      const sentOrder = [...reversed.service.received].filter((r) => p.events.some((e) => e.eventId === r.delivery.eventId));
      expect(sentOrder.map((r) => JSON.parse(r.delivery.body).type)).toEqual(['payment.succeeded', 'payment.processing', 'payment.pending']);
    }
  });

  it('a delivery retrying does not hold back the next event of its payment', async () => {
    const { service, payments, run } = setup({ events: 3, service: { answer: (d) => (d.eventId === payments[0].events[0].eventId && service.of(d.eventId).length < 3 ? UNAVAILABLE : undefined) } });
    await run();
    const [created, sent, paid] = payments[0].events.map((e) => service.of(e.eventId));
    expect(created).toHaveLength(3);
    expect(sent[0].at).toBe(T0);
    expect(paid[0].at).toBe(T0);
  });

  it('interrupted: nothing more is sent, no retry waits on; the unfinished are counted and the run fails', async () => {
    const onRequest = () => service.received.length === 12 && simulation.interrupt();
    const { service, simulation, run } = setup({ events: 9, concurrency: 2, service: { downUntil: Infinity, latencyMs: 5, onRequest } });
    const report = await run();
    // The 12th request interrupts as it arrives: it and the one in flight beside it are answered, nothing follows.
    expect(service.received).toHaveLength(12);
    expect(report.interrupted).toBe(true);
    const t = totals(report);
    expect(t.unfinished).toBe(9);
    expect(t.giveUps).toBe(0);
    expect(failure(report)).toBe('simulate: interrupted with 9 of 9 events unfinished');
  });
});

describe('planRun', () => {
  it.each([
    ['factuarea', 10, [3, 3, 3, 1]],
    ['factuarea', 9, [3, 3, 3]],
    ['paymos', 2, [2]],
    ['stripe', 10, [2, 2, 2, 2, 2]],
    ['standard', 1, [1]],
  ] as const)('%s, --events %i: whole lifecycles of distinct events, %j', (provider, events, lengths) => {
    const plan = planRun({ provider, events, duplicates: 0, outOfOrder: 0 }, seededRandom(3));
    expect(paymentCount(provider, events)).toBe(lengths.length);
    expect(plan.map((p) => p.events.length)).toEqual(lengths);
    const ids = allEvents(plan).map((e) => e.eventId);
    expect(new Set(ids).size).toBe(events);
    // Every payment ends paid, the one cut short included.
    for (const p of plan) expect(p.events.at(-1)!.kind).toBe('succeeded');
  });

  it('the bodies carry the order ids given (one per payment), the amount and the declared account', () => {
    const plan = planRun({ provider: 'factuarea', events: 6, duplicates: 0, outOfOrder: 0, merchant: 'acct_M', orderIds: ['o-1', 'o-2'] }, seededRandom(1));
    const bodies = allEvents(plan).map((e) => JSON.parse(e.body));
    expect(bodies.map((b) => b.data.object.metadata.order_id)).toEqual(['o-1', 'o-1', 'o-1', 'o-2', 'o-2', 'o-2']);
    expect(bodies.map((b) => b.type)).toEqual(['invoice.created', 'invoice.sent', 'invoice.paid', 'invoice.created', 'invoice.sent', 'invoice.paid']);
    expect(bodies.every((b) => b.data.object.total === '49.90' && b.data.object.currency === 'EUR' && b.account.id === 'acct_M')).toBe(true);
    expect(allEvents(plan).every((e) => e.body.startsWith('{\n  "id"'))).toBe(true);
  });

  it('without orders, each payment names a fresh order id; Factuarea alone has delivery ids', () => {
    const plan = planRun({ provider: 'paymos', events: 6, duplicates: 0, outOfOrder: 0 }, seededRandom(1));
    expect(new Set(plan.map((p) => p.orderId)).size).toBe(2);
    expect(allEvents(plan).every((e) => e.deliveryId === undefined)).toBe(true);
  });

  it('shares are rounded; the same seed picks the same events and lifecycles, with fresh ids each time', () => {
    const shape = (plan: PlannedPayment[]) => plan.map((p) => [p.reversed, p.events.map((e) => e.redeliver)]);
    const a = planRun({ provider: 'factuarea', events: 30, duplicates: 0.33, outOfOrder: 0.5 }, seededRandom(9));
    const b = planRun({ provider: 'factuarea', events: 30, duplicates: 0.33, outOfOrder: 0.5 }, seededRandom(9));
    expect(allEvents(a).filter((e) => e.redeliver)).toHaveLength(10);
    expect(a.filter((p) => p.reversed)).toHaveLength(5);
    expect(shape(b)).toEqual(shape(a));
    expect(allEvents(b).map((e) => e.eventId)).not.toEqual(allEvents(a).map((e) => e.eventId));
    expect(shape(planRun({ provider: 'factuarea', events: 30, duplicates: 0.33, outOfOrder: 0.5 }, seededRandom(10)))).not.toEqual(shape(a));
  });

  it('a lifecycle of one event is never counted as reversed', () => {
    const plan = planRun({ provider: 'factuarea', events: 4, duplicates: 0, outOfOrder: 1 }, seededRandom(1));
    expect(plan.map((p) => p.reversed)).toEqual([true, false]);
  });
});

describe('parseSimulateArgs', () => {
  const REQUIRED = ['--url', 'http://127.0.0.1:3000/pay', '--endpoint', 'fac-main', '--provider', 'factuarea', '--secret', 'whsec_SeCrEt1'];

  function exitOf(args: string[]): CliExit {
    try {
      parseSimulateArgs(args);
    } catch (err) {
      if (err instanceof CliExit) return err;
      throw err;
    }
    throw new Error('no CliExit');
  }

  it('the defaults', () => {
    const o = parseSimulateArgs(REQUIRED);
    expect({ ...o, seed: undefined }).toEqual({
      url: 'http://127.0.0.1:3000/pay',
      endpoint: 'fac-main',
      provider: 'factuarea',
      secrets: ['whsec_SeCrEt1'],
      events: 10,
      batch: 1,
      duplicates: 0,
      copies: 1,
      outOfOrder: 0,
      concurrency: 8,
      schedule: 'factuarea',
      timeScale: 1,
      timeoutMs: 10_000,
      merchant: undefined,
      adminToken: undefined,
      adminUrl: 'http://127.0.0.1:3000/pay',
      waitMs: 30_000,
      seed: undefined,
      json: false,
      payloadStyle: 'snapshot',
    });
    expect(Number.isInteger(o.seed)).toBe(true);
  });

  it('every option', () => {
    const o = parseSimulateArgs([
      ...REQUIRED,
      ...['--secret', 'whsec_old', '--events', '40', '--duplicates', '0.25', '--copies', '3', '--out-of-order', '.5', '--concurrency', '16'],
      ...['--schedule', 'paymos', '--time-scale', '120', '--timeout', '2500', '--merchant', 'acct_1', '--admin-token', 'adm-token-1'],
      ...['--admin-url', 'http://10.0.0.2:3000', '--seed', '42', '--json'],
    ]);
    expect(o).toMatchObject({
      secrets: ['whsec_SeCrEt1', 'whsec_old'],
      events: 40,
      duplicates: 0.25,
      copies: 3,
      outOfOrder: 0.5,
      concurrency: 16,
      schedule: 'paymos',
      timeScale: 120,
      timeoutMs: 2500,
      merchant: 'acct_1',
      adminToken: 'adm-token-1',
      adminUrl: 'http://10.0.0.2:3000',
      seed: 42,
      json: true,
    });
  });

  it('missing required options: exit 2, the reason, then the usage', () => {
    const e = exitOf(['--url', 'http://x']);
    expect(e.code).toBe(EXIT.couldNotRun);
    expect(e.message.split('\n')[0]).toBe('simulate: --endpoint, --provider, --secret (or --secret-file) required');
    expect(e.message).toContain('usage: payment-webhooks simulate');
  });

  it.each([
    [['--events', '0'], 'simulate: --events must be a whole number from 1 to 100000, got "0"'],
    [['--events', '1e3'], 'simulate: --events must be a whole number from 1 to 100000, got "1e3"'],
    [['--events', 'ten'], 'simulate: --events must be a whole number from 1 to 100000, got "ten"'],
    [['--duplicates', '1.5'], 'simulate: --duplicates must be a ratio from 0 to 1, got "1.5"'],
    [['--duplicates=-0.1'], 'simulate: --duplicates must be a ratio from 0 to 1, got "-0.1"'],
    [['--out-of-order', 'half'], 'simulate: --out-of-order must be a ratio from 0 to 1, got "half"'],
    [['--time-scale', '0'], 'simulate: --time-scale must be a positive number, got "0"'],
    [['--time-scale=-5'], 'simulate: --time-scale must be a positive number, got "-5"'],
    [['--time-scale', 'fast'], 'simulate: --time-scale must be a positive number, got "fast"'],
    [['--concurrency', '0'], 'simulate: --concurrency must be a whole number from 1 to 10000, got "0"'],
    [['--copies', '9'], 'simulate: --copies (9) must not exceed --concurrency (8): the copies are sent at once'],
    [['--timeout', '0'], 'simulate: --timeout must be a whole number from 1 to 2147483647, got "0"'],
    [['--schedule', 'mollie'], 'simulate: --schedule must be one of paymos, factuarea, stripe, standard, adyen, paypal, checkout, square, paddle, got "mollie"'],
    [['--seed=-1'], 'simulate: --seed must be a whole number from 0 to 4294967295, got "-1"'],
    [['--admin-url', 'http://10.0.0.2'], 'simulate: --admin-url needs --admin-token or ADMIN_TOKEN'],
    [['--wait', '5'], 'simulate: --wait needs --admin-token or ADMIN_TOKEN (it bounds the wait for the orders)'],
    [['--admin-token', ''], 'simulate: --admin-token must not be empty'],
  ])('%j: exit 2 with one line', (extra, message) => {
    const e = exitOf([...REQUIRED, ...extra]);
    expect({ code: e.code, message: e.message }).toEqual({ code: EXIT.couldNotRun, message });
  });

  it.each([
    [['--url', 'ftp://host', '--endpoint', 'e', '--provider', 'paymos', '--secret', 's'], 'simulate: --url must be an http(s) URL, e.g. http://127.0.0.1:3000'],
    [['--url', 'localhost:3000', '--endpoint', 'e', '--provider', 'paymos', '--secret', 's'], 'simulate: --url must be an http(s) URL, e.g. http://127.0.0.1:3000'],
    [['--url', 'http://h/?x=1', '--endpoint', 'e', '--provider', 'paymos', '--secret', 's'], 'simulate: --url must be a base URL, without a query or fragment'],
    [['--url', 'http://u:hunter2@h', '--endpoint', 'e', '--provider', 'paymos', '--secret', 's'], 'simulate: --url must not carry a user name or password'],
    [['--url', 'http://h', '--endpoint', 'e', '--provider', 'paymos', '--secret', 's', '--admin-token', 'tok', '--admin-url', 'http://u:p@h'], 'simulate: --admin-url must not carry a user name or password'],
    [['--url', 'http://h', '--endpoint', 'e', '--provider', 'braintree', '--secret', 's'], 'simulate: --provider must be one of paymos, factuarea, stripe, standard, adyen, paypal, checkout, square, paddle, got "braintree"'],
    [
      ['--url', 'http://h', '--endpoint', 'e', '--provider', 'mollie', '--secret', 's'],
      "simulate: --provider mollie cannot be played: a Mollie delivery is an unsigned hint, authenticated by the service fetching the payment from Mollie's API, which no sender but Mollie can answer; see docs/going-live.md#mollie-check-it-with-mollie-itself",
    ],
    [['--url', 'http://h', '--endpoint', 'e', '--provider', 'adyen', '--secret', 's', '--merchant', 'M'], 'simulate: --secret of an adyen endpoint must be the hex HMAC key the Customer Area shows (an even number of hex digits)'],
    [['--url', 'http://h', '--endpoint', 'e', '--provider', 'adyen', '--secret', 'ABCD'], "simulate: --provider adyen needs --merchant <merchantAccountCode>: every item declares its merchant account (the endpoint's merchantAccountId)"],
    [['--url', 'http://h', '--endpoint', 'e', '--provider', 'stripe', '--secret', 's', '--batch', '2'], 'simulate: --batch applies to adyen only: the other providers send one event a delivery'],
    [['--url', 'http://h', '--endpoint', 'e', '--provider', 'adyen', '--secret', 'ABCD', '--merchant', 'M', '--batch', '101'], 'simulate: --batch must be a whole number from 1 to 100, got "101"'],
    [['--url', 'http://h', '--endpoint', 'e', '--provider', 'paymos', '--secret', 's', '--merchant', 'm'], 'simulate: --merchant does not apply to paymos: its bodies declare no account'],
    [['--url', 'http://h', '--endpoint', 'e', '--provider', 'standard', '--secret', 'not-base64!'], 'simulate: --secret of a standard endpoint must be whsec_ or whsk_ followed by base64 (Standard Webhooks signs with the decoded key: whsec_ v1, whsk_ v1a)'],
  ])('%j: exit 2 with one line, never the secret', (args, message) => {
    const e = exitOf(args);
    expect({ code: e.code, message: e.message }).toEqual({ code: EXIT.couldNotRun, message });
  });

  describe('the secrets from --secret-file, the token from ADMIN_TOKEN (off the command line)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pw-simulate-'));
    const BASE = ['--url', 'http://127.0.0.1:3000/pay', '--endpoint', 'fac-main', '--provider', 'factuarea'];
    const secretFile = (text: string) => {
      const path = join(dir, `secrets-${randomUUID()}`);
      writeFileSync(path, text, { mode: 0o600 });
      return path;
    };

    it('--secret-file with a rotation signs with both, the first line first; ADMIN_TOKEN creates the orders', () => {
      const o = parseSimulateArgs([...BASE, '--secret-file', secretFile('whsec_new\r\nwhsec_old\r\n'), '--wait', '5'], { ADMIN_TOKEN: 'adm-env-token' });
      expect(o).toMatchObject({ secrets: ['whsec_new', 'whsec_old'], adminToken: 'adm-env-token', waitMs: 5000 });
    });

    it('--admin-token wins over ADMIN_TOKEN; an empty ADMIN_TOKEN is none (events name random order ids)', () => {
      expect(parseSimulateArgs([...REQUIRED, '--admin-token', 'adm-arg'], { ADMIN_TOKEN: 'adm-env' }).adminToken).toBe('adm-arg');
      expect(parseSimulateArgs(REQUIRED, { ADMIN_TOKEN: '' }).adminToken).toBeUndefined();
      expect(parseSimulateArgs(REQUIRED).adminToken).toBeUndefined();
    });

    it('--admin-url with ADMIN_TOKEN: the orders are created there', () => {
      expect(parseSimulateArgs([...REQUIRED, '--admin-url', 'http://10.0.0.2:3000'], { ADMIN_TOKEN: 'adm-env' }).adminUrl).toBe('http://10.0.0.2:3000');
    });

    it.each([
      [['--secret', 'whsec_SeCrEt1', '--secret-file', '/run/secrets/fac'], 'simulate: --secret and --secret-file together: give the secrets one way (--secret-file keeps them out of ps)'],
      [['--secret-file', '/nonexistent/fac'], 'simulate: --secret-file "/nonexistent/fac": cannot read it (no such file)'],
    ])('%j: exit 2 with one line, never the secret', (extra, message) => {
      const e = exitOf([...BASE, ...extra]);
      expect({ code: e.code, message: e.message }).toEqual({ code: EXIT.couldNotRun, message });
    });

    it('an empty file, a control character in a line, a token with a newline: exit 2 naming the source, never a value', () => {
      const empty = secretFile('\n# none yet\n');
      expect(exitOf([...BASE, '--secret-file', empty]).message).toBe(`simulate: --secret-file "${empty}" holds no secret (one a line; blank lines and # comments are skipped)`);
      const controlled = secretFile('whsec_\u001bSeCrEt\n');
      const e = exitOf([...BASE, '--secret-file', controlled]);
      expect(e.message).toBe(`simulate: --secret-file "${controlled}": line 1 must not contain control characters`);
      expect(e.message).not.toContain('SeCrEt');
      expect(() => parseSimulateArgs(REQUIRED, { ADMIN_TOKEN: 'adm-SeCrEt-token\n' })).toThrow(
        new CliExit(EXIT.couldNotRun, 'simulate: ADMIN_TOKEN must not contain control characters (a trailing newline from a file?)'),
      );
    });

    it('a standard endpoint: every secret of the file must be whsec_ and base64', () => {
      const path = secretFile('whsec_c2VjcmV0\nnot-base64!\n');
      const e = exitOf(['--url', 'http://h', '--endpoint', 'e', '--provider', 'standard', '--secret-file', path]);
      expect(e.message).toBe('simulate: --secret-file: each secret of a standard endpoint must be whsec_ or whsk_ followed by base64 (Standard Webhooks signs with the decoded key: whsec_ v1, whsk_ v1a)');
    });

    it('the usage shows --secret-file first, and ADMIN_TOKEN', () => {
      const usage = exitOf(['--url', 'http://x']).message;
      expect(usage).toContain('--secret-file <path> | --secret <s>');
      expect(usage).toContain('ADMIN_TOKEN from the environment');
    });
  });

  it('an unknown option: exit 2 (strict parsing)', () => {
    const e = exitOf([...REQUIRED, '--retries', '3']);
    expect(e.code).toBe(EXIT.couldNotRun);
    expect(e.message.split('\n')[0]).toMatch(/^simulate: Unknown option '--retries'/);
  });
});

function runInfo(over: Partial<RunInfo> = {}): RunInfo {
  return {
    provider: 'factuarea',
    endpoint: 'fac-main',
    url: 'http://127.0.0.1:3000/pay',
    schedule: 'factuarea',
    timeScale: 120,
    seed: 7,
    copies: 1,
    concurrency: 8,
    orders: [],
    ...over,
  };
}

describe('the summary', () => {
  async function reportOf(s: Setup): Promise<SimulationReport> {
    return setup(s).run();
  }

  it('answers by status, attempts, retries, give-ups named with their last answer; never a secret', async () => {
    const report = await reportOf({ events: 3, secrets: ['whsec_TopSecret'], service: { answer: () => answer(401, { error: 'invalid_signature' }) } });
    const lines = formatSummary(runInfo(), report);
    expect(lines.slice(0, 2)).toEqual([
      'simulate factuarea → http://127.0.0.1:3000/pay/webhooks/fac-main',
      'schedule factuarea (8 attempts), time scale 120, seed 7, concurrency 8, copies 1',
    ]);
    expect(lines).toContain('events: 3 sent of 3, 0 accepted, 0 acknowledged as duplicate only, 0 acknowledged otherwise, 3 gave up');
    expect(lines).toContain('accepted more than once: 0');
    expect(lines).toContain('requests: 3 (3 attempts, 0 retries, 0 redeliveries)');
    expect(lines).toContain('  401 invalid_signature: 3');
    expect(lines).toContain('give-ups: 3');
    for (const g of report.giveUps) expect(lines).toContain(`  gave up: ${g.eventId} (${g.type}) after 1 attempt(s): 401 invalid_signature (not retried)`);
    const json = JSON.stringify(summaryJson(runInfo(), report));
    for (const text of [lines.join('\n'), json]) expect(text).not.toContain('TopSecret');
  });

  it('the JSON summary: totals, answers, give-ups, orders and every event', async () => {
    const report = await reportOf({ events: 4, duplicates: 0.5, service: { downUntil: T0 + 1 } });
    const json = summaryJson(runInfo({ orders: ['o1', 'o2'] }), report) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(json.totals).toEqual({
      events: 4,
      sent: 4,
      accepted: 4,
      acceptedMoreThanOnce: 0,
      duplicateOnly: 0,
      acknowledgedOtherwise: 0,
      gaveUp: 0,
      unfinished: 0,
      requests: 10,
      attempts: 10,
      retries: 4,
      redeliveries: 2,
      giveUps: 0,
    });
    expect(json.answers).toEqual({ '200 accepted': 4, '200 duplicate': 2, '503 unavailable': 4 });
    expect(json.orders).toEqual(['o1', 'o2']);
    expect(json.run).toEqual({ provider: 'factuarea', endpoint: 'fac-main', url: 'http://127.0.0.1:3000/pay', schedule: 'factuarea', timeScale: 120, seed: 7, copies: 1, concurrency: 8 });
    expect(json.events).toHaveLength(4);
    expect(json.events[0]).toMatchObject({ state: 'acknowledged', attempts: 2, accepted: 1 });
  });

  it('the progress line', () => {
    const answers = { '200 accepted': 12, '401 invalid_signature': 1, '503 unavailable': 20 };
    expect(formatProgress({ events: 20, sent: 18, acknowledged: 12, gaveUp: 1, waiting: 4, toRedeliver: 2, inFlight: 1, requests: 33, elapsedMs: 2_500, answers })).toBe(
      'simulate: 12/20 events acknowledged, 1 gave up, 5 pending (4 waiting to retry, 1 in flight), 2 to be sent again, 33 requests, 2.5 s; 200 accepted: 12, 401 invalid_signature: 1, 503 unavailable: 20',
    );
    expect(formatProgress({ events: 20, sent: 0, acknowledged: 0, gaveUp: 0, waiting: 0, toRedeliver: 0, inFlight: 0, requests: 0, elapsedMs: 900, answers: {} })).toBe(
      'simulate: 0/20 events acknowledged, 0 gave up, 0 pending (0 waiting to retry, 0 in flight), 0 requests, 900 ms',
    );
  });
});

describe('ProgressLine', () => {
  function line(tty: boolean) {
    let now = 0;
    const written: string[] = [];
    const progress = new ProgressLine((t) => written.push(t), tty, () => now);
    return { written, progress, at: (ms: number) => (now = ms) };
  }

  it('on a terminal: redrawn in place, at most once a second, cleared at the end', () => {
    const { written, progress, at } = line(true);
    for (const t of [200, 999, 1_000, 1_500, 2_100, 2_200]) {
      at(t);
      progress.tick(`at ${t}`);
    }
    progress.end();
    expect(written).toEqual(['\r\x1b[Kat 1000', '\r\x1b[Kat 2100', '\r\x1b[K']);
  });

  it('elsewhere (a log): a plain line every 5 s; nothing to clear', () => {
    const { written, progress, at } = line(false);
    for (let t = 1_000; t <= 12_000; t += 1_000) {
      at(t);
      progress.tick(`at ${t}`);
    }
    progress.end();
    expect(written).toEqual(['at 5000\n', 'at 10000\n']);
  });

  it('a run shorter than the first tick writes nothing', () => {
    const { written, progress } = line(true);
    progress.end();
    expect(written).toEqual([]);
  });
});

describe('simulate --provider adyen (items signed inside the body, answered [accepted])', () => {
  const KEY = 'A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F90';
  const ACCEPTED: Answer = { status: 200, text: '[accepted]', ms: 1 };
  /** Adyen's receiver: [accepted] once every item is recorded, new or not; counts each event id it records. */
  const adyenService = (recorded: Map<string, number>, downUntil = 0) => ({
    answer: (d: Delivery, now: number): Answer => {
      if (now < downUntil) return UNAVAILABLE;
      for (const id of d.eventIds ?? []) recorded.set(id, (recorded.get(id) ?? 0) + 1);
      return ACCEPTED;
    },
  });

  it('planRun: one AUTHORISATION per payment; --batch 2 puts two in a delivery (5 events: 2 + 2 + 1 items)', () => {
    const single = planRun({ provider: 'adyen', events: 5, duplicates: 0, outOfOrder: 1, merchant: 'ShopEU', orderIds: ['o1', 'o2', 'o3', 'o4', 'o5'] }, seededRandom(1));
    expect(paymentCount('adyen', 5)).toBe(5);
    expect(single.map((p) => p.events.length)).toEqual([1, 1, 1, 1, 1]);
    expect(single.every((p) => !p.reversed)).toBe(true);
    const plan = planRun({ provider: 'adyen', events: 5, duplicates: 0, outOfOrder: 0, merchant: 'ShopEU', orderIds: ['o1', 'o2', 'o3', 'o4', 'o5'], batch: 2 }, seededRandom(1));
    expect(plan.map((p) => p.events.length)).toEqual([1, 1, 1]);
    const deliveries = allEvents(plan);
    expect(deliveries.map((d) => d.items!.length)).toEqual([2, 2, 1]);
    const bodies = deliveries.map((d) => JSON.parse(d.body));
    expect(bodies[0].live).toBe('false');
    const items = bodies.flatMap((b) => b.notificationItems.map((e: { NotificationRequestItem: Record<string, unknown> }) => e.NotificationRequestItem));
    expect(items.map((i) => i.merchantReference)).toEqual(['o1', 'o2', 'o3', 'o4', 'o5']);
    expect(items.every((i) => i.eventCode === 'AUTHORISATION' && i.success === 'true' && i.merchantAccountCode === 'ShopEU')).toBe(true);
    expect(deliveries.flatMap((d) => d.items!.map((i) => i.eventId))).toEqual(items.map((i) => `${i.pspReference}:AUTHORISATION:true`));
    // Unsigned in the plan: each attempt's delivery signs the items.
    expect(items.every((i) => !(i.additionalData as Record<string, unknown>).hmacSignature)).toBe(true);
  });

  it('every delivery signed and answered [accepted]: every event accepted, each recorded once; retried on the Adyen schedule', async () => {
    const recorded = new Map<string, number>();
    const { run, service } = setup({ provider: 'adyen', events: 5, batch: 2, merchant: 'ShopEU', secrets: [KEY], service: adyenService(recorded, T0 + 1) });
    const report = await run();
    expect(service.received).toHaveLength(6);
    // The first attempt of each of the 3 deliveries was refused (503), the second 9 s later accepted.
    expect(gaps(service.received.filter((r) => r.delivery.eventIds![0] === service.received[0].delivery.eventIds![0]))).toEqual([9_000]);
    for (const r of service.received) {
      for (const item of JSON.parse(r.delivery.body).notificationItems) expect(item.NotificationRequestItem.additionalData.hmacSignature).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    }
    expect(totals(report)).toMatchObject({ events: 5, accepted: 5, acceptedMoreThanOnce: 0, acknowledgedOtherwise: 0, gaveUp: 0, attempts: 6, retries: 3 });
    expect(report.answers).toEqual({ '200 [accepted]': 3, '503 unavailable': 3 });
    expect([...recorded.values()]).toEqual([1, 1, 1, 1, 1]);
    expect(failure(report)).toBeUndefined();
  });

  it('a redelivery sends the whole delivery again, answered [accepted] again: not a second acceptance', async () => {
    const recorded = new Map<string, number>();
    const { run } = setup({ provider: 'adyen', events: 4, batch: 2, duplicates: 0.5, merchant: 'ShopEU', secrets: [KEY], service: adyenService(recorded) });
    const report = await run();
    expect(report.redeliveries).toBeGreaterThan(0);
    expect(report.events.filter((e) => e.redelivered).length).toBe(2 * report.redeliveries);
    expect(totals(report)).toMatchObject({ accepted: 4, acceptedMoreThanOnce: 0, duplicateOnly: 0 });
    expect(failure(report)).toBeUndefined();
  });

  it('a delivery of several items that gives up loses them all: counted per event, named in one give-up line', async () => {
    const { run } = setup({ provider: 'adyen', events: 3, batch: 3, merchant: 'ShopEU', secrets: [KEY], timeScale: 1_000_000, service: { answer: () => answer(401, { error: 'invalid_signature' }) } });
    const report = await run();
    expect(report.requests).toBe(100);
    expect(totals(report)).toMatchObject({ events: 3, gaveUp: 3, giveUps: 1 });
    const [g] = report.giveUps;
    expect(g).toMatchObject({ attempts: 100, reason: 'schedule_exhausted', lastAnswer: '401 invalid_signature', alsoLost: report.events.slice(1).map((e) => e.eventId) });
    expect(formatSummary(runInfo({ provider: 'adyen', schedule: 'adyen' }), report)).toContain(
      `  gave up: ${g.eventId} (AUTHORISATION, and 2 more of its delivery) after 100 attempt(s): 401 invalid_signature`,
    );
    expect(failure(report)).toBe('simulate: 1 delivery gave up (1× 401 invalid_signature)');
  });

  it("a 2xx that is not [accepted] (a proxy's JSON): acknowledged otherwise, a failure", async () => {
    const { run } = setup({ provider: 'adyen', events: 2, merchant: 'ShopEU', secrets: [KEY], service: { answer: () => answer(200, { ok: true }) } });
    const report = await run();
    expect(totals(report)).toMatchObject({ accepted: 0, acknowledgedOtherwise: 2 });
    expect(failure(report)).toMatch(/^simulate: 2 event\(s\) acknowledged with a 2xx that is not the service's answer/);
  });

  it('the summary reads [accepted] as the service\'s answer; recorded once is the archive\'s to say', async () => {
    const { run } = setup({ provider: 'adyen', events: 3, batch: 3, merchant: 'ShopEU', secrets: [KEY], service: adyenService(new Map()) });
    const report = await run();
    const info = runInfo({ provider: 'adyen', schedule: 'adyen' });
    const lines = formatSummary(info, report);
    expect(lines).toContain('schedule adyen (100 attempts), time scale 120, seed 7, concurrency 8, copies 1');
    expect(lines).toContain('events: 3 sent of 3, 3 accepted (2xx [accepted]), 0 acknowledged otherwise, 0 gave up');
    expect(lines).toContain("accepted more than once: not told by Adyen's answer ([accepted] for a new and a recorded delivery alike); with the admin token the archive is checked");
    expect(lines).toContain('  200 [accepted]: 1');
    const archive = { total: 3, recordedOnce: 1, missing: ['p1:AUTHORISATION:true'], many: [{ eventId: 'p2:AUTHORISATION:true', rows: 2 }] };
    expect(formatSummary(info, report, undefined, archive)).toContain('recorded once (archive): 1/3  <- SERVICE BUG: an event id must be recorded once');
    expect(failure(report, undefined, archive)).toBe(
      'simulate: 2 of 3 events not recorded exactly once: 1 acknowledged but not in the archive (p1:AUTHORISATION:true: something in front of the service answers for it, or the answer was lost), 1 recorded more than once (p2:AUTHORISATION:true: 2 rows, a broken deduplication)',
    );
    expect(summaryJson(info, report, undefined, { total: 3, recordedOnce: 3, missing: [], many: [] })).toMatchObject({ ok: true, recordedOnce: { recordedOnce: 3 } });
  });

  it('parseSimulateArgs: --batch, --merchant, the adyen schedule by default; the key never printed', () => {
    const o = parseSimulateArgs(['--url', 'http://h', '--endpoint', 'adyen-main', '--provider', 'adyen', '--secret', KEY, '--merchant', 'ShopEU', '--batch', '5']);
    expect(o).toMatchObject({ provider: 'adyen', secrets: [KEY], merchant: 'ShopEU', batch: 5, schedule: 'adyen' });
  });
});

describe('simulate --payload-style thin (Stripe thin notifications, the objects served by the kit)', () => {
  const STRIPE = ['--url', 'http://127.0.0.1:3000', '--endpoint', 'stripe-thin', '--provider', 'stripe', '--secret', 'whsec_thin'];
  const KEY = 'sk_test_SimThinKey_51NqZ8cQ2x7LmTt';
  const dir = mkdtempSync(join(tmpdir(), 'pw-simulate-thin-'));
  const keyFile = (text: string) => {
    const path = join(dir, `key-${randomUUID()}`);
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  };
  function exitOf(args: string[]): CliExit {
    try {
      parseSimulateArgs(args);
    } catch (err) {
      if (err instanceof CliExit) return err;
      throw err;
    }
    throw new Error('no CliExit');
  }

  it('parses: the style, the address to serve at, the key from its file; --wait allowed without the admin token', () => {
    const o = parseSimulateArgs([...STRIPE, '--payload-style', 'thin', '--serve-objects', '127.0.0.1:8787', '--stripe-api-key-file', keyFile(`# apiKey\n${KEY}\r\n`), '--wait', '12']);
    expect(o).toMatchObject({ payloadStyle: 'thin', serving: { address: { host: '127.0.0.1', port: 8787 }, apiKey: KEY }, waitMs: 12_000 });
    expect(parseSimulateArgs([...STRIPE, '--payload-style', 'thin', '--serve-objects', '[::1]:9000']).serving).toEqual({ address: { host: '::1', port: 9000 } });
    expect(parseSimulateArgs([...STRIPE, '--payload-style', 'snapshot'])).toMatchObject({ payloadStyle: 'snapshot' });
    expect(parseSimulateArgs(STRIPE).serving).toBeUndefined();
  });

  it.each([
    [['--payload-style', 'thin'], "simulate: --payload-style thin needs --serve-objects <host:port>: the service's thin endpoint reads the objects its notifications name there (its apiBaseUrl http://<host:port>)"],
    [['--payload-style', 'Thin'], 'simulate: --payload-style must be one of snapshot, thin, got "Thin"'],
    [['--serve-objects', '127.0.0.1:8787'], 'simulate: --serve-objects applies to --payload-style thin only'],
    [['--payload-style', 'snapshot', '--stripe-api-key-file', '/k'], 'simulate: --stripe-api-key-file applies to --payload-style thin only'],
    [['--payload-style', 'thin', '--serve-objects', '8787'], 'simulate: --serve-objects must be <host>:<port> (e.g. 127.0.0.1:8787, [::1]:8787; a port from 1 to 65535), got "8787"'],
    [['--payload-style', 'thin', '--serve-objects', '127.0.0.1:70000'], 'simulate: --serve-objects must be <host>:<port> (e.g. 127.0.0.1:8787, [::1]:8787; a port from 1 to 65535), got "127.0.0.1:70000"'],
    [['--payload-style', 'thin', '--serve-objects', '127.0.0.1:8787', '--stripe-api-key-file', '/k1', '--stripe-api-key-file', '/k2'], 'simulate: --stripe-api-key-file given more than once: one file holds the key'],
    [['--wait', '5'], 'simulate: --wait needs --admin-token or ADMIN_TOKEN (it bounds the wait for the orders), or --payload-style thin (the wait for the objects to be read)'],
  ])('stripe %j: exit 2 with one line', (extra, message) => {
    const e = exitOf([...STRIPE, ...extra]);
    expect({ code: e.code, message: e.message }).toEqual({ code: EXIT.couldNotRun, message });
  });

  it.each(['paymos', 'factuarea', 'standard'])('--payload-style with %s: exit 2, stripe only', (provider) => {
    const secret = provider === 'standard' ? 'whsec_c2VjcmV0' : 's';
    for (const style of ['thin', 'snapshot']) {
      const e = exitOf(['--url', 'http://h', '--endpoint', 'e', '--provider', provider, '--secret', secret, '--payload-style', style]);
      expect(e.message).toBe(`simulate: --payload-style applies to stripe only (thin event notifications are Stripe's), not ${provider}`);
    }
  });

  it('a key file that is empty or holds two keys: exit 2 naming the path, never a key', () => {
    const empty = keyFile('# nothing\n\n');
    expect(exitOf([...STRIPE, '--payload-style', 'thin', '--serve-objects', '127.0.0.1:8787', '--stripe-api-key-file', empty]).message).toBe(
      `simulate: --stripe-api-key-file "${empty}" holds no key (one a line; blank lines and # comments are skipped)`,
    );
    const two = keyFile(`${KEY}\nsk_test_other\n`);
    const e = exitOf([...STRIPE, '--payload-style', 'thin', '--serve-objects', '127.0.0.1:8787', '--stripe-api-key-file', two]);
    expect(e.message).toBe(`simulate: --stripe-api-key-file "${two}" holds 2 keys: one key, the endpoint's apiKey`);
    expect(e.message).not.toContain('sk_test');
  });

  it('the usage names the thin options', () => {
    expect(simulateCommand.usage).toContain('  --payload-style <style>  stripe: snapshot (default; events carry the object) or thin: the thin twin of each');
    expect(simulateCommand.usage).toContain('  --serve-objects <host:port>\n                           with thin, required:');
    expect(simulateCommand.usage).toContain('  --stripe-api-key-file <path>\n                           with thin:');
  });

  it('planRun thin: the thin twin of every event, a fresh evt_test_ id each, the object it names with its lifecycle rank', () => {
    const plan = planRun({ provider: 'stripe', events: 4, duplicates: 0, outOfOrder: 0, orderIds: ['o-1', 'o-2'], payloadStyle: 'thin' }, seededRandom(1));
    const events = allEvents(plan);
    expect(events.map((e) => e.type)).toEqual(['v1.payment_intent.processing', 'v1.payment_intent.succeeded', 'v1.payment_intent.processing', 'v1.payment_intent.succeeded']);
    expect(new Set(events.map((e) => e.eventId)).size).toBe(4);
    for (const [i, e] of events.entries()) {
      const body = JSON.parse(e.body);
      expect(e.eventId).toMatch(/^evt_test_[A-Za-z0-9]{24}$/);
      expect(body).toEqual({
        id: e.eventId,
        object: 'v2.core.event',
        type: e.type,
        livemode: false,
        created: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/),
        related_object: { id: e.resourceId, type: 'payment_intent', url: `/v1/payment_intents/${e.resourceId}` },
      });
      expect(e.served).toMatchObject({ path: `/v1/payment_intents/${e.resourceId}`, account: '', rank: i % 2 });
      expect(e.served!.object).toMatchObject({ id: e.resourceId, object: 'payment_intent', amount: 4990, metadata: { order_id: i < 2 ? 'o-1' : 'o-2' } });
    }
    expect(events.map((e) => e.served!.object.status)).toEqual(['processing', 'succeeded', 'processing', 'succeeded']);
    expect(events.map((e) => e.served!.object.amount_received)).toEqual([0, 4990, 0, 4990]);
  });

  it('planRun thin with --merchant: the connected account is the context, and the account the object is served under', () => {
    const plan = planRun({ provider: 'stripe', events: 2, duplicates: 0, outOfOrder: 0, merchant: 'acct_1Connected', payloadStyle: 'thin' }, seededRandom(1));
    for (const e of allEvents(plan)) {
      expect(JSON.parse(e.body).context).toBe('acct_1Connected');
      expect(e.served!.account).toBe('acct_1Connected');
    }
  });

  it('planRun snapshot: nothing served', () => {
    const plan = planRun({ provider: 'stripe', events: 2, duplicates: 0, outOfOrder: 0 }, seededRandom(1));
    expect(allEvents(plan).every((e) => e.served === undefined && JSON.parse(e.body).object === 'event')).toBe(true);
  });

  it('awaitObjectReads: done once each acknowledged notification was read; a notification not acknowledged is not waited for', async () => {
    const plan = planRun({ provider: 'stripe', events: 4, duplicates: 0, outOfOrder: 0, payloadStyle: 'thin' }, seededRandom(1));
    const events = allEvents(plan);
    const record = (eventId: string, accepted: number) => ({ eventId, type: '', resourceId: '', state: 'acknowledged' as const, attempts: 1, accepted, duplicate: 0, otherAcknowledged: 0, acceptedText: 0, redelivered: false });
    const report = { events: events.map((e, i) => record(e.eventId, i === 3 ? 0 : 1)) } as unknown as SimulationReport;
    const reads = new Map<string, number>([[events[0].served!.path, 2]]);
    const server = {
      url: 'http://127.0.0.1:8787',
      requests: [{ method: 'GET', path: events[0].served!.path, account: '', status: 200 }, { method: 'GET', path: events[0].served!.path, account: '', status: 200 }],
      fetches: (path: string) => reads.get(path) ?? 0,
      byStatus: () => ({ '200': 2 }),
    };
    // The second payment's first notification is unread: the wait ends at its bound, naming it.
    const waited = await awaitObjectReads(server, plan, report, 150, () => false);
    expect(waited).toMatchObject({ url: 'http://127.0.0.1:8787', notifications: 3, requests: 2, answers: { '200': 2 }, unread: [events[2].served!.path] });
    expect(formatObjects(waited)).toEqual([
      expect.stringMatching(/^objects served at http:\/\/127\.0\.0\.1:8787: 2 request\(s\) \(200: 2\) for 3 acknowledged notification\(s\) naming one; 1 object\(s\) not read within \d+ ms$/),
      `  not read: ${events[2].served!.path}`,
    ]);
    reads.set(events[2].served!.path, 1);
    const done = await awaitObjectReads(server, plan, report, 10_000, () => false);
    expect(done.unread).toEqual([]);
    expect(formatObjects(done)).toEqual(['objects served at http://127.0.0.1:8787: 2 request(s) (200: 2) for 3 acknowledged notification(s) naming one; each object read']);
  });

  it('awaitObjectReads with the archive: keeps serving while a read notification is still being processed (a retry reads again); names what is left at the bound', async () => {
    const plan = planRun({ provider: 'stripe', events: 2, duplicates: 0, outOfOrder: 0, payloadStyle: 'thin' }, seededRandom(3));
    const events = allEvents(plan);
    const report = { events: events.map((e) => ({ eventId: e.eventId, type: '', resourceId: '', state: 'acknowledged' as const, attempts: 1, accepted: 1, duplicate: 0, otherAcknowledged: 0, acceptedText: 0, redelivered: false })) } as unknown as SimulationReport;
    const server = { url: 'http://127.0.0.1:8787', requests: [], fetches: () => 9, byStatus: () => ({}) };
    // The service reports the second notification as processing for three polls, then done.
    const asked: string[][] = [];
    let polls = 0;
    const processing = async (ids: string[]) => {
      asked.push(ids);
      polls += 1;
      return polls <= 3 ? ids.filter((id) => id === events[1].eventId) : [];
    };
    const done = await awaitObjectReads(server, plan, report, 10_000, () => false, processing);
    expect(done.pending).toEqual([]);
    expect(polls).toBe(4);
    // Only what was still pending is asked again.
    expect(asked).toEqual([events.map((e) => e.eventId), [events[1].eventId], [events[1].eventId], [events[1].eventId]]);
    expect(formatObjects(done)[0]).toMatch(/; each object read$/);

    const stuck = await awaitObjectReads(server, plan, report, 150, () => false, async (ids) => ids.slice(0, 1));
    expect(stuck.pending).toEqual([events[0].eventId]);
    expect(formatObjects(stuck)).toEqual([
      expect.stringMatching(/; each object read; 1 notification\(s\) still being processed after \d+ ms$/),
      `  still processing: ${events[0].eventId}`,
    ]);
  });

  it('the summary names the style on its first line, and the objects line; the JSON the objects', async () => {
    const report = { events: [], answers: {}, requests: 0, attempts: 0, retries: 0, redeliveries: 0, giveUps: [], interrupted: false, durationMs: 5 } as SimulationReport;
    const run: RunInfo = { provider: 'stripe', endpoint: 'stripe-thin', url: 'http://h', schedule: 'stripe', timeScale: 1, seed: 1, copies: 1, concurrency: 8, orders: [], payloadStyle: 'thin', objectsUrl: 'http://127.0.0.1:8787' };
    const objects = { url: 'http://127.0.0.1:8787', notifications: 0, requests: 0, answers: {}, unread: [], waitedMs: 0 };
    const lines = formatSummary(run, report, undefined, undefined, objects);
    expect(lines[0]).toBe('simulate stripe (thin notifications) → http://h/webhooks/stripe-thin');
    expect(lines).toContain('objects served at http://127.0.0.1:8787: 0 request(s) for 0 acknowledged notification(s) naming one; each object read');
    expect(summaryJson(run, report, undefined, undefined, objects)).toMatchObject({ ok: true, objects, run: { payloadStyle: 'thin', objectsUrl: 'http://127.0.0.1:8787' } });
  });
});

describe('parseSimulateArgs: paypal, checkout, square, paddle', () => {
  const target = (provider: string) => ['--url', 'http://127.0.0.1:1', '--endpoint', 'x', '--provider', provider];
  function messageOf(args: string[]): string {
    try {
      parseSimulateArgs(args);
    } catch (err) {
      if (err instanceof CliExit) {
        expect(err.code).toBe(EXIT.couldNotRun);
        return err.message;
      }
      throw err;
    }
    throw new Error('no CliExit');
  }

  it.each([
    [['--provider', 'square', '--secret', 'sq-key', '--merchant', 'SELLER'], "simulate: --provider square needs --notification-url <the endpoint's notificationUrl>: Square signs the https URL registered on the subscription, and http://127.0.0.1:1/webhooks/x is not one"],
    [['--provider', 'square', '--secret', 'sq-key', '--merchant', 'SELLER', '--notification-url', 'http://shop.example.com/w'], "simulate: --notification-url must be an https URL, the endpoint's notificationUrl exactly as registered at Square"],
    [['--provider', 'square', '--secret', 'sq-key'], "simulate: --provider square needs --merchant <merchant_id>: every notification names its seller, which must be the endpoint's merchant account"],
    [['--provider', 'checkout', '--secret', 'a', '--secret', 'b'], 'simulate: --provider checkout takes one key: Checkout.com signs with the key the webhook has now (2 given)'],
    [['--provider', 'paypal', '--secret', 'WH1', '--secret', 'WH2'], "simulate: --provider paypal takes one webhook id: PayPal's signature is the certificate's, and names one webhook (2 given)"],
    [['--provider', 'paddle', '--secret', 'pdl_ntfset_k', '--merchant', 'x'], 'simulate: --merchant does not apply to paddle: its bodies declare no account'],
    [['--provider', 'checkout', '--secret', 'k', '--merchant', 'x'], 'simulate: --merchant does not apply to checkout: its bodies declare no account'],
    [['--provider', 'paypal', '--secret', 'has spaces'], 'simulate: --secret of a paypal endpoint is its webhookId, the id PayPal shows for the webhook (letters, digits, - and _)'],
    [['--provider', 'paypal', '--secret', 'WH1', '--paypal-cert-port', '70000'], 'simulate: --paypal-cert-port must be a port from 0 to 65535, got "70000"'],
    [['--provider', 'checkout', '--secret', 'k', '--paypal-cert-port', '1'], 'simulate: --paypal-cert-port applies to paypal only, not checkout'],
    [['--provider', 'paddle', '--secret', 'k', '--notification-url', 'https://x.example/w'], 'simulate: --notification-url applies to square only (Square signs the URL before the body), not paddle'],
  ])('%j: exit 2 with one line', (extra, message) => {
    const [, provider] = extra;
    expect(messageOf([...target(provider), ...extra.slice(2)])).toBe(message);
  });

  it('the settings each takes: square its notification URL (by default <url>/webhooks/<endpoint> when https), paypal its certificate port; each its own schedule', () => {
    const square = parseSimulateArgs(['--url', 'https://shop.example.com/pay', '--endpoint', 'sq', '--provider', 'square', '--secret', 'k', '--merchant', 'SELLER']);
    expect(square).toMatchObject({ notificationUrl: 'https://shop.example.com/pay/webhooks/sq', schedule: 'square', merchant: 'SELLER' });
    expect(parseSimulateArgs([...target('paypal'), '--secret', 'WH-1_a'])).toMatchObject({ paypalCertPort: 0, schedule: 'paypal', secrets: ['WH-1_a'] });
    expect(parseSimulateArgs([...target('paypal'), '--secret', 'WH1', '--paypal-cert-port', '8443'])).toMatchObject({ paypalCertPort: 8443 });
    expect(parseSimulateArgs([...target('paddle'), '--secret', 'pdl_ntfset_a', '--secret', 'pdl_ntfset_b'])).toMatchObject({ secrets: ['pdl_ntfset_a', 'pdl_ntfset_b'], schedule: 'paddle' });
    expect(parseSimulateArgs([...target('checkout'), '--secret', 'k'])).toMatchObject({ schedule: 'checkout' });
    expect(parseSimulateArgs([...target('checkout'), '--secret', 'k']).notificationUrl).toBeUndefined();
  });
});
