import { timingSafeEqual } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CliExit, EXIT } from '../context';
import type { ServedObject } from './events';

/**
 * What `simulate` and `conformance` run with `--payload-style thin --serve-objects <host:port>`:
 * the Stripe API a thin endpoint reads the objects of its notifications from (its `apiBaseUrl`
 * pointed at this address), for the length of the run. The kit is the source of the objects its
 * notifications name: each is put here before its notification is sent.
 *
 * `GET /v1/payment_intents/{id}`, `/v1/charges/{id}` and `/v1/disputes/{id}` answer the object
 * held for that id, kind and account (a connected account's `Stripe-Context`, else
 * `Stripe-Account`, else the platform's own); anything else answers 404 with Stripe's
 * `resource_missing` error. With a key, a request without `Authorization: Bearer <key>` answers
 * 401 with Stripe's error body, which never quotes the key given or expected. Every request is
 * counted, by path.
 */

/** Where to listen: `127.0.0.1:8787`, `[::1]:8787`, `0.0.0.0:8787`. */
export interface ListenAddress {
  host: string;
  port: number;
}

/** One request the server answered. */
export interface ObjectRequest {
  method: string;
  path: string;
  /** The account it asked in ('' for the platform's own). */
  account: string;
  status: number;
}

const ROUTES: Record<string, string> = { payment_intents: 'payment_intent', charges: 'charge', disputes: 'dispute' };
const OBJECT_PATH = /^\/v1\/(payment_intents|charges|disputes)\/([^/]+)$/;

/** `host:port` as `--serve-objects` takes it; undefined when it is not one (the caller says why). */
export function parseListenAddress(value: string): ListenAddress | undefined {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value);
  if (!match) return undefined;
  const port = Number(match[2]);
  if (port < 1 || port > 65_535) return undefined;
  return { host: match[1].replace(/^\[(.*)\]$/, '$1'), port };
}

/** `http://127.0.0.1:8787`, `http://[::1]:8787`: what the thin endpoint's `apiBaseUrl` is set to. */
export function addressUrl(address: ListenAddress): string {
  return `http://${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`;
}

export class ObjectServer {
  readonly requests: ObjectRequest[] = [];
  /** Objects by account, then path, with the rank of the state held. */
  private readonly objects = new Map<string, Map<string, { object: Record<string, unknown>; rank: number }>>();

  private constructor(
    private readonly server: Server,
    readonly address: ListenAddress,
    private readonly apiKey: string | undefined,
  ) {}

  /** Listens on `address`; rejects with the listen error (`EADDRINUSE`, `EACCES`, `EADDRNOTAVAIL`). */
  static async start(address: ListenAddress, apiKey?: string): Promise<ObjectServer> {
    let self: ObjectServer | undefined;
    const server = createServer((req, res) => self!.handle(req, res));
    server.keepAliveTimeout = 1_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(address.port, address.host, () => {
        server.removeListener('error', reject);
        resolve();
      });
    });
    self = new ObjectServer(server, { host: address.host, port: (server.address() as AddressInfo).port }, apiKey);
    return self;
  }

  get url(): string {
    return addressUrl(this.address);
  }

  /**
   * Holds `served` as the object's current state. `rank` is its step in the payment's lifecycle
   * (default 0): a state of a lower rank than the one held is not taken: an earlier step's
   * notification sent after a later one (out of order) does not send the object back, as Stripe's
   * API never does.
   */
  put(served: ServedObject, rank = 0): void {
    const byPath = this.objects.get(served.account) ?? new Map<string, { object: Record<string, unknown>; rank: number }>();
    const held = byPath.get(served.path);
    if (held && rank < held.rank) return;
    byPath.set(served.path, { object: structuredClone(served.object), rank });
    this.objects.set(served.account, byPath);
  }

  /** The requests made at `path`, whatever they were answered. */
  fetches(path: string): number {
    return this.requests.filter((r) => r.path === path).length;
  }

  /** Requests by path, in the order the paths were first asked for. */
  byPath(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const r of this.requests) counts.set(r.path, (counts.get(r.path) ?? 0) + 1);
    return counts;
  }

  /** Requests by answer: `{ "200": 9, "404": 1 }`. */
  byStatus(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const r of this.requests) counts[String(r.status)] = (counts[String(r.status)] ?? 0) + 1;
    return counts;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const path = new URL(req.url ?? '/', 'http://objects').pathname;
    const account = header(req, 'stripe-context') ?? header(req, 'stripe-account') ?? '';
    const seen: ObjectRequest = { method: req.method ?? 'GET', path, account, status: 0 };
    this.requests.push(seen);
    res.on('error', () => undefined);
    const answer = (status: number, body: unknown) => {
      seen.status = status;
      res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_kit_${this.requests.length}` });
      res.end(JSON.stringify(body));
    };
    // The request is answered whatever its body (a GET has none): drained, so the connection is reused.
    req.resume();
    if (this.apiKey !== undefined && !this.authorized(req.headers.authorization)) {
      return answer(401, {
        error: { type: 'invalid_request_error', message: 'Invalid API Key provided: not the key of --stripe-api-key-file' },
      });
    }
    const route = req.method === 'GET' ? OBJECT_PATH.exec(path) : null;
    if (!route) {
      return answer(404, missing(`Unrecognized request URL (${req.method}: ${path}): the kit serves GET /v1/payment_intents/{id}, /v1/charges/{id} and /v1/disputes/{id}`));
    }
    const kind = ROUTES[route[1]];
    const held = this.objects.get(account)?.get(path);
    if (!held || held.object.object !== kind) return answer(404, missing(`No such ${kind}: '${safeId(route[2])}'`));
    return answer(200, held.object);
  }

  private authorized(authorization: string | undefined): boolean {
    const expected = Buffer.from(`Bearer ${this.apiKey}`);
    const given = Buffer.from(authorization ?? '');
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}

/** Stripe's answer for an object that does not exist. */
function missing(message: string): Record<string, unknown> {
  return { error: { code: 'resource_missing', doc_url: 'https://stripe.com/docs/error-codes/resource-missing', message, param: 'id', type: 'invalid_request_error' } };
}

function safeId(raw: string): string {
  try {
    return decodeURIComponent(raw).slice(0, 255);
  } catch {
    return raw.slice(0, 255);
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Starts the server for a command's run; a listen error ends the command with exit 2, naming the address. */
export async function serveObjects(command: string, address: ListenAddress, apiKey?: string): Promise<ObjectServer> {
  try {
    return await ObjectServer.start(address, apiKey);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    const why: Record<string, string> = {
      EADDRINUSE: 'the port is in use',
      EACCES: 'permission denied',
      EADDRNOTAVAIL: 'no interface of this machine has that address',
      ENOTFOUND: 'the host name does not resolve',
    };
    throw new CliExit(EXIT.couldNotRun, `${command}: --serve-objects ${addressUrl(address).slice('http://'.length)}: cannot listen there (${why[code] ? `${code}, ${why[code]}` : code})`);
  }
}
