import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { distrustStub, STUB_CERT, STUB_KEY, trustStub } from './mollie-stub';

/**
 * A local stand-in for a provider's API, reached through the provider's official client with a base
 * URL (CONTRACT §3.1, docs/commands.md). It behaves as the real APIs do on the points the contract
 * names, whatever the provider:
 *
 * - a request that repeats an idempotency key answers the first result again (status and body),
 *   and the effect happens once (`effects` counts it once);
 * - a request whose key is still in flight (its first request not answered yet) answers `409`;
 * - scripted failures (`failNext`): a `429` with `Retry-After`, a `5xx`, a refusal, or a dropped
 *   connection, answered before the effect (the effect has not happened);
 * - `holdNext`: the next matching request waits until released (to hold a key in flight, or to
 *   kill a worker while the provider has answered but the worker has not committed).
 *
 * Each provider's test adds its routes: a handler reads the request and returns the answer of a
 * first request (`{ status, body }`), the effect it stands for counted in `effects`.
 */
export interface StubRequest {
  method: string;
  /** The path with its query string, as sent. */
  url: string;
  path: string;
  headers: IncomingMessage['headers'];
  /** The raw body text ('' when none). */
  text: string;
  /** The body as JSON, when it is JSON; else undefined. */
  json: any;
  /** The idempotency key this request carries, as the route reads it; null when none. */
  key: string | null;
}

export interface StubAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface StubRoute {
  method: string;
  /** A pattern on the path (query string excluded); its groups are passed to the handler. */
  path: RegExp;
  /**
   * Where this route's idempotency key is: a header name (lower case: `idempotency-key`,
   * `paypal-request-id`, `cko-idempotency-key`) or a JSON body field (`body:idempotency_key`).
   * Omitted: the route is not idempotent (reads).
   */
  key?: string;
  handle(request: StubRequest, match: RegExpMatchArray): StubAnswer | Promise<StubAnswer>;
}

/** A scripted failure: answered instead of the next matching request, before any effect. */
export type ScriptedFailure = { status: number; retryAfter?: string; body?: unknown } | { drop: true };

interface Held {
  matches: (r: StubRequest) => boolean;
  /** Resolves when a request is held. */
  arrived: Promise<StubRequest>;
  arrive: (r: StubRequest) => void;
  release: () => void;
  released: Promise<void>;
  /** Whether to hold before the effect (`before`) or after it, before the answer is sent (`after`). */
  when: 'before' | 'after';
}

export class ProviderApiStub {
  private server?: Server;
  private readonly routes: StubRoute[] = [];
  /** First answers by (route index, key). */
  private readonly firstAnswers = new Map<string, StubAnswer>();
  private readonly inFlight = new Set<string>();
  private readonly failures: Array<{ matches: (r: StubRequest) => boolean; failure: ScriptedFailure }> = [];
  private readonly holds: Held[] = [];
  /** Holds that caught a request and wait for their release. */
  private readonly active: Held[] = [];
  /** Every request, in arrival order, with the status answered. */
  readonly requests: Array<StubRequest & { status: number; /** when it arrived (ms since the epoch) */ at: number }> = [];
  /** Effects that happened, by kind (`refund`, `capture`, `void`…), each counted once per key. */
  readonly effects: Array<{ kind: string; key: string | null; detail?: Record<string, unknown> }> = [];
  port = 0;

  /** `tls`: serve HTTPS with the stubs' certificate, trusted for this port only (a client that speaks HTTPS only). */
  constructor(private readonly options: { tls?: boolean } = {}) {}

