import { randomUUID } from 'node:crypto';
import { isAdyenAccepted, itemsOf, notificationBody } from './adyen';
import { Answer, describeAnswer, describeWithCause, signDelivery, type Delivery } from './delivery';
import { EventKind, lifecycleKinds, newEventId, newResourceId, PayloadStyle, providerEvent, RemoteProvider, ServedObject, ThinEvent, thinTwin, wireBody } from './events';
import { isSuccess, RetrySchedule, seededRandom, waitAfter } from './schedules';

/**
 * The engine of `payment-webhooks simulate`: the plan (which events, in which order, which ones
 * are sent again) and the simulation that plays the provider over a transport and a clock it is
 * given, so the unit tests run it on a virtual clock against an in-memory receiver.
 */

/** What each simulated order costs, and each payment pays. */
export const ORDER_AMOUNT = '49.90';
export const ORDER_CURRENCY = 'EUR';

// ---------------------------------------------------------------------------------------------
// The plan: which events, in which order, which ones sent again

export interface PlannedEvent {
  eventId: string;
  type: string;
  kind: EventKind;
  /** The exact bytes sent on every attempt of this event. */
  body: string;
  /** Factuarea's delivery id: one per event and endpoint, the same on every attempt and redelivery. */
  deliveryId?: string;
  /** Sent again by the provider on its own, once acknowledged. */
  redeliver: boolean;
  /** Seeds this event's own jitter and redelivery wait, so a seed gives the same waits whatever order the answers come in. */
  seed: number;
  orderId?: string;
  resourceId: string;
  /**
   * Adyen with --batch: every event this one delivery carries, this one first (its items, in
   * order); each is counted on its own, and the delivery is retried and sent again as a whole.
   */
  items?: Array<{ eventId: string; type: string; orderId?: string; resourceId: string }>;
  /**
   * Stripe thin: the object the notification names, put in the kit's objects server before the
   * notification is sent, with `rank` its step in the lifecycle (a later step's state is kept).
   */
  served?: ServedObject & { rank: number };
}

export interface PlannedPayment {
  resourceId: string;
  orderId?: string;
  /** Its events go last first. */
  reversed: boolean;
  /** In the order their first attempts are sent. */
  events: PlannedEvent[];
}

/** How many payments carry `events` events: whole lifecycles, the last one possibly cut short at its start. */
export function paymentCount(provider: RemoteProvider, events: number): number {
  return Math.ceil(events / lifecycleKinds(provider).length);
}

/** `count` distinct indexes of [0, n), picked with `random`. */
export function pick(n: number, count: number, random: () => number): Set<number> {
  const indexes = Array.from({ length: n }, (_, i) => i);
  for (let i = 0; i < count; i++) {
    const j = i + Math.floor(random() * (n - i));
    [indexes[i], indexes[j]] = [indexes[j], indexes[i]];
  }
  return new Set(indexes.slice(0, count));
}

export interface PlanInput {
  provider: RemoteProvider;
  events: number;
  duplicates: number;
  outOfOrder: number;
  merchant?: string;
  /** One per payment when orders were created; otherwise each payment names a random order id. */
  orderIds?: string[];
  /** Adyen: events a delivery carries (default 1). */
  batch?: number;
  /** Stripe: `thin` sends the thin twin of each event (default `snapshot`). */
  payloadStyle?: PayloadStyle;
}

/**
 * The events of a run: `events` distinct events, grouped into the provider's payment lifecycles
 * (the last payment keeps the end of its lifecycle, so every payment ends paid); a share of the
 * lifecycles reversed and a share of the events marked to be sent again. Ids are always fresh (a
 * second run with the same seed must not collide with the first one's rows); `random` decides
 * only the picks.
 */
