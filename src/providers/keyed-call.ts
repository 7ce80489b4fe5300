import { subscribe } from 'node:diagnostics_channel';
import type { ClientRequest, IncomingMessage } from 'node:http';

/**
 * What one HTTP request of an official client carrying an idempotency key was answered, watched from
 * Node's own `http.client.*` diagnostics channels: for a client that neither exposes the answer's
 * status and headers on its errors nor lets its own retries be turned off (`@mollie/api-client`
 * retries a 5xx twice, 2 s apart, and reports no `Retry-After`). The call itself still goes through
 * the client; this only reads what came back, and keeps the client from sending the key a second
 * time within one call: the outbox retries, with the same key, on its own schedule (docs/commands.md).
 * A read (`watchRead`) is watched the same way, for the `Retry-After` its client drops.
 */
export interface KeyedCall {
  /** The status and `Retry-After` of the first request's answer; undefined while none came. */
  readonly answer: { status: number; retryAfter: string | null } | undefined;
  /** Settles with the first request's answer (its status line and headers), as soon as it comes. */
  readonly answered: Promise<{ status: number; retryAfter: string | null }>;
  /** Requests the client made again with the key within this call, stopped before they were sent. */
  readonly stoppedRetries: number;
  /** Ends the request in flight, if any (a call given up on by its timeout). */
  abort(): void;
  /** Stops watching: once the client's call has settled (until then a retry of it is still stopped). */
  end(): void;
}

interface Watch {
  /** Whether a request is one of this call's. */
  matches(request: ClientRequest): boolean;
  /** Whether a second matching request is the client's own retry, stopped (a write with a key), or another call's (a read). */
  stopsRetries: boolean;
  request?: ClientRequest;
  answer?: { status: number; retryAfter: string | null };
  answerCame: (answer: { status: number; retryAfter: string | null }) => void;
  stoppedRetries: number;
}

/** Calls watched now (a handful at most: the commands and reads in flight). */
const watches = new Set<Watch>();
let subscribed = false;

function keyOf(request: ClientRequest, header: string): string | null {
  // node-fetch sets every header as an array of its values.
  const value = request.getHeader(header);
  const one = Array.isArray(value) && value.length === 1 ? value[0] : value;
  return typeof one === 'string' ? one : null;
}

function subscribeOnce(): void {
  if (subscribed) return;
  subscribed = true;
  subscribe('http.client.request.start', (message) => {
    if (watches.size === 0) return;
    const { request } = message as { request: ClientRequest };
    let retried: Watch | undefined;
    for (const watch of watches) {
      if (!watch.matches(request)) continue;
      // The first request of a call is the first that matches it after the call began.
      if (watch.request === undefined) {
        watch.request = request;
        return;
      }
      if (watch.stopsRetries) retried = watch;
    }
    if (!retried) return;
    // Every call with this key has sent its request: this is a client's own retry, ended before
    // it is written (the client makes a connection per request).
    retried.stoppedRetries++;
    request.destroy(new Error('retry left to the outbox'));
  });
  subscribe('http.client.response.finish', (message) => {
    if (watches.size === 0) return;
    const { request, response } = message as { request: ClientRequest; response: IncomingMessage };
    for (const watch of watches) {
      if (watch.request !== request || watch.answer !== undefined) continue;
      const retryAfter = response.headers['retry-after'];
      watch.answer = { status: response.statusCode ?? 0, retryAfter: typeof retryAfter === 'string' ? retryAfter : null };
      watch.answerCame(watch.answer);
      return;
    }
  });
}

/** Watches the requests that carry `key` in `header`, from now until `end()`. */
export function watchKeyedCall(header: string, key: string): KeyedCall {
  const name = header.toLowerCase();
  return watch((request) => keyOf(request, name) === key, true);
}

/**
 * Watches the first request of a read made from now on (`GET` of `path` on `host`, as the client
 * sends it) for its status and `Retry-After`, for a client that drops them from its errors. A read
 * carries no key: two reads of one object at once may each see the other's answer, which says the
 * same; nothing is stopped.
 */
export function watchRead(host: string, path: string): KeyedCall {
  return watch((request) => request.method === 'GET' && request.host === host && request.path === path, false);
}

function watch(matches: Watch['matches'], stopsRetries: boolean): KeyedCall {
  subscribeOnce();
  let answerCame!: Watch['answerCame'];
  const answered = new Promise<{ status: number; retryAfter: string | null }>((resolve) => (answerCame = resolve));
  const watch: Watch = { matches, stopsRetries, stoppedRetries: 0, answerCame };
  watches.add(watch);
  return {
    answered,
    get answer() {
      return watch.answer;
    },
    get stoppedRetries() {
      return watch.stoppedRetries;
    },
    abort() {
      watch.request?.destroy(new Error('no answer in time'));
    },
    end() {
      watches.delete(watch);
    },
  };
}
