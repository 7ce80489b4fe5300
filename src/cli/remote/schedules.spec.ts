import { attemptsOf, backoffWithin, formatDuration, isSuccess, SCHEDULES, seededRandom, waitAfter } from './schedules';

/** The retry schedules `simulate` plays, as each provider publishes them. */
describe('retry schedules', () => {
  const MIN = 60_000;
  const HOUR = 60 * MIN;
  const DAY = 24 * HOUR;
  const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
  const fixed = (value: number) => () => value;

  it('Paymos: exactly 11 attempts, waits 1 min to 8 h apart, about 16.3 h in all, no jitter', () => {
    const s = SCHEDULES.paymos;
    expect(attemptsOf(s)).toBe(11);
    expect(s.waitsMs).toEqual([1, 2, 5, 10, 20, 40, 60, 120, 240, 480].map((m) => m * MIN));
    expect(sum(s.waitsMs)).toBe(978 * MIN);
    expect(sum(s.waitsMs) / HOUR).toBeCloseTo(16.3, 1);
    expect(s.jitter).toBe(0);
  });

  it('Factuarea: exactly 8 attempts, waits 1 min, 5 min, 30 min, 2 h, 12 h, 1 day, 3 days, ±10 %', () => {
    const s = SCHEDULES.factuarea;
    expect(attemptsOf(s)).toBe(8);
    expect(s.waitsMs).toEqual([MIN, 5 * MIN, 30 * MIN, 2 * HOUR, 12 * HOUR, DAY, 3 * DAY]);
    expect(s.jitter).toBe(0.1);
  });

  it('Factuarea: every wait drawn lies within ±10 % of its nominal, and the jitter spreads them', () => {
    const s = SCHEDULES.factuarea;
    const random = seededRandom(42);
    s.waitsMs.forEach((nominal, i) => {
      const waits = Array.from({ length: 500 }, () => waitAfter(s, i + 1, 1, random)!);
      expect(Math.min(...waits)).toBeGreaterThanOrEqual(nominal * 0.9);
      expect(Math.max(...waits)).toBeLessThanOrEqual(nominal * 1.1);
      expect(new Set(waits).size).toBeGreaterThan(100);
    });
    expect(waitAfter(s, 1, 1, fixed(0))).toBe(0.9 * MIN);
    expect(waitAfter(s, 1, 1, fixed(0.5))).toBe(MIN);
  });

  it.each([
    [200, false],
    [500, true],
    [502, true],
    [503, true],
    [408, true],
    [425, true],
    [429, true],
    [400, false],
    [401, false],
    [403, false],
    [404, false],
    [410, false],
    [413, false],
    [422, false],
    [301, false],
  ])('Factuarea: an answer %i is retried: %s', (status, retried) => {
    expect(SCHEDULES.factuarea.retryable({ status })).toBe(retried);
  });

  it('Factuarea retries a timeout and a connection failure (no answer)', () => {
    expect(SCHEDULES.factuarea.retryable({ status: 0, error: 'timeout' })).toBe(true);
    expect(SCHEDULES.factuarea.retryable({ status: 0, error: 'connection' })).toBe(true);
  });

  it.each(['paymos', 'stripe', 'standard', 'adyen', 'paypal', 'checkout', 'square', 'paddle'] as const)('%s retries any non-2xx and no answer', (name) => {
    for (const status of [0, 301, 400, 401, 404, 413, 429, 500, 503]) expect(SCHEDULES[name].retryable({ status })).toBe(true);
  });

  it('Stripe: waits doubling from 1 min, capped at 12 h, 15 attempts within 3 days', () => {
    const s = SCHEDULES.stripe;
    expect(s.waitsMs).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 720, 720, 720, 720].map((m) => m * MIN));
    expect(attemptsOf(s)).toBe(15);
    expect(sum(s.waitsMs)).toBeLessThanOrEqual(3 * DAY);
    expect(sum(s.waitsMs) + 12 * HOUR).toBeGreaterThan(3 * DAY);
  });

  it("Standard Webhooks (Svix's schedule): immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h", () => {
    const s = SCHEDULES.standard;
    expect(attemptsOf(s)).toBe(8);
    expect(s.waitsMs).toEqual([5_000, 5 * MIN, 30 * MIN, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR]);
  });

  it("Adyen (docs.adyen.com, webhooks troubleshoot, retry queue): 3 retries 9 s apart, then 2 min … 8 h, then every 8 h within 30 days", () => {
    const s = SCHEDULES.adyen;
    const SEC = 1_000;
    expect(s.waitsMs.slice(0, 12)).toEqual([9 * SEC, 9 * SEC, 9 * SEC, 2 * MIN, 5 * MIN, 10 * MIN, 15 * MIN, 30 * MIN, HOUR, 2 * HOUR, 4 * HOUR, 8 * HOUR]);
    expect(s.waitsMs.slice(12).every((w) => w === 8 * HOUR)).toBe(true);
    expect(sum(s.waitsMs)).toBeLessThanOrEqual(30 * DAY);
    expect(sum(s.waitsMs) + 8 * HOUR).toBeGreaterThan(30 * DAY);
    expect(attemptsOf(s)).toBe(100);
    expect(s.jitter).toBe(0);
    expect(s.describe).toBe('100 attempts within 30 days, waits 9s 9s 9s 2m 5m 10m 15m 30m 1h 2h 4h 8h, then 8h; retries any non-2xx');
    // Shrunk by the time scale as the others: 30 days at 100000× is about 26 s.
    expect(sum(s.waitsMs.map((_, i) => waitAfter(s, i + 1, 100_000, Math.random)!)) / SEC).toBeCloseTo(sum(s.waitsMs) / 100_000 / SEC, 6);
    expect(waitAfter(s, 100, 1, Math.random)).toBeUndefined();
  });

  it('PayPal: 26 attempts (25 retries) filling exactly 3 days, waits doubling from 1 min to 128 min, then level', () => {
    const s = SCHEDULES.paypal;
    expect(attemptsOf(s)).toBe(26);
    expect(s.waitsMs.slice(0, 8)).toEqual([1, 2, 4, 8, 16, 32, 64, 128].map((m) => m * MIN));
    const level = s.waitsMs.slice(8);
    expect(level).toHaveLength(17);
    expect(new Set(level).size).toBe(1);
    expect(level[0]).toBe(Math.round(((3 * DAY - 255 * MIN) / 17) / 1000) * 1000);
    expect(Math.abs(sum(s.waitsMs) - 3 * DAY)).toBeLessThan(17 * 1000);
    expect(s.jitter).toBe(0);
    expect([500, 404, 401, 301, 0].map((status) => s.retryable({ status }))).toEqual([true, true, true, true, true]);
  });

  it('Checkout.com: 9 attempts, waits 5 min, 10 min, 15 min, 30 min, 1 h, 4 h, 12 h, 12 h', () => {
    const s = SCHEDULES.checkout;
    expect(attemptsOf(s)).toBe(9);
    expect(s.waitsMs).toEqual([5 * MIN, 10 * MIN, 15 * MIN, 30 * MIN, HOUR, 4 * HOUR, 12 * HOUR, 12 * HOUR]);
    expect(sum(s.waitsMs)).toBe(30 * HOUR);
    expect(s.retryable({ status: 400 })).toBe(true);
  });

  it('Square: 79 attempts, waits 1, 2, 4, 8, 16, 32 min then 72 hourly ones: retry 78 lands 73 h 3 min after the event', () => {
    const s = SCHEDULES.square;
    expect(attemptsOf(s)).toBe(79);
    expect(s.waitsMs.slice(0, 6)).toEqual([1, 2, 4, 8, 16, 32].map((m) => m * MIN));
    expect(s.waitsMs.slice(6)).toEqual(Array(72).fill(HOUR));
    expect(sum(s.waitsMs)).toBe(63 * MIN + 72 * HOUR);
    expect(s.retryable({ status: 302 })).toBe(true);
  });

  it('Paddle: 61 attempts (60 retries) filling exactly 3 days, doubling from 1 min to 64 min, then 53 level waits', () => {
    const s = SCHEDULES.paddle;
    expect(attemptsOf(s)).toBe(61);
    expect(s.waitsMs.slice(0, 7)).toEqual([1, 2, 4, 8, 16, 32, 64].map((m) => m * MIN));
    expect(new Set(s.waitsMs.slice(7))).toEqual(new Set([Math.round((3 * DAY - 127 * MIN) / 53 / 1000) * 1000]));
    expect(Math.abs(sum(s.waitsMs) - 3 * DAY)).toBeLessThan(53 * 1000);
  });

  it('backoffWithin: never a level wait below the last doubled one; the count is the retries asked for', () => {
    for (const [retries, total] of [[25, 3 * DAY], [60, 3 * DAY], [5, HOUR], [1, DAY], [10, 10 * MIN]] as const) {
      const waits = backoffWithin(retries, total);
      expect(waits).toHaveLength(retries);
      for (let i = 1; i < waits.length; i++) expect(waits[i]).toBeGreaterThanOrEqual(waits[i - 1]);
      expect(Math.abs(sum(waits) - total)).toBeLessThanOrEqual(retries * 1000);
    }
  });

  it('the descriptions name the attempts each schedule has', () => {
    for (const s of Object.values(SCHEDULES)) expect(s.describe).toMatch(new RegExp(`^${attemptsOf(s)} attempts`));
  });

  it('the time scale divides every wait; after the last attempt there is none', () => {
    const s = SCHEDULES.paymos;
    s.waitsMs.forEach((nominal, i) => expect(waitAfter(s, i + 1, 120, Math.random)).toBe(nominal / 120));
    expect(waitAfter(SCHEDULES.factuarea, 1, 120, fixed(0.5))).toBe(500);
    expect(waitAfter(s, 11, 1, Math.random)).toBeUndefined();
    expect(waitAfter(SCHEDULES.factuarea, 8, 1, Math.random)).toBeUndefined();
    expect(waitAfter(SCHEDULES.factuarea, 7, 0.5, fixed(0.5))).toBe(6 * DAY);
  });

  it('a seed gives the same numbers again, another seed others; all in [0, 1)', () => {
    const a = Array.from({ length: 1000 }, seededRandom(7));
    expect(Array.from({ length: 1000 }, seededRandom(7))).toEqual(a);
    expect(Array.from({ length: 1000 }, seededRandom(8))).not.toEqual(a);
    expect(a.every((x) => x >= 0 && x < 1)).toBe(true);
  });

  it('isSuccess: 2xx only', () => {
    expect([199, 200, 201, 204, 299, 300, 0].map((status) => isSuccess({ status }))).toEqual([false, true, true, true, true, false, false]);
  });

  it('formatDuration', () => {
    expect([450, 2_500, 90_000, 978 * MIN].map(formatDuration)).toEqual(['450 ms', '2.5 s', '1.5 min', '16.3 h']);
  });
});
