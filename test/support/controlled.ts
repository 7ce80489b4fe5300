/** Hand-settled promises for tests of code that coalesces or schedules work (the micro-batcher). */

export interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (err: unknown) => void;
}

export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets a pending setImmediate run (it is never faked by these tests), and every promise callback queued before it. */
export const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A flush under the test's control: records each batch and waits for the test to settle it. */
export class ControlledFlush<In, Out> {
  readonly batches: In[][] = [];
  readonly pending: Array<Deferred<Out[]>> = [];
  inFlight = 0;
  maxInFlight = 0;

  readonly fn = (inputs: In[]): Promise<Out[]> => {
    this.batches.push([...inputs]);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    const d = deferred<Out[]>();
    this.pending.push(d);
    return d.promise.finally(() => {
      this.inFlight--;
    });
  };
}

/** How a call settled, readable without awaiting it. */
export function track<T>(promise: Promise<T>): { settled: boolean; value?: T; error?: unknown } {
  const state: { settled: boolean; value?: T; error?: unknown } = { settled: false };
  promise.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error) => Object.assign(state, { settled: true, error }),
  );
  return state;
}
