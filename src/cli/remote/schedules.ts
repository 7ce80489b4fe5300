import type { Answer } from './delivery';

/**
 * The retry schedules of the senders `payment-webhooks simulate` plays: how many
 * attempts a provider makes, how long it waits between them, and which answers it retries. Pure:
 * the random source is passed in, so a seeded run waits the same, and tests never sleep.
 */

export const SCHEDULE_NAMES = ['paymos', 'factuarea', 'stripe', 'standard', 'adyen', 'paypal', 'checkout', 'square', 'paddle'] as const;
export type ScheduleName = (typeof SCHEDULE_NAMES)[number];

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** What a retry decision needs of an answer: its status (0 when there was none) and why there was none. */
export type Outcome = Pick<Answer, 'status' | 'error'>;

export interface RetrySchedule {
  name: ScheduleName;
  /** The nominal wait before attempt n + 2 (index 0: between the first and the second attempt). Attempts = waits + 1. */
  waitsMs: readonly number[];
  /** Each wait is drawn uniformly in nominal × [1 − jitter, 1 + jitter]; 0 for none. */
  jitter: number;
  /** Whether the sender tries again after this answer (never asked about a 2xx, which ends the delivery). */
  retryable(outcome: Outcome): boolean;
  /** One line for the usage text and the summary. */
  describe: string;
}

export function isSuccess(outcome: Outcome): boolean {
  return outcome.status >= 200 && outcome.status < 300;
}

/** Paymos, Stripe, Standard Webhooks, Adyen: anything but a 2xx, no answer included, is tried again. */
const anyFailure = (outcome: Outcome): boolean => !isSuccess(outcome);

/**
 * Factuarea tries again only what a retry can fix: no answer (a timeout, a refused or cut
 * connection), 5xx, 408 Request Timeout, 425 Too Early and 429 Too Many Requests. Any other answer
 * (another 4xx, and a 3xx, since it follows no redirect) is the receiver's final word: it gives up.
 */
const FACTUAREA_RETRIED = new Set([408, 425, 429]);
const factuareaRetryable = (outcome: Outcome): boolean =>
  outcome.status === 0 || outcome.status >= 500 || FACTUAREA_RETRIED.has(outcome.status);

/** Stripe retries for up to 3 days: waits doubling from 1 minute, capped at 12 hours, while the total stays within 3 days. */
function stripeWaits(): number[] {
  const waits: number[] = [];
  let total = 0;
  for (let wait = MINUTE; ; wait = Math.min(wait * 2, 12 * HOUR)) {
    if (total + wait > 3 * DAY) return waits;
    waits.push(wait);
    total += wait;
  }
}

/**
 * Adyen's published retry schedule (https://docs.adyen.com/development-resources/webhooks/troubleshoot,
 * "Retry queue"): a delivery not answered with a 2xx is retried three times at once, at 9, 18 and
 * 27 seconds, then from the endpoint's retry queue after 2 min, 5 min, 10 min, 15 min, 30 min, 1 h,
 * 2 h, 4 h and 8 h, and on for up to 30 days (here: every 8 h while the total stays within 30 days,
 * since no later interval is published). Adyen's queue also holds an endpoint's later webhooks
 * behind its earliest failing one; the simulator retries each delivery on its own timer.
 */
function adyenWaits(): number[] {
  const waits = [9 * SECOND, 9 * SECOND, 9 * SECOND, ...[2, 5, 10, 15, 30].map((m) => m * MINUTE), ...[1, 2, 4, 8].map((h) => h * HOUR)];
  let total = waits.reduce((a, b) => a + b, 0);
  while (total + 8 * HOUR <= 30 * DAY) {
    waits.push(8 * HOUR);
    total += 8 * HOUR;
  }
  return waits;
}

/**
 * `retries` waits filling `totalMs` exactly, for a provider that publishes only a count and a period
 * ("exponential backoff"): waits doubling from 1 minute, then level at what is left divided by the
 * waits left, doubling as long as that level wait stays at least the last doubled one.
 */
export function backoffWithin(retries: number, totalMs: number): number[] {
  let doubled = 0;
  const level = (k: number) => (totalMs - (2 ** k - 1) * MINUTE) / (retries - k);
  while (doubled + 1 < retries && level(doubled + 1) >= 2 ** doubled * MINUTE) doubled += 1;
  const rest = Math.round(level(doubled) / SECOND) * SECOND;
  return [...Array.from({ length: doubled }, (_, i) => 2 ** i * MINUTE), ...Array.from({ length: retries - doubled }, () => rest)];
}

/**
 * Square's published schedule (https://developer.squareup.com/docs/webhooks-api/delivery-sla):
 * retries 1 to 6 after 1, 2, 4, 8, 16 and 32 minutes, retries 7 to 78 every 60 minutes, "for up
 * to 72 hours after the event" (the table's own count ends at 73 h 3 min: the 78 retries are kept);
 * any answer but a 2xx within 10 seconds (a 3xx too) is a failure.
 */
function squareWaits(): number[] {
  return [...[1, 2, 4, 8, 16, 32].map((m) => m * MINUTE), ...Array.from({ length: 72 }, () => HOUR)];
}

