import { BatchWaitTimeout, MicroBatcher } from './micro-batcher';
import { ControlledFlush, tick, track } from '../../test/support/controlled';

/**
 * The two bounds the review fixes added to the batcher: `maxWaitMs` (a call that waited too long
 * for its batch fails instead of answering late) and `weigh`/`maxWeight` (no statement carries
 * more than the cap, but an oversize call still goes, alone).
 */

describe('MicroBatcher maxWaitMs', () => {
  beforeEach(() => {
    // Date.now and timers are the test's; setImmediate (the batcher's turn) and promises stay real.
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'], now: 1_000_000 });
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('a call still waiting past maxWaitMs rejects with BatchWaitTimeout while the running batch continues', async () => {
    const flush = new ControlledFlush<string, string>();
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 10, maxInFlight: 1, maxWaitMs: 100 });

    const running = track(batcher.submit('a'));
    await tick();
    expect(flush.batches).toEqual([['a']]);

    const waiting = track(batcher.submit('b'));
    await tick();
    expect(flush.batches).toEqual([['a']]); // the only slot is taken: b waits
    expect(waiting.settled).toBe(false);

    jest.advanceTimersByTime(101);
    // A later arrival makes the batcher look at its queue again.
    const later = track(batcher.submit('c'));
    await tick();

    expect(waiting.settled).toBe(true);
    expect(waiting.error).toBeInstanceOf(BatchWaitTimeout);
    expect((waiting.error as Error).name).toBe('BatchWaitTimeout');
    expect((waiting.error as Error).message).toBe('waited 101 ms for a batch');
    // The running batch is untouched, and the fresh call keeps its place.
    expect(running.settled).toBe(false);
    expect(later.settled).toBe(false);
    expect(flush.batches).toEqual([['a']]);

    flush.pending[0].resolve(['A']);
    await tick();
    expect(running).toEqual({ settled: true, value: 'A' });
    // b is gone for good: the next batch is c alone.
    expect(flush.batches).toEqual([['a'], ['c']]);
    flush.pending[1].resolve(['C']);
    await tick();
    expect(later).toEqual({ settled: true, value: 'C' });
  });

  it('rejects the waiting call once maxWaitMs has passed, without another call or the running batch ending', async () => {
    const flush = new ControlledFlush<string, string>();
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 10, maxInFlight: 1, maxWaitMs: 100 });

    const running = track(batcher.submit('a'));
    await tick();
    const waiting = track(batcher.submit('b'));
    await tick();
    expect(waiting.settled).toBe(false);

    // The running batch hangs; nothing else arrives. The bound alone must answer b.
    jest.advanceTimersByTime(150);
    await tick();
    await tick();

    expect(waiting.settled).toBe(true);
    expect(waiting.error).toBeInstanceOf(BatchWaitTimeout);
    expect(running.settled).toBe(false);
    expect(flush.batches).toEqual([['a']]);

    flush.pending[0].resolve(['A']);
    await tick();
    expect(running).toEqual({ settled: true, value: 'A' });
    expect(flush.batches).toEqual([['a']]); // b was never flushed late
  });

  it('when the running batch ends after the bound, the calls that waited too long fail and are not flushed; the others are', async () => {
    const flush = new ControlledFlush<string, string>();
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 10, maxInFlight: 1, maxWaitMs: 100 });

    const running = track(batcher.submit('a'));
    await tick();
    const old = track(batcher.submit('b'));
    await tick();
    jest.advanceTimersByTime(60);
    const young = track(batcher.submit('c'));
    await tick();
    jest.advanceTimersByTime(60); // b has waited 120 ms, c 60 ms

    flush.pending[0].resolve(['A']);
    await tick();

    expect(running).toEqual({ settled: true, value: 'A' });
    expect(old.settled).toBe(true);
    expect(old.error).toBeInstanceOf(BatchWaitTimeout);
    expect(young.settled).toBe(false);
    expect(flush.batches).toEqual([['a'], ['c']]);
    flush.pending[1].resolve(['C']);
    await tick();
    expect(young).toEqual({ settled: true, value: 'C' });
  });

  it('a call that waited exactly maxWaitMs is still flushed', async () => {
    const flush = new ControlledFlush<string, string>();
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 10, maxInFlight: 1, maxWaitMs: 100 });

    track(batcher.submit('a'));
    await tick();
    const waiting = track(batcher.submit('b'));
    await tick();
    jest.advanceTimersByTime(100);
    flush.pending[0].resolve(['A']);
    await tick();

    expect(waiting.settled).toBe(false);
    expect(flush.batches).toEqual([['a'], ['b']]);
    flush.pending[1].resolve(['B']);
    await tick();
    expect(waiting).toEqual({ settled: true, value: 'B' });
  });

  it('without maxWaitMs a call waits as long as it takes', async () => {
    const flush = new ControlledFlush<string, string>();
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 10, maxInFlight: 1 });

    track(batcher.submit('a'));
    await tick();
    const waiting = track(batcher.submit('b'));
    await tick();
    jest.advanceTimersByTime(60_000);
    const later = track(batcher.submit('c'));
    await tick();
    expect(waiting.settled).toBe(false);

    flush.pending[0].resolve(['A']);
    await tick();
    expect(flush.batches).toEqual([['a'], ['b', 'c']]);
    flush.pending[1].resolve(['B', 'C']);
    await tick();
    expect(waiting).toEqual({ settled: true, value: 'B' });
    expect(later).toEqual({ settled: true, value: 'C' });
  });
});

