import { randomBytes, randomUUID } from 'node:crypto';
import { parseCommandArgs } from './args';
import { CliCommand, CliExit, EXIT } from './context';
import { Answer, deliver, describeAnswer, joinUrl, send, signDelivery, webhookUrl, type Delivery } from './remote/delivery';
import { EventKind, lifecycleKinds, newEventId, newResourceId, providerEvent, RemoteProvider, wireBody } from './remote/events';
import { attemptsOf, formatDuration, isSuccess, RetrySchedule, SCHEDULE_NAMES, ScheduleName, SCHEDULES, seededRandom, waitAfter } from './remote/schedules';

const PROVIDERS: readonly RemoteProvider[] = ['paymos', 'factuarea', 'stripe', 'standard'];

const USAGE = [
  'usage: payment-webhooks simulate --url <base URL> --endpoint <id> --provider paymos|factuarea|stripe|standard --secret <s> [options]',
  '  Sends signed events to <base URL>/webhooks/<id> as the provider would, retries every failed delivery on the',
  "  provider's published schedule (shrunk by --time-scale), and prints what the service answered.",
  '  --url <base URL>         the service, with any route prefix (http://127.0.0.1:3000/pay)',
  '  --secret <s>             repeatable: every secret signs, one v1 each, as during a rotation',
  "  --events N               distinct events (default 10), in the provider's payment lifecycles (Factuarea: created,",
  '                           sent, paid); the last payment may lack its first steps, every payment ends paid',
  '  --duplicates <0..1>      share of events the provider sends again on its own once acknowledged (default 0);',
  '                           re-signed, the answer must be `duplicate`',
  "  --copies <k>             each event's first attempt goes as k concurrent copies (default 1; at most --concurrency)",
  '  --out-of-order <0..1>    share of payment lifecycles sent last event first (default 0)',
  '  --concurrency C          requests in flight at once (default 8); waiting retries hold none',
  "  --schedule <name>        paymos|factuarea|stripe|standard (default: the provider's own)",
  '  --time-scale X           divides every wait between attempts by X (default 1, real time; 120 makes 1 min 0.5 s)',
  '  --timeout <ms>           per request, not scaled (default 10000)',
  '  --merchant <account>     the account the bodies declare (not paymos; an endpoint of many accounts needs one)',
  "  --admin-token <t>        create one order per payment first (POST /orders), so the events pay real orders;",
  '                           without it the events name random order ids and end `unmatched`',
  '  --admin-url <base URL>   where the orders are created (default --url)',
  '  --seed <n>               reproducible jitter and picks (default random, printed)',
  '  --json                   the summary as JSON on stdout',
  '  Schedules:',
  ...SCHEDULE_NAMES.map((name) => `    ${name.padEnd(10)} ${SCHEDULES[name].describe}`),
  '  Progress goes to stderr. Exit 0 every event answered 2xx and none accepted twice, 1 a delivery gave up',
  '  (schedule exhausted, or an answer the schedule does not retry) or was interrupted, 2 could not run.',
].join('\n');

/** The simulator checks a receiver's behaviour; `npm run bench` measures its throughput. */
const MAX_EVENTS = 100_000;
const ORDER_AMOUNT = '49.90';
const ORDER_CURRENCY = 'EUR';

// ---------------------------------------------------------------------------------------------
// Options

export interface SimulateOptions {
  url: string;
  endpoint: string;
  provider: RemoteProvider;
  secrets: string[];
  events: number;
  duplicates: number;
  copies: number;
  outOfOrder: number;
  concurrency: number;
  schedule: ScheduleName;
  timeScale: number;
  timeoutMs: number;
  merchant?: string;
  adminToken?: string;
  adminUrl: string;
  seed: number;
  json: boolean;
}

function usageError(message: string): never {
  throw new CliExit(EXIT.couldNotRun, `simulate: ${message}`);
}

/** A whole number in [min, max], written as digits only (no `1e3`, no `0x10`, no `2.0`). */
function wholeNumber(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) usageError(`--${name} must be a whole number from ${min} to ${max}, got "${value}"`);
  return n;
}

/** A decimal number written plainly (`0.25`, `120`, `.5`). */
function decimal(value: string): number {
  return /^(\d+(\.\d*)?|\.\d+)$/.test(value) ? Number(value) : NaN;
}

function ratio(name: string, value: string | undefined): number {
  if (value === undefined) return 0;
  const n = decimal(value);
  if (!(n >= 0 && n <= 1)) usageError(`--${name} must be a ratio from 0 to 1, got "${value}"`);
  return n;
}

function baseUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return usageError(`--${name} must be an http(s) URL, e.g. http://127.0.0.1:3000`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') usageError(`--${name} must be an http(s) URL, e.g. http://127.0.0.1:3000`);
  if (url.search || url.hash) usageError(`--${name} must be a base URL, without a query or fragment`);
  // fetch refuses such a URL, and no provider sends credentials that way.
  if (url.username || url.password) usageError(`--${name} must not carry a user name or password`);
  return value;
}

function oneOf<T extends string>(name: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value)) usageError(`--${name} must be one of ${allowed.join(', ')}, got "${value}"`);
  return value as T;
}

/** The command line, validated; anything wrong ends the command with exit 2 and one line (never a secret's value). */
export function parseSimulateArgs(args: string[]): SimulateOptions {
  const v = parseCommandArgs('simulate', USAGE, args, {
    url: { type: 'string' },
    endpoint: { type: 'string' },
    provider: { type: 'string' },
    secret: { type: 'string', multiple: true },
    events: { type: 'string' },
    duplicates: { type: 'string' },
    copies: { type: 'string' },
    'out-of-order': { type: 'string' },
    concurrency: { type: 'string' },
    schedule: { type: 'string' },
    'time-scale': { type: 'string' },
    timeout: { type: 'string' },
    merchant: { type: 'string' },
    'admin-token': { type: 'string' },
    'admin-url': { type: 'string' },
    seed: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (!v.url || !v.endpoint || !v.provider || !v.secret?.length) {
    throw new CliExit(EXIT.couldNotRun, `simulate: --url, --endpoint, --provider and --secret are required\n${USAGE}`);
  }
  const provider = oneOf('provider', v.provider, PROVIDERS);
  const secrets = v.secret;
  if (secrets.some((s) => s.length === 0)) usageError('--secret must not be empty');
  if (provider === 'standard' && secrets.some((s) => !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(s))) {
    usageError('--secret of a standard endpoint must be whsec_ followed by base64 (Standard Webhooks signs with the decoded key)');
  }
  if (provider === 'paymos' && v.merchant !== undefined) usageError('--merchant does not apply to paymos: its bodies declare no account');
  if (v.merchant === '') usageError('--merchant must not be empty');
  if (v['admin-token'] === '') usageError('--admin-token must not be empty');
  if (v['admin-url'] !== undefined && v['admin-token'] === undefined) usageError('--admin-url needs --admin-token');

  const concurrency = wholeNumber('concurrency', v.concurrency, 8, 1, 10_000);
  const copies = wholeNumber('copies', v.copies, 1, 1, 10_000);
  if (copies > concurrency) usageError(`--copies (${copies}) must not exceed --concurrency (${concurrency}): the copies are sent at once`);
  const timeScale = v['time-scale'] === undefined ? 1 : decimal(v['time-scale']);
  if (!(timeScale > 0 && Number.isFinite(timeScale))) usageError(`--time-scale must be a positive number, got "${v['time-scale']}"`);

  return {
    url: baseUrl('url', v.url),
    endpoint: v.endpoint,
    provider,
    secrets,
    // Every body is built before the first is sent: a bound that keeps the plan within memory.
    events: wholeNumber('events', v.events, 10, 1, MAX_EVENTS),
    duplicates: ratio('duplicates', v.duplicates),
    copies,
    outOfOrder: ratio('out-of-order', v['out-of-order']),
    concurrency,
    schedule: v.schedule === undefined ? provider : oneOf('schedule', v.schedule, SCHEDULE_NAMES),
    timeScale,
    timeoutMs: wholeNumber('timeout', v.timeout, 10_000, 1, 2_147_483_647),
    merchant: v.merchant,
    adminToken: v['admin-token'],
    adminUrl: baseUrl('admin-url', v['admin-url'] ?? v.url),
    seed: wholeNumber('seed', v.seed, randomBytes(4).readUInt32BE(0), 0, 4_294_967_295),
    json: v.json ?? false,
  };
}

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
  return lengths.map((length, p) => {
    const resourceId = newResourceId(input.provider);
    const orderId = input.orderIds ? input.orderIds[p] : randomUUID();
    const ref = { resourceId, orderId, amount: ORDER_AMOUNT, currency: ORDER_CURRENCY, account: input.merchant };
    const events = kinds.slice(kinds.length - length).map((kind): PlannedEvent => {
      const event = providerEvent(input.provider, kind, ref, newEventId(input.provider));
      return {
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

function describeWithCause(answer: Answer): string {
  const described = describeAnswer(answer);
  return answer.status === 0 && answer.cause ? `${described} (${answer.cause})` : described;
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
        this.records.set(e.eventId, {
          eventId: e.eventId,
          type: e.type,
          orderId: e.orderId,
          resourceId: e.resourceId,
          state: 'not_sent',
          attempts: 0,
          accepted: 0,
          duplicate: 0,
          otherAcknowledged: 0,
          redelivered: false,
        });
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
    const record = this.records.get(event.eventId)!;
    if (which === 'first') record.state = 'pending';
    const { schedule, timeScale } = this.plan;
    for (let attempt = 1; ; attempt++) {
      const answers = await this.attempt(event, which === 'first' && attempt === 1 ? this.plan.copies : 1);
      if (attempt === 1) firstAnswered?.();
      if (!answers) return this.interrupted(record, which);
      if (which === 'first') record.attempts = attempt;
      if (attempt > 1) this.counts.retries += 1;
      if (answers.some(isSuccess)) {
        if (which === 'first') record.state = 'acknowledged';
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
        });
        if (which === 'first') record.state = 'gave_up';
        return;
      }
      if (!(await this.sleep(wait, 'waiting'))) return this.interrupted(record, which);
    }
  }

  /** The provider sends an acknowledged event again on its own, some time within its first retry wait. */
  private async redeliver(event: PlannedEvent): Promise<void> {
    const within = this.plan.schedule.waitsMs[0] / this.plan.timeScale;
    if (!(await this.sleep(this.randoms.get(event.eventId)!() * within, 'toRedeliver'))) return;
    this.records.get(event.eventId)!.redelivered = true;
    this.counts.redeliveries += 1;
    await this.delivery(event, 'redelivery');
  }

  private interrupted(record: EventRecord, which: 'first' | 'redelivery'): void {
    if (which === 'first') record.state = 'interrupted';
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
    const record = this.records.get(event.eventId)!;
    record.lastAnswer = key;
    if (!isSuccess(answer)) return;
    const word = answer.json?.status;
    if (word === 'accepted') record.accepted += 1;
    else if (word === 'duplicate') record.duplicate += 1;
    else record.otherAcknowledged += 1;
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

// ---------------------------------------------------------------------------------------------
// What is printed

export interface Totals {
  events: number;
  sent: number;
  /** Events that got at least one `accepted`. */
  accepted: number;
  /** Events that got `accepted` more than once: a service bug (one event id is accepted once). */
  acceptedMoreThanOnce: number;
  /** Acknowledged, never `accepted`, only `duplicate` (the service had the event already, e.g. from a request that timed out here). */
  duplicateOnly: number;
  /** Acknowledged with a 2xx that was neither `accepted` nor `duplicate`. */
  acknowledgedOtherwise: number;
  gaveUp: number;
  /** Not sent, or still retrying, when the run was interrupted. */
  unfinished: number;
  requests: number;
  attempts: number;
  retries: number;
  redeliveries: number;
  giveUps: number;
}

export function totals(report: SimulationReport): Totals {
  const acked = report.events.filter((e) => e.accepted + e.duplicate + e.otherAcknowledged > 0);
  return {
    events: report.events.length,
    sent: report.events.filter((e) => e.state !== 'not_sent').length,
    accepted: report.events.filter((e) => e.accepted > 0).length,
    acceptedMoreThanOnce: report.events.filter((e) => e.accepted > 1).length,
    duplicateOnly: acked.filter((e) => e.accepted === 0 && e.duplicate > 0).length,
    acknowledgedOtherwise: acked.filter((e) => e.accepted === 0 && e.duplicate === 0).length,
    gaveUp: report.events.filter((e) => e.state === 'gave_up').length,
    unfinished: report.events.filter((e) => e.state === 'not_sent' || e.state === 'interrupted' || e.state === 'pending').length,
    requests: report.requests,
    attempts: report.attempts,
    retries: report.retries,
    redeliveries: report.redeliveries,
    giveUps: report.giveUps.length,
  };
}

/** Why the run failed, in one line; undefined when it succeeded (every delivery answered 2xx, none accepted twice). */
export function failure(report: SimulationReport): string | undefined {
  const t = totals(report);
  const reasons: string[] = [];
  if (t.acceptedMoreThanOnce > 0) reasons.push(`the service answered accepted more than once for ${t.acceptedMoreThanOnce} event(s): a broken deduplication`);
  if (t.giveUps > 0) {
    const byAnswer = new Map<string, number>();
    for (const g of report.giveUps) byAnswer.set(g.lastAnswer, (byAnswer.get(g.lastAnswer) ?? 0) + 1);
    const answers = [...byAnswer].map(([answer, n]) => `${n}× ${answer}`).join(', ');
    reasons.push(`${t.giveUps} deliver${t.giveUps === 1 ? 'y' : 'ies'} gave up (${answers})`);
  }
  if (report.interrupted) reasons.push(`interrupted with ${t.unfinished} of ${t.events} events unfinished`);
  return reasons.length ? `simulate: ${reasons.join('; ')}` : undefined;
}

export interface RunInfo {
  provider: RemoteProvider;
  endpoint: string;
  url: string;
  schedule: ScheduleName;
  timeScale: number;
  seed: number;
  copies: number;
  concurrency: number;
  orders: string[];
}

/** The summary table: answers by status, retries, give-ups, and the accepted counts the idempotency check rests on. */
export function formatSummary(run: RunInfo, report: SimulationReport): string[] {
  const t = totals(report);
  const s = SCHEDULES[run.schedule];
  const lines = [
    `simulate ${run.provider} → ${webhookUrl(run.url, run.endpoint)}`,
    `schedule ${run.schedule} (${attemptsOf(s)} attempts), time scale ${run.timeScale}, seed ${run.seed}, concurrency ${run.concurrency}, copies ${run.copies}`,
  ];
  if (run.orders.length) lines.push(`orders created: ${run.orders.length}`);
  lines.push(
    `events: ${t.sent} sent of ${t.events}, ${t.accepted} accepted, ${t.duplicateOnly} acknowledged as duplicate only, ${t.acknowledgedOtherwise} acknowledged otherwise, ${t.gaveUp} gave up${t.unfinished ? `, ${t.unfinished} unfinished` : ''}`,
    `accepted more than once: ${t.acceptedMoreThanOnce}${t.acceptedMoreThanOnce ? '  <- SERVICE BUG: an event id must be accepted once' : ''}`,
    `requests: ${t.requests} (${t.attempts} attempts, ${t.retries} retries, ${t.redeliveries} redeliveries)`,
    'answers:',
    ...Object.entries(report.answers).map(([answer, n]) => `  ${answer}: ${n}`),
    `give-ups: ${t.giveUps}`,
    ...report.giveUps.map((g) => `  gave up: ${g.eventId} (${g.type}${g.delivery === 'redelivery' ? ', redelivery' : ''}) after ${g.attempts} attempt(s): ${g.lastAnswer}${g.reason === 'not_retried' ? ' (not retried)' : ''}`),
    ...report.events.filter((e) => e.accepted > 1).map((e) => `  accepted ${e.accepted} times: ${e.eventId} (${e.type})`),
    `took ${formatDuration(report.durationMs)}`,
  );
  return lines;
}

export function summaryJson(run: RunInfo, report: SimulationReport): Record<string, unknown> {
  return {
    run: { ...run, orders: undefined },
    totals: totals(report),
    answers: report.answers,
    giveUps: report.giveUps,
    orders: run.orders,
    events: report.events,
    interrupted: report.interrupted,
    durationMs: Math.round(report.durationMs),
  };
}

export function formatProgress(p: Progress): string {
  return (
    `simulate: ${p.acknowledged}/${p.events} events acknowledged, ${p.gaveUp} gave up, ${p.sent - p.acknowledged - p.gaveUp} pending` +
    ` (${p.waiting} waiting to retry, ${p.inFlight} in flight)${p.toRedeliver ? `, ${p.toRedeliver} to be sent again` : ''}` +
    `, ${p.requests} requests, ${formatDuration(p.elapsedMs)}` +
    (p.requests ? `; ${Object.entries(p.answers).map(([answer, n]) => `${answer}: ${n}`).join(', ')}` : '')
  );
}

/**
 * The progress line on stderr: on a terminal redrawn in place at most once a second; otherwise
 * (a log, CI) a plain line every 5 s, so a log is not flooded.
 */
export class ProgressLine {
  private last: number;
  private drawn = false;

  constructor(
    private readonly write: (text: string) => void,
    private readonly tty: boolean,
    private readonly now: () => number,
  ) {
    this.last = now();
  }

  tick(text: string): void {
    const now = this.now();
    if (now - this.last < (this.tty ? 1_000 : 5_000)) return;
    this.last = now;
    this.drawn = true;
    this.write(this.tty ? `\r\x1b[K${text}` : `${text}\n`);
  }

  /** Clears a line drawn in place, so the summary starts on a clean line. */
  end(): void {
    if (this.tty && this.drawn) this.write('\r\x1b[K');
  }
}

// ---------------------------------------------------------------------------------------------
// Orders

const SHIP_TO = { name: 'Simulated Buyer', line1: '1 Test Street', city: 'Madrid', postalCode: '28001', country: 'ES' };

/**
 * One order per payment, through the host API, so the events pay real orders. Each request
 * carries its reference as Idempotency-Key. Any answer but 201 ends the command (exit 2): the run
 * would test nothing it means to.
 */
async function createOrders(options: SimulateOptions, count: number, run: string): Promise<string[]> {
  const url = joinUrl(options.adminUrl, '/orders');
  const ids: string[] = new Array(count);
  let next = 0;
  let failed: string | undefined;
  const worker = async () => {
    while (next < count && failed === undefined) {
      const n = next++;
      const reference = `simulate-${run}-${n + 1}`;
      const body = JSON.stringify({ reference, amount: ORDER_AMOUNT, currency: ORDER_CURRENCY, shipTo: SHIP_TO, items: [{ sku: 'SIM-1', quantity: 1 }] });
      const headers = { authorization: `Bearer ${options.adminToken}`, 'content-type': 'application/json', 'idempotency-key': reference };
      const answer = await send(url, { method: 'POST', headers, body }, options.timeoutMs);
      const id = answer.json?.id;
      if (answer.status === 201 && typeof id === 'string') ids[n] = id;
      else failed ??= describeWithCause(answer);
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, count) }, worker));
  if (failed !== undefined) {
    const made = ids.filter(Boolean).length;
    throw new CliExit(EXIT.couldNotRun, `simulate: POST ${url} answered ${failed}; ${made} of ${count} orders created, no event sent`);
  }
  return ids;
}

// ---------------------------------------------------------------------------------------------

/**
 * `payment-webhooks simulate` (CONTRACT §8): plays a provider against a running service, over
 * HTTP only (no environment read), so an operator can watch the receiver take duplicates,
 * concurrent copies, out-of-order lifecycles, a secret rotation in flight and the provider's own
 * retry schedule, and see by the counts that every event was accepted exactly once.
 */
export const simulateCommand: CliCommand = {
  summary: 'send signed events as the provider would, retrying on its schedule',
  usage: USAGE,
  environment: false,
  async run(ctx) {
    const options = parseSimulateArgs(ctx.args);
    const random = seededRandom(options.seed);
    const count = paymentCount(options.provider, options.events);
    const run = randomUUID().slice(0, 8);
    const orderIds = options.adminToken ? await createOrders(options, count, run) : undefined;
    const payments = planRun({ ...options, orderIds }, random);

    const simulation = new Simulation(
      {
        provider: options.provider,
        url: webhookUrl(options.url, options.endpoint),
        secrets: options.secrets,
        schedule: SCHEDULES[options.schedule],
        timeScale: options.timeScale,
        copies: options.copies,
        concurrency: options.concurrency,
        payments,
      },
      { transport: (d) => deliver(d, options.timeoutMs), clock: realClock },
    );
    const progress = new ProgressLine((text) => process.stderr.write(text), process.stderr.isTTY === true, Date.now);
    const ticker = setInterval(() => progress.tick(formatProgress(simulation.progress())), 1_000);
    ticker.unref();
    // The first Ctrl-C stops and prints what was answered so far; a second one ends the process at once.
    const onInterrupt = () => simulation.interrupt();
    process.once('SIGINT', onInterrupt);
    let report: SimulationReport;
    try {
      report = await simulation.run();
    } finally {
      clearInterval(ticker);
      process.removeListener('SIGINT', onInterrupt);
      progress.end();
    }

    const info: RunInfo = {
      provider: options.provider,
      endpoint: options.endpoint,
      url: options.url,
      schedule: options.schedule,
      timeScale: options.timeScale,
      seed: options.seed,
      copies: options.copies,
      concurrency: options.concurrency,
      orders: orderIds ?? [],
    };
    if (options.json) ctx.out(JSON.stringify(summaryJson(info, report), null, 2));
    else for (const line of formatSummary(info, report)) ctx.out(line);
    const why = failure(report);
    if (why) throw new CliExit(EXIT.failure, why);
    if (!options.json) ctx.out(`ok: all ${report.events.length} events acknowledged, each accepted at most once`);
    return EXIT.ok;
  },
};