export function planRun(input: PlanInput, random: () => number): PlannedPayment[] {
  const kinds = lifecycleKinds(input.provider);
  const payments = paymentCount(input.provider, input.events);
  const lengths = Array.from({ length: payments }, (_, i) => (i < payments - 1 ? kinds.length : input.events - i * kinds.length));
  const multiStep = lengths.flatMap((length, i) => (length > 1 ? [i] : []));
  const reversed = new Set([...pick(multiStep.length, Math.round(input.outOfOrder * multiStep.length), random)].map((i) => multiStep[i]));
  const redelivered = pick(input.events, Math.round(input.duplicates * input.events), random);

  let n = 0;
  const planned = lengths.map((length, p): PlannedPayment => {
    const resourceId = newResourceId(input.provider);
    const orderId = input.orderIds ? input.orderIds[p] : randomUUID();
    const ref = { resourceId, orderId, amount: ORDER_AMOUNT, currency: ORDER_CURRENCY, account: input.merchant };
    const events = kinds.slice(kinds.length - length).map((kind): PlannedEvent => {
      const snapshot = providerEvent(input.provider, kind, ref, newEventId(input.provider));
      const event: ThinEvent = input.payloadStyle === 'thin' ? thinTwin(snapshot) : snapshot;
      const served = event.served ? { ...event.served, rank: kinds.indexOf(kind) } : undefined;
      return {
        ...(served ? { served } : {}),
        eventId: event.eventId,
        type: event.type,
        kind,
        body: wireBody(event.body),
        deliveryId: input.provider === 'factuarea' ? randomUUID() : undefined,
        redeliver: redelivered.has(n++),
        seed: Math.floor(random() * 4_294_967_296),
        orderId,
        resourceId,
      };
    });
    return { resourceId, orderId, reversed: reversed.has(p), events: reversed.has(p) ? events.reverse() : events };
  });
  return input.provider === 'adyen' && (input.batch ?? 1) > 1 ? batched(planned, input.batch ?? 1) : planned;
}

/**
 * Adyen's deliveries of several items: every `size` payments (one AUTHORISATION each) go as one
 * delivery, whose items are their events in order; it is sent again (a duplicate) when any of its
 * events was picked to be. The plan's unit becomes the delivery: one "payment" each.
 */
function batched(payments: PlannedPayment[], size: number): PlannedPayment[] {
  const groups: PlannedPayment[] = [];
  for (let i = 0; i < payments.length; i += size) {
    const events = payments.slice(i, i + size).flatMap((p) => p.events);
    const body = notificationBody(events.flatMap((e) => itemsOf(JSON.parse(e.body))));
    const first = events[0];
    const delivery: PlannedEvent = {
      ...first,
      body: wireBody(body),
      redeliver: events.some((e) => e.redeliver),
      items: events.map((e) => ({ eventId: e.eventId, type: e.type, orderId: e.orderId, resourceId: e.resourceId })),
    };
    groups.push({ resourceId: first.resourceId, orderId: first.orderId, reversed: false, events: [delivery] });
  }
  return groups;
}

// ---------------------------------------------------------------------------------------------
// The simulation

/** Time as the simulation reads it: injectable, so the unit tests run hours of schedule without sleeping. */
export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

/** setTimeout can wait at most 2^31 − 1 ms (24.8 days); a longer wait (a slowed-down schedule) is waited in parts. */
const MAX_TIMEOUT = 2_147_483_647;

export const realClock: Clock = {
  now: () => Date.now(),
  sleep: async (ms) => {
    for (let left = ms; left > 0; left -= MAX_TIMEOUT) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(left, MAX_TIMEOUT)));
    }
  },
};

export interface SimulationPlan {
  provider: RemoteProvider;
  /** The webhook URL: `<base>/webhooks/<endpoint>`. */
  url: string;
  secrets: string[];
  schedule: RetrySchedule;
  timeScale: number;
  copies: number;
  concurrency: number;
  payments: PlannedPayment[];
  /** Square: the subscription's notification URL, signed before the body. */
  notificationUrl?: string;
  /** PayPal: where the kit serves its signing certificate. */
  paypalCertUrl?: string;
}

export interface SimulationDeps {
  /** Sends one request (the real one: `deliver` with the timeout). */
  transport(delivery: Delivery): Promise<Answer>;
  clock: Clock;
}