describe('MicroBatcher weigh / maxWeight', () => {
  const sum = (batch: number[]) => batch.reduce((a, b) => a + b, 0);

  it('splits a burst so that no batch exceeds maxWeight, except a single oversize call, which goes alone', async () => {
    const flush = new ControlledFlush<number, number>();
    const batcher = new MicroBatcher(flush.fn, {
      maxBatch: 100,
      maxInFlight: 100,
      weigh: (n: number) => n,
      maxWeight: 10,
    });
    const inputs = [4, 4, 4, 3, 3, 20, 1, 9, 2, 11];
    const calls = inputs.map((n) => track(batcher.submit(n)));
    await tick();

    expect(flush.batches).toEqual([[4, 4], [4, 3, 3], [20], [1, 9], [2], [11]]);
    for (const batch of flush.batches) {
      if (batch.length > 1) expect(sum(batch)).toBeLessThanOrEqual(10);
      else if (sum(batch) > 10) expect(batch).toHaveLength(1);
    }
    // Every call is in exactly one batch, in order.
    expect(flush.batches.flat()).toEqual(inputs);

    flush.pending.forEach((d, i) => d.resolve(flush.batches[i].map((n) => n * 10)));
    await tick();
    expect(calls.map((c) => c.value)).toEqual(inputs.map((n) => n * 10));
  });

  it('an oversize call at the head of the queue is flushed alone, not held back', async () => {
    const flush = new ControlledFlush<string, string>();
    const batcher = new MicroBatcher(flush.fn, {
      maxBatch: 100,
      maxInFlight: 1,
      weigh: (s: string) => s.length,
      maxWeight: 5,
    });
    const big = track(batcher.submit('x'.repeat(50)));
    const small = track(batcher.submit('ab'));
    await tick();
    expect(flush.batches).toEqual([['x'.repeat(50)]]);
    flush.pending[0].resolve(['BIG']);
    await tick();
    expect(big).toEqual({ settled: true, value: 'BIG' });
    expect(flush.batches).toEqual([['x'.repeat(50)], ['ab']]);
    flush.pending[1].resolve(['AB']);
    await tick();
    expect(small).toEqual({ settled: true, value: 'AB' });
  });

  it('maxBatch still applies when the weight allows more', async () => {
    const flush = new ControlledFlush<number, number>();
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 2, maxInFlight: 100, weigh: () => 1, maxWeight: 1_000 });
    [1, 2, 3, 4, 5].forEach((n) => batcher.submit(n).catch(() => undefined));
    await tick();
    expect(flush.batches).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('a burst exactly at maxWeight is one batch', async () => {
    const flush = new ControlledFlush<number, number>();
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 100, maxInFlight: 100, weigh: (n: number) => n, maxWeight: 9 });
    [3, 3, 3, 1].forEach((n) => batcher.submit(n).catch(() => undefined));
    await tick();
    expect(flush.batches).toEqual([[3, 3, 3], [1]]);
  });
});
