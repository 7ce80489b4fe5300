import { withTimeout } from './with-timeout';

const never = () => new Promise<never>(() => undefined);

describe('withTimeout', () => {
  afterEach(() => {
    jest.useRealTimers();
  });

  it('resolves with the value of a promise that settles in time', async () => {
    await expect(withTimeout(Promise.resolve(42), 1000, 'insert')).resolves.toBe(42);
  });

  it('rejects with the error of a promise that fails in time', async () => {
    const err = new Error('connection refused');
    await expect(withTimeout(Promise.reject(err), 1000, 'insert')).rejects.toBe(err);
  });

  it('rejects a promise that never settles with a message naming the label (real 5 ms timer)', async () => {
    await expect(withTimeout(never(), 5, 'inbox insert')).rejects.toThrow(new Error('inbox insert timed out after 5 ms'));
  });

  it('rejects exactly when the time is up, not before (fake timers)', async () => {
    jest.useFakeTimers();
    let outcome: string | undefined;
    withTimeout(never(), 1000, 'enqueue').then(
      () => (outcome = 'resolved'),
      (err: Error) => (outcome = err.message),
    );
    await jest.advanceTimersByTimeAsync(999);
    expect(outcome).toBe(undefined);
    await jest.advanceTimersByTimeAsync(1);
    expect(outcome).toBe('enqueue timed out after 1000 ms');
  });

  it('leaves no timer behind once the promise settles', async () => {
    jest.useFakeTimers();
    const result = withTimeout(Promise.resolve('ok'), 60_000, 'x');
    await expect(result).resolves.toBe('ok');
    expect(jest.getTimerCount()).toBe(0);
  });

  it('leaves no timer behind once it has timed out', async () => {
    jest.useFakeTimers();
    const result = withTimeout(never(), 10, 'x');
    const settled = result.catch((err: Error) => err.message);
    await jest.advanceTimersByTimeAsync(10);
    expect(await settled).toBe('x timed out after 10 ms');
    expect(jest.getTimerCount()).toBe(0);
  });

  it('keeps the value of a promise that settles just before the deadline', async () => {
    jest.useFakeTimers();
    const slow = new Promise<string>((resolve) => setTimeout(() => resolve('late but in time'), 999));
    const result = withTimeout(slow, 1000, 'x');
    await jest.advanceTimersByTimeAsync(999);
    await expect(result).resolves.toBe('late but in time');
  });
});