export type EventState = 'not_sent' | 'pending' | 'acknowledged' | 'gave_up' | 'interrupted';

export interface EventRecord {
  eventId: string;
  type: string;
  orderId?: string;
  resourceId: string;
  state: EventState;
  /** Attempts of its first delivery (a redelivery counts its own). */
  attempts: number;
  /** Answers `accepted` it got, over every attempt, copy and redelivery: 1 against a correct service. */
  accepted: number;
  duplicate: number;
  /** 2xx answers that were neither accepted nor duplicate (something answered for the service). */
  otherAcknowledged: number;
  /**
   * Adyen: 2xx answers `[accepted]`, the service's answer to a new delivery and to one recorded
   * before alike (counted for each event of the delivery): whether an event was recorded once is
   * for the archive to say.
   */
  acceptedText: number;
  redelivered: boolean;
  lastAnswer?: string;
}

export interface GiveUp {
  eventId: string;
  type: string;
  delivery: 'first' | 'redelivery';
  attempts: number;
  /** `401 invalid_signature`, `503 unavailable`, `timeout (no answer within 10000 ms)`. */
  lastAnswer: string;
  /** Why the sender stopped: its schedule ran out, or the answer is one it never retries. */
  reason: 'schedule_exhausted' | 'not_retried';
  /** Adyen with --batch: the other events of that delivery, lost with it (`eventId` is its first). */
  alsoLost?: string[];
}

export interface SimulationReport {
  events: EventRecord[];
  /** Answers by `answerKey`: `200 accepted`, `503 unavailable`, `timeout`, `connection (ECONNREFUSED)`. */
  answers: Record<string, number>;
  requests: number;
  attempts: number;
  retries: number;
  redeliveries: number;
  giveUps: GiveUp[];
  interrupted: boolean;
  durationMs: number;
}

export interface Progress {
  events: number;
  sent: number;
  acknowledged: number;
  gaveUp: number;
  /** Deliveries waiting for their next attempt. */
  waiting: number;
  /** Acknowledged events waiting to be sent again. */
  toRedeliver: number;
  inFlight: number;
  requests: number;
  elapsedMs: number;
  /** Answers so far, by `answerKey`. */
  answers: Record<string, number>;
}

/** A weighted FIFO semaphore: the k copies of an attempt take k slots together, so they really go at once. */
class Gate {
  private readonly queue: Array<{ n: number; resolve: () => void }> = [];

  constructor(private free: number) {}

  acquire(n: number): Promise<void> {
    if (this.queue.length === 0 && this.free >= n) {
      this.free -= n;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.queue.push({ n, resolve }));
  }

  release(n: number): void {
    this.free += n;
    while (this.queue.length > 0 && this.queue[0].n <= this.free) {
      const next = this.queue.shift()!;
      this.free -= next.n;
      next.resolve();
    }
  }
}


/**
 * How an answer is counted: `describeAnswer`, and for a failed connection its cause too
 * (`connection (ECONNREFUSED)`), since a refused, a reset and an unresolved host call for
 * different fixes; a timeout's cause is only the timeout.
 */
export function answerKey(answer: Answer): string {
  return answer.error === 'connection' ? describeWithCause(answer) : describeAnswer(answer);
}

/**
 * Plays the provider: each payment's events go in lifecycle order (the next one's first attempt
 * once the previous one's first attempt is answered, as events happen one after another), every
 * delivery retries on its own timer, so a failed event never holds the others back; only
 * requests in flight are limited. Each attempt signs again with the clock's time, over the same
 * bytes, with the same event id and delivery id.
 */
export class Simulation {
  private readonly gate: Gate;
  private readonly records = new Map<string, EventRecord>();
  private readonly randoms = new Map<string, () => number>();
  private readonly answers = new Map<string, number>();
  private readonly giveUps: GiveUp[] = [];
  private counts = { requests: 0, attempts: 0, retries: 0, redeliveries: 0, waiting: 0, toRedeliver: 0, inFlight: 0 };
  private stopped = false;
  /** The retries waiting: an interruption wakes them all (a set, not a race on one promise, so a long run holds only the live ones). */
  private readonly wakers = new Set<() => void>();
  private startedAt = 0;