export const SCHEDULES: Record<ScheduleName, RetrySchedule> = {
  // Published: 11 attempts over about 16 hours, from 1 minute to 8 hours apart (no jitter published).
  paymos: {
    name: 'paymos',
    waitsMs: [1, 2, 5, 10, 20, 40].map((m) => m * MINUTE).concat([1, 2, 4, 8].map((h) => h * HOUR)),
    jitter: 0,
    retryable: anyFailure,
    describe: '11 attempts over 16.3 h, waits 1m 2m 5m 10m 20m 40m 1h 2h 4h 8h; retries any non-2xx',
  },
  // Published: 8 attempts, waits 1 min, 5 min, 30 min, 2 h, 12 h, 1 day, 3 days, each ±10 %.
  factuarea: {
    name: 'factuarea',
    waitsMs: [MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 12 * HOUR, DAY, 3 * DAY],
    jitter: 0.1,
    retryable: factuareaRetryable,
    describe: '8 attempts, waits 1m 5m 30m 2h 12h 1d 3d ±10 %; retries 5xx, 408, 425, 429 and no answer, gives up on any other answer',
  },
  // Published: "up to 3 days with exponential backoff"; the exact waits are ours (see stripeWaits).
  stripe: {
    name: 'stripe',
    waitsMs: stripeWaits(),
    jitter: 0,
    retryable: anyFailure,
    describe: '15 attempts over 65 h, waits doubling from 1m, capped at 12h, within 3 days; retries any non-2xx',
  },
  // Svix's published schedule: immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h after the previous attempt.
  standard: {
    name: 'standard',
    waitsMs: [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR],
    jitter: 0,
    retryable: anyFailure,
    describe: '8 attempts, waits 5s 5m 30m 2h 5h 10h 10h (Svix); retries any non-2xx',
  },
  // Adyen's published schedule: see adyenWaits.
  adyen: {
    name: 'adyen',
    waitsMs: adyenWaits(),
    jitter: 0,
    retryable: anyFailure,
    describe: `${adyenWaits().length + 1} attempts within 30 days, waits 9s 9s 9s 2m 5m 10m 15m 30m 1h 2h 4h 8h, then 8h; retries any non-2xx`,
  },
  // PayPal's "Integrate webhooks" (https://developer.paypal.com/api/rest/webhooks/rest): a delivery not
  // answered with a 2xx (no answer, no connection, a 404, a 500) is retried up to 25 times over 3 days.
  // No waits are published: backoffWithin(25, 3 days) makes them, doubling from 1 min to 128 min, then
  // 17 waits of 3 h 59 min.
  paypal: {
    name: 'paypal',
    waitsMs: backoffWithin(25, 3 * DAY),
    jitter: 0,
    retryable: anyFailure,
    describe: '26 attempts over 3 days, waits 1m 2m 4m … 128m, then 17 × 4h (derived: PayPal publishes 25 retries over 3 days); retries any non-2xx',
  },
  // Checkout.com's published schedule (https://www.checkout.com/docs/workflows, "Receive webhooks"):
  // a webhook that fails or is not acknowledged is sent again up to 8 times, 5 min, 10 min, 15 min,
  // 30 min, 1 h, 4 h, 12 h and 12 h after the previous attempt; then it is cancelled.
  checkout: {
    name: 'checkout',
    waitsMs: [5, 10, 15, 30].map((m) => m * MINUTE).concat([1, 4, 12, 12].map((h) => h * HOUR)),
    jitter: 0,
    retryable: anyFailure,
    describe: '9 attempts over 30 h, waits 5m 10m 15m 30m 1h 4h 12h 12h; retries any non-2xx',
  },
  // Square's published schedule: see squareWaits.
  square: {
    name: 'square',
    waitsMs: squareWaits(),
    jitter: 0,
    retryable: anyFailure,
    describe: '79 attempts over 73 h, waits 1m 2m 4m 8m 16m 32m, then 72 × 1h; retries any non-2xx (a 3xx too)',
  },
  // Paddle's published policy for live accounts (https://developer.paddle.com/webhooks/respond-to-webhooks):
  // up to 60 retries over 3 days with exponential backoff, no waits published: backoffWithin(60, 3 days)
  // makes them, doubling from 1 min to 64 min, then 53 waits of 79 min. Sandbox accounts retry fewer times.
  paddle: {
    name: 'paddle',
    waitsMs: backoffWithin(60, 3 * DAY),
    jitter: 0,
    retryable: anyFailure,
    describe: '61 attempts over 3 days, waits 1m 2m 4m … 64m, then 53 × 79m (derived: Paddle publishes 60 retries over 3 days, live); retries any non-2xx',
  },
};

export function attemptsOf(schedule: RetrySchedule): number {
  return schedule.waitsMs.length + 1;
}

/**
 * The wait after attempt `attempt` (1-based) failed, in real milliseconds: the nominal wait with
 * its jitter, divided by `timeScale`; `undefined` when that was the last attempt. `random` is in [0, 1).
 */
export function waitAfter(schedule: RetrySchedule, attempt: number, timeScale: number, random: () => number): number | undefined {
  const nominal = schedule.waitsMs[attempt - 1];
  if (nominal === undefined) return undefined;
  const factor = schedule.jitter === 0 ? 1 : 1 + schedule.jitter * (2 * random() - 1);
  return (nominal * factor) / timeScale;
}

/** A seeded source of numbers in [0, 1) (mulberry32): the same seed gives the same jitter, picks and shuffles. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** `16.3 h`, `2.5 s`, `450 ms`: a duration as a summary reads it. */
export function formatDuration(ms: number): string {
  if (ms < SECOND) return `${Math.round(ms)} ms`;
  if (ms < MINUTE) return `${trim(ms / SECOND)} s`;
  if (ms < HOUR) return `${trim(ms / MINUTE)} min`;
  return `${trim(ms / HOUR)} h`;
}

function trim(value: number): string {
  return String(Math.round(value * 10) / 10);
}
