import { retryDelayMs } from './backoff';

/**
 * Carrier retry delays: from 1 s, doubling, capped at 5 min, with jitter (up to half
 * of the nominal delay again, at random, never past the cap); a carrier's Retry-After is honoured,
 * under the same cap.
 */
describe('retryDelayMs (carrier calls and event deliveries)', () => {
  const BASE = 1_000;
  const CAP = 300_000;
  const service = { backoff: (attempts: number, retryAfterMs?: number) => retryDelayMs(attempts, BASE, CAP, retryAfterMs) };
  const nominal = (n: number) => Math.min(CAP, BASE * 2 ** (n - 1));
  const attempts = Array.from({ length: 12 }, (_, i) => i + 1);

  afterEach(() => jest.restoreAllMocks());

  it('the nominal delays are 1 s, 2 s, 4 s … doubling, and 5 min from attempt 10 on', () => {
    expect(attempts.map(nominal)).toEqual([
      1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000, 300_000, 300_000,
    ]);
  });

  it.each(attempts)('attempt %i: every delay lies in [nominal, 1.5·nominal], never above the cap', (n) => {
    const c = nominal(n);
    for (let i = 0; i < 500; i++) {
      const delay = service.backoff(n);
      expect(delay).toBeGreaterThanOrEqual(c);
      expect(delay).toBeLessThanOrEqual(Math.min(CAP, c * 1.5));
    }
  });

  it('the jitter spreads the delays (not one fixed value)', () => {
    const delays = new Set(Array.from({ length: 50 }, () => service.backoff(4)));
    expect(delays.size).toBeGreaterThan(1);
  });

  it.each(attempts)('attempt %i with Math.random() = 0: exactly the nominal delay', (n) => {
    jest.spyOn(Math, 'random').mockReturnValue(0);
    expect(service.backoff(n)).toBe(nominal(n));
  });

  it('exact values at both ends for the first, a middle, the last uncapped and a capped attempt', () => {
    const random = jest.spyOn(Math, 'random');
    random.mockReturnValue(0);
    expect([1, 5, 9, 10, 12].map((n) => service.backoff(n))).toEqual([1_000, 16_000, 256_000, 300_000, 300_000]);
    random.mockReturnValue(0.999);
    expect([1, 5, 9, 10, 12].map((n) => service.backoff(n))).toEqual([
      expect.closeTo(1_499.5, 6),
      expect.closeTo(23_992, 6),
      300_000,
      300_000,
      300_000,
    ]);
  });

  it('a very large attempt count stays at the cap (no overflow to Infinity or NaN)', () => {
    jest.spyOn(Math, 'random').mockReturnValue(0.5);
    for (const n of [31, 100, 1_000, 1_000_000]) expect(service.backoff(n)).toBe(CAP);
  });

  describe('Retry-After', () => {
    it('larger than the backoff wins', () => {
      jest.spyOn(Math, 'random').mockReturnValue(0.999);
      expect(service.backoff(1, 5_000)).toBe(5_000);
      expect(service.backoff(3, 60_000)).toBe(60_000);
    });

    it('smaller than the backoff loses to it', () => {
      jest.spyOn(Math, 'random').mockReturnValue(0);
      expect(service.backoff(3, 1_000)).toBe(4_000);
      expect(service.backoff(3, 0)).toBe(4_000);
    });

    it('larger than the cap is still capped at 300000', () => {
      jest.spyOn(Math, 'random').mockReturnValue(0);
      expect(service.backoff(1, 3_600_000)).toBe(CAP);
      expect(service.backoff(12, 300_001)).toBe(CAP);
      expect(service.backoff(12, Number.MAX_SAFE_INTEGER)).toBe(CAP);
    });

    it('with real randomness, a Retry-After of 10 s on attempt 1 is always exactly 10 s', () => {
      for (let i = 0; i < 200; i++) expect(service.backoff(1, 10_000)).toBe(10_000);
    });
  });
});
