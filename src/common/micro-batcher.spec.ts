import { MicroBatcher } from './micro-batcher';
import { ControlledFlush, tick, track } from '../../test/support/controlled';

/** Runs `fn` with faked timers (setImmediate and nextTick left real, for `tick`), and puts the real ones back. */
async function withFakeTimers(fn: () => Promise<void>): Promise<void> {
  jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick'] });
  try {
    await fn();
  } finally {
    jest.useRealTimers();
  }
}

describe('MicroBatcher', () => {
  it('puts calls made in the same tick into one batch', async () => {
    const flush = new ControlledFlush<number, string>();
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 100, maxInFlight: 2 });
    const calls = [1, 2, 3].map((n) => batcher.submit(n));
    expect(flush.batches).toEqual([]); // nothing runs before the tick ends
    await tick();
    expect(flush.batches).toEqual([[1, 2, 3]]);
    flush.pending[0].resolve(['a', 'b', 'c']);
    await expect(Promise.all(calls)).resolves.toEqual(['a', 'b', 'c']);
  });

  it('asks a limit given as a function each time a batch could start', async () => {
    const flush = new ControlledFlush<number, number>();
    let limit = 1;
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 1, maxInFlight: () => limit });
    const calls = [1, 2, 3].map((n) => batcher.submit(n));
    await tick();
    expect(flush.batches).toEqual([[1]]);
    // The limit rises: the next batch to start sees it, two run at once.
    limit = 2;
    flush.pending[0].resolve([10]);
    await tick();
    expect(flush.batches).toEqual([[1], [2], [3]]);
    flush.pending[1].resolve([20]);
    flush.pending[2].resolve([30]);
    await expect(Promise.all(calls)).resolves.toEqual([10, 20, 30]);
  });

  it('with a limit given as a function, calls waiting behind a running batch are looked at again every recheckMs', () =>
    withFakeTimers(async () => {
      const flush = new ControlledFlush<number, number>();
      let limit = 1;
      const batcher = new MicroBatcher(flush.fn, { maxBatch: 1, maxInFlight: () => limit, recheckMs: 50 });
      const calls = [1, 2].map((n) => batcher.submit(n));
      await tick();
      expect(flush.batches).toEqual([[1]]);
      // The first batch still runs, nothing is submitted: only time passes, and the limit changed.
      limit = 2;
      jest.advanceTimersByTime(49);
      await tick();
      expect(flush.batches).toEqual([[1]]);
      jest.advanceTimersByTime(1);
      await tick();
      expect(flush.batches).toEqual([[1], [2]]);
      flush.pending[0].resolve([10]);
      flush.pending[1].resolve([20]);
      await expect(Promise.all(calls)).resolves.toEqual([10, 20]);
    }));

  it('gives a limit function how long the oldest running batch has run: one held up long enough lets others start', () =>
    withFakeTimers(async () => {
      const flush = new ControlledFlush<number, number>();
      const asked: number[] = [];
      const batcher = new MicroBatcher(flush.fn, {
        maxBatch: 1,
        maxInFlight: (oldestRunningMs) => (asked.push(oldestRunningMs), oldestRunningMs >= 200 ? 2 : 1),
        recheckMs: 100,
      });
      const calls = [1, 2].map((n) => batcher.submit(n));
      await tick();
      expect(flush.batches).toEqual([[1]]);
      expect(asked[0]).toBe(0); // nothing ran yet
      jest.advanceTimersByTime(100);
      await tick();
      expect(flush.batches).toEqual([[1]]);
      jest.advanceTimersByTime(100);
      await tick();
      expect(flush.batches).toEqual([[1], [2]]);
      expect(Math.max(...asked)).toBeGreaterThanOrEqual(200);
      flush.pending[0].resolve([10]);
      flush.pending[1].resolve([20]);
      await expect(Promise.all(calls)).resolves.toEqual([10, 20]);
    }));

  it('maps results back to calls in order', async () => {
    const batcher = new MicroBatcher(async (inputs: number[]) => inputs.map((n) => n * 10), { maxBatch: 100, maxInFlight: 1 });
    const results = await Promise.all([5, 1, 4, 2].map((n) => batcher.submit(n)));
    expect(results).toEqual([50, 10, 40, 20]);
  });

  it('flushes a lone call on the next tick, alone', async () => {
    const flush = new ControlledFlush<string, string>();
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 100, maxInFlight: 2 });
    const first = batcher.submit('a');
    await tick();
    const second = batcher.submit('b');
    await tick();
    expect(flush.batches).toEqual([['a'], ['b']]);
    flush.pending[1].resolve(['B']);
    flush.pending[0].resolve(['A']);
    expect(await first).toBe('A');
    expect(await second).toBe('B');
  });

  it('rejects every call of a batch whose flush throws, with the same error, but not later batches', async () => {
    const flush = new ControlledFlush<number, number>();
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 100, maxInFlight: 1 });
    const failing = [1, 2, 3].map((n) => track(batcher.submit(n)));
    await tick();
    const boom = new Error('database down');
    flush.pending[0].reject(boom);
    await tick();
    expect(failing.map((s) => s.settled)).toEqual([true, true, true]);
    expect(failing.map((s) => s.error)).toEqual([boom, boom, boom]);
    for (const s of failing) expect(s.error).toBe(boom);

    const later = [4, 5].map((n) => batcher.submit(n));
    await tick();
    expect(flush.batches).toEqual([[1, 2, 3], [4, 5]]);
    flush.pending[1].resolve([40, 50]);
    await expect(Promise.all(later)).resolves.toEqual([40, 50]);
  });

  it('a failed batch does not fail the batch queued behind it', async () => {
    const flush = new ControlledFlush<number, number>();
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 2, maxInFlight: 1 });
    const calls = [1, 2, 3, 4].map((n) => track(batcher.submit(n)));
    await tick();
    expect(flush.batches).toEqual([[1, 2]]);
    flush.pending[0].reject(new Error('first batch failed'));
    await tick();
    expect(flush.batches).toEqual([
      [1, 2],
      [3, 4],
    ]);
    flush.pending[1].resolve([30, 40]);
    await tick();
    expect(calls.map((s) => (s.error as Error | undefined)?.message ?? s.value)).toEqual([
      'first batch failed',
      'first batch failed',
      30,
      40,
    ]);
  });

  it('splits a burst larger than maxBatch', async () => {
    const flush = new ControlledFlush<number, number>();
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 3, maxInFlight: 10 });
    const calls = Array.from({ length: 8 }, (_, i) => batcher.submit(i));
    await tick();
    expect(flush.batches).toEqual([
      [0, 1, 2],
      [3, 4, 5],
      [6, 7],
    ]);
    flush.pending.forEach((d, b) => d.resolve(flush.batches[b].map((n) => n * 2)));
    await expect(Promise.all(calls)).resolves.toEqual([0, 2, 4, 6, 8, 10, 12, 14]);
  });

  it('never runs more than maxInFlight flushes at once; waiting calls form the next batches', async () => {
    const flush = new ControlledFlush<number, number>();
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 2, maxInFlight: 2 });
    const calls = Array.from({ length: 9 }, (_, i) => batcher.submit(i));
    await tick();
    expect(flush.batches).toEqual([
      [0, 1],
      [2, 3],
    ]);
    expect(flush.inFlight).toBe(2);

    // More calls while both slots are busy: they wait.
    calls.push(batcher.submit(9));
    await tick();
    expect(flush.batches.length).toBe(2);

    flush.pending[1].resolve([20, 30]);
    await tick();
    expect(flush.batches.length).toBe(3);
    expect(flush.batches[2]).toEqual([4, 5]);
    expect(flush.inFlight).toBe(2);

    // Settle the oldest running batch, one at a time, until everything has been flushed.
    const done = new Set<number>([1]);
    while (done.size < flush.pending.length) {
      const oldest = flush.pending.findIndex((_, i) => !done.has(i));
      flush.pending[oldest].resolve(flush.batches[oldest].map((n) => n * 10));
      done.add(oldest);
      await tick();
      expect(flush.inFlight).toBeLessThanOrEqual(2);
    }
    await expect(Promise.all(calls)).resolves.toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
    expect(flush.maxInFlight).toBe(2);
    expect(flush.batches.flat()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('with maxInFlight 1, runs batches strictly one after another', async () => {
    const flush = new ControlledFlush<string, string>();
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 1, maxInFlight: 1 });
    const calls = ['a', 'b', 'c'].map((s) => batcher.submit(s));
    for (let i = 0; i < 3; i++) {
      await tick();
      expect(flush.batches.length).toBe(i + 1);
      expect(flush.inFlight).toBe(1);
      flush.pending[i].resolve([flush.batches[i][0].toUpperCase()]);
    }
    await expect(Promise.all(calls)).resolves.toEqual(['A', 'B', 'C']);
    expect(flush.maxInFlight).toBe(1);
    expect(flush.batches).toEqual([['a'], ['b'], ['c']]);
  });

  it('keeps working after many batches (the in-flight count is given back)', async () => {
    const flush = new ControlledFlush<number, number>();
    const batcher = new MicroBatcher(flush.fn, { maxBatch: 5, maxInFlight: 1 });
    for (let round = 0; round < 20; round++) {
      const call = batcher.submit(round);
      await tick();
      expect(flush.batches.length).toBe(round + 1);
      if (round % 2 === 0) flush.pending[round].resolve([round]);
      else flush.pending[round].reject(new Error(`round ${round}`));
      if (round % 2 === 0) expect(await call).toBe(round);
      else await expect(call).rejects.toThrow(`round ${round}`);
    }
    expect(flush.maxInFlight).toBe(1);
  });
});