  constructor(
    private readonly plan: SimulationPlan,
    private readonly deps: SimulationDeps,
  ) {
    this.gate = new Gate(plan.concurrency);
    for (const payment of plan.payments) {
      for (const e of payment.events) {
        this.randoms.set(e.eventId, seededRandom(e.seed));
        for (const item of e.items ?? [e]) {
          this.records.set(item.eventId, {
            eventId: item.eventId,
            type: item.type,
            orderId: item.orderId,
            resourceId: item.resourceId,
            state: 'not_sent',
            attempts: 0,
            accepted: 0,
            duplicate: 0,
            otherAcknowledged: 0,
            acceptedText: 0,
            redelivered: false,
          });
        }
      }
    }
  }

  async run(): Promise<SimulationReport> {
    this.startedAt = this.deps.clock.now();
    await Promise.all(this.plan.payments.map((p) => this.lifecycle(p)));
    return this.report();
  }

  /** Stops: nothing new is sent and no retry waits on; the requests in flight are answered first (within the timeout). */
  interrupt(): void {
    this.stopped = true;
    for (const wake of this.wakers) wake();
  }

  progress(): Progress {
    const records = [...this.records.values()];
    return {
      events: records.length,
      sent: records.filter((r) => r.state !== 'not_sent').length,
      acknowledged: records.filter((r) => r.state === 'acknowledged').length,
      gaveUp: records.filter((r) => r.state === 'gave_up').length,
      waiting: this.counts.waiting,
      toRedeliver: this.counts.toRedeliver,
      inFlight: this.counts.inFlight,
      requests: this.counts.requests,
      elapsedMs: this.deps.clock.now() - this.startedAt,
      answers: this.sortedAnswers(),
    };
  }

  private async lifecycle(payment: PlannedPayment): Promise<void> {
    const deliveries: Promise<void>[] = [];
    for (const event of payment.events) {
      if (this.stopped) break;
      let firstAnswered!: () => void;
      const answered = new Promise<void>((resolve) => (firstAnswered = resolve));
      deliveries.push(this.delivery(event, 'first', firstAnswered).finally(firstAnswered));
      await answered;
    }
    await Promise.all(deliveries);
  }

  /** One delivery of an event: its attempts, up to the schedule's last, and (first delivery, once acknowledged) its redelivery. */
  private async delivery(event: PlannedEvent, which: 'first' | 'redelivery', firstAnswered?: () => void): Promise<void> {
    const records = this.recordsOf(event);
    const setState = (state: EventState) => records.forEach((r) => (r.state = state));
    if (which === 'first') setState('pending');
    const { schedule, timeScale } = this.plan;
    for (let attempt = 1; ; attempt++) {
      const answers = await this.attempt(event, which === 'first' && attempt === 1 ? this.plan.copies : 1);
      if (attempt === 1) firstAnswered?.();
      if (!answers) return this.interrupted(records, which);
      if (which === 'first') records.forEach((r) => (r.attempts = attempt));
      if (attempt > 1) this.counts.retries += 1;
      if (answers.some(isSuccess)) {
        if (which === 'first') setState('acknowledged');
        if (which === 'first' && event.redeliver) await this.redeliver(event);
        return;
      }
      const retried = answers.some((a) => schedule.retryable(a));
      const wait = retried ? waitAfter(schedule, attempt, timeScale, this.randoms.get(event.eventId)!) : undefined;
      if (wait === undefined) {
        const last = answers.find((a) => !schedule.retryable(a)) ?? answers[0];
        this.giveUps.push({
          eventId: event.eventId,
          type: event.type,
          delivery: which,
          attempts: attempt,
          lastAnswer: describeWithCause(last),
          reason: retried ? 'schedule_exhausted' : 'not_retried',
          ...(event.items && event.items.length > 1 ? { alsoLost: event.items.slice(1).map((i) => i.eventId) } : {}),
        });
        if (which === 'first') setState('gave_up');
        return;
      }
      if (!(await this.sleep(wait, 'waiting'))) return this.interrupted(records, which);
    }
  }

