import { randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the stub answered (or refused). */
export interface SeenRequest {
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  stripeAccount: string | undefined;
  /** The `Stripe-Context` header (stripe-node sends it for thin-event fetches). */
  stripeContext?: string | undefined;
  status: number;
  /** When it arrived (Date.now()). */
  at?: number;
}

/** The kinds of object the stub retrieves, each at `GET /v1/<plural>/{id}`. */
export type StubObjectKind = 'payment_intent' | 'charge' | 'dispute';

/** How failing object requests answer: `status` with a Stripe-shaped error body. */
export interface StubFailure {
  status: number;
  /** Sent as `Retry-After: <n>` when given. */
  retryAfterSeconds?: number;
}

const OBJECT_ROUTES: Record<string, StubObjectKind> = {
  payment_intents: 'payment_intent',
  charges: 'charge',
  disputes: 'dispute',
};
const OBJECT_PATH = /^\/v1\/(payment_intents|charges|disputes)\/([^/]+)$/;

/** A Stripe-shaped event as `GET /v1/events` lists it. */
export interface StubEvent {
  id: string;
  object: 'event';
  api_version: string;
  created: number;
  livemode: false;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
  type: string;
  account?: string;
  data: { object: Record<string, unknown> };
}

/**
 * A local stand-in for Stripe's Events API (`GET /v1/events`) and object retrieval
 * (`GET /v1/payment_intents/{id}`, `/v1/charges/{id}`, `/v1/disputes/{id}`), on 127.0.0.1 and a
 * free port.
 *
 * Events:
 * `created[gte]`/`created[lt]` (unix seconds), `limit` (capped at `pageSize`, 10 by default, so a
 * few events make several pages), `starting_after`, newest first with `has_more`, as Stripe lists;
 * bearer auth (a wrong key answers 401 with Stripe's error body); `Stripe-Account` scoping (an
 * event added for an account is listed only with that header, and carries `account` as a Connect
 * event does). `failNext(n)` makes the next n list requests answer 429; `holdNext()` keeps the next
 * list request unanswered until `release()`; every request is recorded in `requests`.
 *
 * Objects: `putObject(object, account?)` stores an object by its `id` under an account ('' = the
 * platform's own; putting the same id again replaces it, as the object's state changes), and
 * `deleteObject(id, account?)` removes it. The three routes check the bearer key as `/v1/events`
 * does (401, same body) and read the account from `Stripe-Context`, else `Stripe-Account`, else ''.
 * An object is found only under its own account and only at the route of its `object` kind;
 * otherwise 404 with Stripe's `resource_missing` body (`No such payment_intent: 'pi_…'`). Found:
 * 200 with the object. Failure modes, for object requests only (`failNext` stays for the list):
 * `failObjects(n, { status, retryAfterSeconds? })` fails the next n object requests,
 * `failObjectsUntil(untilMs, …)` fails every one while `Date.now() < untilMs`; both answer a
 * Stripe-shaped error (429 `rate_limit`, 5xx `api_error`) with `Stripe-Should-Retry: false` (so
 * stripe-node does not retry by itself) and `Retry-After` when given. `slowObjects(ms)` sends
 * every object answer (success or failure) after `ms`. `reset()` clears objects and these modes;
 * `objectRequests` lists the requests to the object routes.
 */
export class StripeEventsStub {
  readonly requests: SeenRequest[] = [];
  private server: Server | undefined;
  /** Events per account ('' = the platform's own, listed without Stripe-Account). */
  private readonly events = new Map<string, StubEvent[]>();
  private rateLimited = 0;
  /** Bytes of padding the next list answer streams (0: none). */
  private oversize = 0;
  /** Bytes of the last oversized answer the client took before it hung up. */
  oversizeWritten = 0;
  private held: { count: number; after: number; waiting: Array<() => void>; onHeld?: () => void } = { count: 0, after: 0, waiting: [] };
  /** Objects per account ('' = the platform's own), by id. */
  private readonly objects = new Map<string, Map<string, Record<string, unknown>>>();
  private objectFailures: { count: number } & StubFailure = { count: 0, status: 0 };
  private objectOutage: ({ untilMs: number } & StubFailure) | undefined;
  private objectDelayMs = 0;
  /** Delayed object answers not yet sent (cleared on stop()). */
  private readonly delayed = new Set<NodeJS.Timeout>();

  constructor(
    readonly apiKey = 'sk_test_stub_4eC39HqLyjWDarjtT1zdp7dc',
    private readonly pageSize = 10,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
  }

  async stop(): Promise<void> {
    this.release();
    for (const timer of this.delayed) clearTimeout(timer);
    this.delayed.clear();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  reset(): void {
    this.events.clear();
    this.requests.length = 0;
    this.rateLimited = 0;
    this.release();
    this.objects.clear();
    this.objectFailures = { count: 0, status: 0 };
    this.objectOutage = undefined;
    this.objectDelayMs = 0;
  }

  /**
   * Stores `object` by its `id` under `account` ('' = the platform's own); its `object` field
   * (`payment_intent`, `charge` or `dispute`) says at which route it is found. Putting the same id
   * again replaces it: the object's current state changed. A copy is stored.
   */
  putObject(object: Record<string, unknown>, account = ''): void {
    const id = object.id;
    if (typeof id !== 'string' || id === '') throw new Error('putObject: the object has no string id');
    if (!Object.values(OBJECT_ROUTES).includes(object.object as StubObjectKind)) {
      throw new Error(`putObject: unsupported object kind ${JSON.stringify(object.object)} (payment_intent, charge or dispute)`);
    }
    const byId = this.objects.get(account) ?? new Map<string, Record<string, unknown>>();
    byId.set(id, structuredClone(object));
    this.objects.set(account, byId);
  }

  /** Removes the object `id` of `account` ('' = the platform's own); it is then not found (404). */
  deleteObject(id: string, account = ''): void {
    this.objects.get(account)?.delete(id);
  }

  /**
   * The next `count` object requests answer `status` (429, 500, 503…) with a Stripe-shaped error
   * body, `Stripe-Should-Retry: false`, and `Retry-After` when `retryAfterSeconds` is given.
   */
  failObjects(count: number, opts: StubFailure): void {
    this.objectFailures = { count, status: opts.status, retryAfterSeconds: opts.retryAfterSeconds };
  }

  /** Every object request answers as `failObjects` would while `Date.now() < untilMs` (an outage). */
  failObjectsUntil(untilMs: number, opts: StubFailure): void {
    this.objectOutage = { untilMs, status: opts.status, retryAfterSeconds: opts.retryAfterSeconds };
  }

  /** Each object answer (success or failure) is sent after `delayMs` (0: at once). */
  slowObjects(delayMs: number): void {
    this.objectDelayMs = Math.max(0, delayMs);
  }

  /** The requests to the object routes (`/v1/payment_intents/…`, `/v1/charges/…`, `/v1/disputes/…`). */
  get objectRequests(): SeenRequest[] {
    return this.requests.filter((r) => OBJECT_PATH.test(r.path));
  }

  /** Adds a `payment_intent.succeeded` event (on `account` when given: a connected account's). */
  addSucceeded(opts: { orderId: string; amount?: number; currency?: string; created: number; account?: string; id?: string; paymentIntentId?: string }): StubEvent {
    const amount = opts.amount ?? 4990;
    const pi = opts.paymentIntentId ?? `pi_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
    const event: StubEvent = {
      id: opts.id ?? `evt_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
      object: 'event',
      api_version: '2025-03-31.basil',
      created: opts.created,
      livemode: false,
      pending_webhooks: 0,
      request: { id: `req_${randomUUID().replace(/-/g, '').slice(0, 14)}`, idempotency_key: randomUUID() },
      type: 'payment_intent.succeeded',
      ...(opts.account ? { account: opts.account } : {}),
      data: {
        object: {
          id: pi,
          object: 'payment_intent',
          amount,
          amount_capturable: 0,
          amount_received: amount,
          capture_method: 'automatic',
          created: opts.created - 5,
          currency: (opts.currency ?? 'eur').toLowerCase(),
          latest_charge: `ch_${randomUUID().replace(/-/g, '').slice(0, 24)}`,
          livemode: false,
          metadata: { order_id: opts.orderId },
          payment_method_types: ['card'],
          status: 'succeeded',
        },
      },
    };
    const list = this.events.get(opts.account ?? '') ?? [];
    list.push(event);
    this.events.set(opts.account ?? '', list);
    return event;
  }

  /**
   * The next list request answers 200 with a page padded to `bytes` (streamed in 64 KiB chunks, as
   * fast as the client reads), as a misbehaving API could; `oversizeWritten` says how much was taken.
   */
  oversizeNext(bytes: number): void {
    this.oversize = bytes;
    this.oversizeWritten = 0;
  }

  /** The next `count` list requests answer 429 (rate limited), as Stripe does under load. */
  failNext(count: number): void {
    this.rateLimited += count;
  }

  /**
   * After `after` more list requests are answered, the next `count` wait unanswered until
   * release(); `onHeld` runs when one arrives.
   */
  holdNext(count = 1, onHeld?: () => void, { after = 0 }: { after?: number } = {}): void {
    this.held = { count, after, waiting: this.held.waiting, onHeld };
  }

  /** Answers every held request. */
  release(): void {
    const waiting = this.held.waiting;
    this.held = { count: 0, after: 0, waiting: [] };
    for (const go of waiting) go();
  }

  /** The list requests that were answered 200. */
  get listed(): SeenRequest[] {
    return this.requests.filter((r) => r.path === '/v1/events' && r.status === 200);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://stub');
    const query = Object.fromEntries(url.searchParams.entries());
    const seen: SeenRequest = {
      path: url.pathname,
      query,
      authorization: req.headers.authorization,
      stripeAccount: header(req, 'stripe-account'),
      stripeContext: header(req, 'stripe-context'),
      status: 0,
      at: Date.now(),
    };
    this.requests.push(seen);
    const answer = (status: number, body: unknown, extra: Record<string, string> = {}) => {
      seen.status = status;
      if (res.destroyed) return;
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${randomUUID().slice(0, 14)}`, ...extra });
      res.end(JSON.stringify(body));
    };
    const objectRoute = req.method === 'GET' ? OBJECT_PATH.exec(url.pathname) : null;
    if (objectRoute) return this.handleObject(req, res, seen, OBJECT_ROUTES[objectRoute[1]], objectRoute[2], answer);
    if (req.method !== 'GET' || url.pathname !== '/v1/events') {
      return answer(404, { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${req.method}: ${url.pathname}).` } });
    }
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
      const given = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      return answer(401, {
        error: { type: 'invalid_request_error', message: `Invalid API Key provided: ${redact(given)}` },
      });
    }
    if (this.rateLimited > 0) {
      this.rateLimited--;
      return answer(429, {
        error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests hit the API too quickly.' },
      });
    }
    if (this.oversize > 0) {
      const bytes = this.oversize;
      this.oversize = 0;
      seen.status = 200;
      return void this.streamOversized(res, bytes);
    }
    const respond = () => answer(200, this.page(seen.stripeAccount ?? '', query));
    if (this.held.count > 0 && this.held.after > 0) {
      this.held.after--;
    } else if (this.held.count > 0) {
      this.held.count--;
      this.held.waiting.push(respond);
      this.held.onHeld?.();
      return;
    }
    respond();
  }

  private handleObject(
    req: IncomingMessage,
    res: ServerResponse,
    seen: SeenRequest,
    kind: StubObjectKind,
    rawId: string,
    answer: (status: number, body: unknown, extra?: Record<string, string>) => void,
  ): void {
    res.on('error', () => undefined); // a client that hung up is not the stub's failure
    let send: () => void;
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
      const given = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      const body = { error: { type: 'invalid_request_error', message: `Invalid API Key provided: ${redact(given)}` } };
      send = () => answer(401, body);
    } else if (this.objectOutage && Date.now() < this.objectOutage.untilMs) {
      const failure = this.objectOutage;
      send = () => answer(failure.status, failureBody(failure.status), failureHeaders(failure));
    } else if (this.objectFailures.count > 0) {
      this.objectFailures.count--;
      const failure = { ...this.objectFailures };
      send = () => answer(failure.status, failureBody(failure.status), failureHeaders(failure));
    } else {
      let id = rawId;
      try {
        id = decodeURIComponent(rawId);
      } catch {
        // not percent-encoded: looked up as sent
      }
      const account = seen.stripeContext ?? seen.stripeAccount ?? '';
      const found = this.objects.get(account)?.get(id);
      if (found && found.object === kind) {
        const body = structuredClone(found);
        send = () => answer(200, body);
      } else {
        const body = {
          error: { type: 'invalid_request_error', code: 'resource_missing', param: 'id', message: `No such ${kind}: '${id}'` },
        };
        send = () => answer(404, body);
      }
    }
    if (this.objectDelayMs <= 0) return send();
    const timer = setTimeout(() => {
      this.delayed.delete(timer);
      send();
    }, this.objectDelayMs);
    this.delayed.add(timer);
  }

  private async streamOversized(res: ServerResponse, bytes: number): Promise<void> {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(65_536, 0x20); // whitespace: still valid JSON, were it read whole
    res.write('{"object":"list","has_more":false,"url":"/v1/events","data":[]');
    let written = 0;
    while (written < bytes && !res.destroyed) {
      if (!res.write(chunk)) await new Promise<void>((resolve) => { res.once('drain', resolve); res.once('close', resolve); });
      written += chunk.length;
      this.oversizeWritten = written;
    }
    if (!res.destroyed) res.end('}');
  }

  private page(account: string, query: Record<string, string>) {
    const gte = query['created[gte]'] === undefined ? -Infinity : Number(query['created[gte]']);
    const lt = query['created[lt]'] === undefined ? Infinity : Number(query['created[lt]']);
    const limit = Math.min(Number(query.limit ?? 10) || 10, this.pageSize);
    // Newest first; ties in the order they were added, later first (a stable order, as Stripe's is).
    const all = (this.events.get(account) ?? [])
      .map((event, index) => ({ event, index }))
      .filter(({ event }) => event.created >= gte && event.created < lt)
      .sort((a, b) => b.event.created - a.event.created || b.index - a.index)
      .map(({ event }) => event);
    let from = 0;
    if (query.starting_after) {
      const at = all.findIndex((e) => e.id === query.starting_after);
      from = at < 0 ? all.length : at + 1;
    }
    const data = all.slice(from, from + limit);
    return { object: 'list', data, has_more: from + limit < all.length, url: '/v1/events' };
  }
}

/** Stripe's error body for a failure mode's status. */
function failureBody(status: number): unknown {
  if (status === 429) {
    return { error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests hit the API too quickly.' } };
  }
  if (status >= 500) return { error: { type: 'api_error', message: 'An unknown error occurred' } };
  return { error: { type: 'invalid_request_error', message: `The stub was told to answer ${status}.` } };
}

function failureHeaders(failure: StubFailure): Record<string, string> {
  return {
    'stripe-should-retry': 'false',
    ...(failure.retryAfterSeconds === undefined ? {} : { 'retry-after': String(failure.retryAfterSeconds) }),
  };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Stripe's way of naming a key in an error: its prefix and last four characters. */
function redact(key: string): string {
  const prefix = key.match(/^(sk|rk)_(test|live)_/)?.[0] ?? '';
  return `${prefix}${'*'.repeat(4)}${key.slice(-4)}`;
}