  get baseUrl(): string {
    return `${this.options.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  route(route: StubRoute): this {
    this.routes.push(route);
    return this;
  }

  /** Records an effect (a handler calls it once per first request). */
  effect(kind: string, key: string | null, detail?: Record<string, unknown>): void {
    this.effects.push({ kind, key, detail });
  }

  effectsOf(kind: string): number {
    return this.effects.filter((e) => e.kind === kind).length;
  }

  /** The next request matching `matches` (default: any that carries a key) answers this instead. */
  failNext(failure: ScriptedFailure, matches: (r: StubRequest) => boolean = (r) => r.key !== null): void {
    this.failures.push({ matches, failure });
  }

  /**
   * Holds the next matching request: `before` its effect (the key is in flight: a repeat answers
   * 409), or `after` it, when the provider has done it and the answer is not sent yet.
   */
  holdNext(when: 'before' | 'after' = 'before', matches: (r: StubRequest) => boolean = (r) => r.key !== null): Held {
    let arrive!: (r: StubRequest) => void;
    let release!: () => void;
    const arrived = new Promise<StubRequest>((resolve) => (arrive = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const held: Held = { matches, arrived, arrive, release, released, when };
    this.holds.push(held);
    return held;
  }

  /** Releases every hold, those that wait for a request included (it then passes at once). */
  releaseAll(): void {
    for (const h of this.holds.splice(0)) h.release();
    for (const h of this.active.splice(0)) h.release();
  }

  async start(): Promise<this> {
    const handler = (req: IncomingMessage, res: ServerResponse) => void this.handle(req, res);
    this.server = this.options.tls ? https.createServer({ key: STUB_KEY, cert: STUB_CERT }, handler) : createServer(handler);
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server!.address() as AddressInfo).port;
    if (this.options.tls) trustStub(this.port);
    return this;
  }

  async stop(): Promise<void> {
    this.releaseAll();
    if (this.options.tls) distrustStub(this.port);
    const server = this.server;
    if (!server) return;
    (server as Server & { closeAllConnections?: () => void }).closeAllConnections?.();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    const url = req.url ?? '/';
    const path = url.split('?')[0];
    const index = this.routes.findIndex((r) => r.method === req.method && r.path.test(path));
    const route = this.routes[index];
    const at = Date.now();
    const request: StubRequest = { method: req.method ?? 'GET', url, path, headers: req.headers, text, json, key: null };
    if (route?.key) request.key = keyOf(route.key, request);
    const send = (answer: StubAnswer) => {
      this.requests.push({ ...request, status: answer.status, at });
      res.writeHead(answer.status, { 'content-type': 'application/json', ...(answer.headers ?? {}) });
      res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
    };
    if (!route) return send({ status: 404, body: { error: 'no such route in the stub', method: req.method, path } });

    const failure = this.failures.findIndex((f) => f.matches(request));
    if (failure >= 0) {
      const [{ failure: f }] = this.failures.splice(failure, 1);
      if ('drop' in f) {
        this.requests.push({ ...request, status: 0, at });
        req.socket.destroy();
        return;
      }
      return send({ status: f.status, body: f.body ?? { error: `scripted ${f.status}` }, headers: f.retryAfter === undefined ? {} : { 'retry-after': f.retryAfter } });
    }

    const slot = request.key === null ? null : `${index}\u0000${request.key}`;
    if (slot !== null) {
      const first = this.firstAnswers.get(slot);
      if (first) return send(first);
      if (this.inFlight.has(slot)) return send({ status: 409, body: { error: 'a request with this idempotency key is in progress' } });
      this.inFlight.add(slot);
    }
    try {
      const before = this.takeHold(request, 'before');
      if (before) {
        before.arrive(request);
        await before.released;
      }
      // The answer as it was when made (a handler's object may change later, as the provider's state does).
      const answer = snapshot(await route.handle(request, path.match(route.path)!));
      // Only a completed request's answer is kept (a 5xx is the provider's own failure: not kept).
      if (slot !== null && answer.status < 500) this.firstAnswers.set(slot, answer);
      const after = this.takeHold(request, 'after');
      if (after) {
        after.arrive(request);
        await after.released;
      }
      if (res.destroyed) {
        this.requests.push({ ...request, status: 0, at });
        return;
      }
      send(answer);
    } finally {
      if (slot !== null) this.inFlight.delete(slot);
    }
  }

  private takeHold(request: StubRequest, when: 'before' | 'after'): Held | undefined {
    const i = this.holds.findIndex((h) => h.when === when && h.matches(request));
    if (i < 0) return undefined;
    const [held] = this.holds.splice(i, 1);
    this.active.push(held);
    return held;
  }
}

function keyOf(where: string, request: StubRequest): string | null {
  if (where.startsWith('body:')) {
    const value = request.json?.[where.slice(5)];
    return typeof value === 'string' && value !== '' ? value : null;
  }
  const value = request.headers[where];
  return typeof value === 'string' && value !== '' ? value : null;
}

function snapshot(answer: StubAnswer): StubAnswer {
  return answer.body === undefined ? answer : { ...answer, body: JSON.parse(JSON.stringify(answer.body)) };
}

/** The most of `times` (ms, sorted) that fall within any one second: what a provider's rate limit counts. */
export function mostInOneSecond(times: readonly number[]): number {
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (j + 1 < times.length && times[j + 1] - times[i] < 1_000) j++;
    most = Math.max(most, j - i + 1);
  }
  return most;
}