  /** The provider sends an acknowledged event again on its own, some time within its first retry wait. */
  private async redeliver(event: PlannedEvent): Promise<void> {
    const within = this.plan.schedule.waitsMs[0] / this.plan.timeScale;
    if (!(await this.sleep(this.randoms.get(event.eventId)!() * within, 'toRedeliver'))) return;
    for (const record of this.recordsOf(event)) record.redelivered = true;
    this.counts.redeliveries += 1;
    await this.delivery(event, 'redelivery');
  }

  private interrupted(records: EventRecord[], which: 'first' | 'redelivery'): void {
    if (which === 'first') for (const record of records) record.state = 'interrupted';
  }

  /** The records of the events a delivery carries: its own, or (an Adyen batch) each item's. */
  private recordsOf(event: PlannedEvent): EventRecord[] {
    return (event.items ?? [event]).map((item) => this.records.get(item.eventId)!);
  }

  /** Waits for a retry or a redelivery (counted as `what`); false when the run was interrupted meanwhile. */
  private async sleep(ms: number, what: 'waiting' | 'toRedeliver'): Promise<boolean> {
    if (this.stopped) return false;
    this.counts[what] += 1;
    let wake!: () => void;
    try {
      await new Promise<void>((resolve) => {
        wake = resolve;
        this.wakers.add(wake);
        void this.deps.clock.sleep(ms).then(resolve);
      });
      return !this.stopped;
    } finally {
      this.wakers.delete(wake);
      this.counts[what] -= 1;
    }
  }

  /** One attempt, as `copies` identical requests at once; undefined when the run was interrupted before it went. */
  private async attempt(event: PlannedEvent, copies: number): Promise<Answer[] | undefined> {
    await this.gate.acquire(copies);
    try {
      if (this.stopped) return undefined;
      const delivery = signDelivery(this.plan.provider, this.plan.url, event.eventId, event.body, {
        secrets: this.plan.secrets,
        timestamp: Math.floor(this.deps.clock.now() / 1000),
        deliveryId: event.deliveryId,
        notificationUrl: this.plan.notificationUrl,
        paypalCertUrl: this.plan.paypalCertUrl,
      });
      this.counts.attempts += 1;
      this.counts.requests += copies;
      this.counts.inFlight += copies;
      try {
        const answers = await Promise.all(Array.from({ length: copies }, () => this.deps.transport(delivery)));
        for (const answer of answers) this.record(event, answer);
        return answers;
      } finally {
        this.counts.inFlight -= copies;
      }
    } finally {
      this.gate.release(copies);
    }
  }

  private record(event: PlannedEvent, answer: Answer): void {
    const key = answerKey(answer);
    this.answers.set(key, (this.answers.get(key) ?? 0) + 1);
    for (const record of this.recordsOf(event)) {
      record.lastAnswer = key;
      if (!isSuccess(answer)) continue;
      const word = answer.json?.status;
      if (this.plan.provider === 'adyen') {
        if (isAdyenAccepted(answer)) record.acceptedText += 1;
        else record.otherAcknowledged += 1;
      } else if (word === 'accepted') record.accepted += 1;
      else if (word === 'duplicate') record.duplicate += 1;
      else record.otherAcknowledged += 1;
    }
  }

  private sortedAnswers(): Record<string, number> {
    return Object.fromEntries([...this.answers].sort(([a], [b]) => a.localeCompare(b)));
  }

  private report(): SimulationReport {
    return {
      events: [...this.records.values()],
      answers: this.sortedAnswers(),
      requests: this.counts.requests,
      attempts: this.counts.attempts,
      retries: this.counts.retries,
      redeliveries: this.counts.redeliveries,
      giveUps: this.giveUps,
      interrupted: this.stopped,
      durationMs: this.deps.clock.now() - this.startedAt,
    };
  }
}

