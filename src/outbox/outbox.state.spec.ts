import { canRetry, decideAttempt, OUTBOX_STATUSES, OUTBOX_TRANSITIONS } from './outbox.state';

describe('the outbox message lifecycle (outbox.state.ts)', () => {
  it('the transition table, cell by cell', () => {
    expect(OUTBOX_STATUSES).toEqual(['pending', 'dispatched', 'dead']);
    expect(OUTBOX_TRANSITIONS).toEqual({ pending: ['pending', 'dispatched', 'dead'], dispatched: [], dead: ['pending'] });
  });

  it.each([
    ['pending', false],
    ['dispatched', false],
    ['dead', true],
  ] as const)('an operator may retry a %s message: %s', (status, expected) => {
    expect(canRetry(status)).toBe(expected);
  });

  describe('decideAttempt: the status an attempt leaves the message in', () => {
    it('done is dispatched, whatever the attempt count', () => {
      expect(decideAttempt({ kind: 'done' }, 1, 3)).toEqual({ status: 'dispatched' });
      expect(decideAttempt({ kind: 'done' }, 3, 3)).toEqual({ status: 'dispatched' });
    });
    it('dead is dead at once, with its reason, and drops the trace of a call', () => {
      expect(decideAttempt({ kind: 'dead', reason: 'carrier answered 400' }, 1, 15)).toEqual({
        status: 'dead',
        reason: 'carrier answered 400',
        keepCallTrace: false,
      });
    });
    it('retry under the budget: pending, with the reason, the Retry-After and whether the effect may exist', () => {
      expect(decideAttempt({ kind: 'retry', reason: 'timeout', retryAfterMs: 5_000, mayHaveHappened: true }, 2, 3)).toEqual({
        status: 'pending',
        reason: 'timeout',
        retryAfterMs: 5_000,
        keepCallTrace: true,
      });
      expect(decideAttempt({ kind: 'retry', reason: 'carrier answered 503' }, 1, 3)).toEqual({
        status: 'pending',
        reason: 'carrier answered 503',
        retryAfterMs: undefined,
        keepCallTrace: false,
      });
    });
    it('retry at the last attempt of the budget: dead, saying after how many', () => {
      expect(decideAttempt({ kind: 'retry', reason: 'carrier answered 503' }, 3, 3)).toEqual({
        status: 'dead',
        reason: 'carrier answered 503 (after 3 attempts)',
        keepCallTrace: false,
      });
      expect(decideAttempt({ kind: 'retry', reason: 'timeout', mayHaveHappened: true }, 15, 15)).toEqual({
        status: 'dead',
        reason: 'timeout (after 15 attempts)',
        keepCallTrace: true,
      });
    });
  });
});
