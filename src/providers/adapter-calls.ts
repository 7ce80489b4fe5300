/**
 * Calling a provider adapter where a request or a job waits for it. An adapter is the host's code
 * (docs/providers.md): typed synchronous or not, a JavaScript host may hand back a promise, one
 * that rejects, or one that never settles. Whatever it does, the caller gets a value or an
 * AdapterCallError within its deadline, and the process never sees an unhandled rejection.
 */

/** The codes a failed adapter call is recorded under (a delivery's `last_error`, a log line). */
export type AdapterCallFailure = 'provider_adapter_failed' | 'provider_adapter_timeout' | 'provider_adapter_invalid';

/** An adapter's call that threw, rejected, ran past its deadline, or returned what the interface cannot take. */
export class AdapterCallError extends Error {
  constructor(
    readonly code: AdapterCallFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AdapterCallError';
  }
}

/** Whether `value` is a promise or any thenable (reading `then` may itself throw: the caller catches). */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/** A settlement nobody waits for any more: handled, so that its rejection is never reported unhandled. */
export function ignoreLate(value: unknown): void {
  try {
    if (isThenable(value)) Promise.resolve(value).then(undefined, () => undefined);
  } catch {
    // A thenable whose `then` cannot be read settles nothing.
  }
}

/**
 * A thrown value as one line of text, whatever it is: an Error's message, a string, or its type
 * (reading a hostile value's `message` or `toString` may throw; this never does).
 */
export function describeThrown(err: unknown): string {
  try {
    if (err instanceof Error) return String(err.message).split('\n')[0].slice(0, 500);
    if (typeof err === 'string') return err.split('\n')[0].slice(0, 500);
    return `a thrown ${err === null ? 'null' : typeof err}`;
  } catch {
    return 'a thrown value that cannot be read';
  }
}

export interface AdapterCall<T> {
  /** What is called, for the error's message: `provider "acme" normalize`. */
  what: string;
  /** The longest wait for a promise it returns; a value returned at once is never timed. */
  timeoutMs: number;
  call: () => T | PromiseLike<T>;
  /** Errors it throws that the caller handles as they are (MalformedPayloadError, a ProviderApiError); others are wrapped. */
  passThrough?: (err: unknown) => boolean;
}

/**
 * Runs `call` and resolves to what it returned, awaited. A throw or a rejection is an
 * AdapterCallError `provider_adapter_failed` (unless `passThrough` keeps it as it is); a promise
 * still pending at `timeoutMs` is `provider_adapter_timeout`, and what it does later is ignored.
 */
export async function callAdapter<T>({ what, timeoutMs, call, passThrough }: AdapterCall<T>): Promise<Awaited<T>> {
  const failed = (err: unknown): never => {
    if (passThrough?.(err)) throw err;
    throw new AdapterCallError('provider_adapter_failed', `${what} failed: ${describeThrown(err)}`, { cause: err });
  };
  let value: T | PromiseLike<T>;
  try {
    value = call();
    // A value returned at once (the usual case, and the interface's): no timer.
    if (!isThenable(value)) return value as Awaited<T>;
  } catch (err) {
    return failed(err);
  }
  let timer: NodeJS.Timeout | undefined;
  const pending = Promise.resolve(value);
  try {
    return await Promise.race([
      pending.then(undefined, failed),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new AdapterCallError('provider_adapter_timeout', `${what} did not answer within ${timeoutMs} ms`)), timeoutMs);
        // A process shutting down does not wait for an adapter that never answers.
        timer.unref?.();
      }),
    ]);
  } finally {
    clearTimeout(timer);
    ignoreLate(pending);
  }
}
