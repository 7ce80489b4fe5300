import { Agent, request, Server } from 'node:http';
import { connect, Socket } from 'node:net';
import { signedHeaders } from '../../src/testing/sign';
import { secretOf } from './app';
import { bodies, uniqueId } from './domain';

/** Raw HTTP clients bound to an address of their own, for the suites of what a client can make the server hold. */

export const UNAVAILABLE = '{"error":"unavailable"}';

/** A raw HTTP/1.1 client: what was answered, and when the server closed the connection. */
export class RawClient {
  readonly socket: Socket;
  answer = '';
  closedAt: number | undefined;
  readonly closed: Promise<void>;
  private trickle: NodeJS.Timeout | undefined;

  /** Bytes written so far. */
  sent = 0;

  /** From `localAddress`: Linux routes all of 127/8 on loopback, so each is a client of its own. */
  constructor(port: number, localAddress = '127.0.0.1') {
    this.socket = connect({ port, host: '127.0.0.1', localAddress });
    this.socket.on('data', (d) => (this.answer += d.toString('latin1')));
    this.socket.on('error', () => undefined);
    this.closed = new Promise((resolve) =>
      this.socket.on('close', () => {
        this.closedAt = Date.now();
        if (this.trickle) clearInterval(this.trickle);
        resolve();
      }),
    );
  }

  write(text: string): void {
    if (this.socket.destroyed) return;
    this.socket.write(text);
    this.sent += text.length;
  }

  /** One byte of `text` every `everyMs`, as a slow or hostile sender does. */
  trickleOut(text: string, everyMs: number): void {
    let i = 0;
    this.trickle = setInterval(() => {
      if (i < text.length) this.write(text[i++]);
    }, everyMs);
  }

  destroy(): void {
    if (this.trickle) clearInterval(this.trickle);
    this.socket.destroy();
  }
}

/** Resolves when `promise` does, or fails after `ms` (a deadline, not a sleep). */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export interface Answer {
  status: number;
  body: string;
  connection: string | undefined;
}

/** A signed delivery on `standard-main` from `localAddress` (fetch cannot bind one: node:http can). */
export function deliverFrom(port: number, localAddress: string, agent: Agent | false = false): Promise<Answer & { reused: boolean; sent: number }> {
  const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'));
  const text = JSON.stringify(body);
  const headers = { ...signedHeaders('standard', secretOf('standard-main'), text, { eventId }), 'content-length': String(Buffer.byteLength(text)) };
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, localAddress, agent, method: 'POST', path: '/webhooks/standard-main', headers }, (res) => {
      let answer = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (answer += d));
      res.on('end', () => resolve({ status: res.statusCode!, body: answer, connection: res.headers.connection, reused: req.reusedSocket, sent: Buffer.byteLength(text) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(text);
  });
}

/** The answer of a delivery recorded: 200 `accepted`. */
export function expectAccepted(answer: Answer): void {
  expect({ status: answer.status, body: JSON.parse(answer.body) }).toMatchObject({ status: 200, body: { status: 'accepted' } });
}

/** The answer of a delivery refused, unread, for want of room: 503 `unavailable`, its connection closed. */
export function expectUnavailable(answer: Answer): void {
  expect({ status: answer.status, body: answer.body, connection: answer.connection }).toEqual({ status: 503, body: UNAVAILABLE, connection: 'close' });
}

/** The head of a webhook request to `standard-main` that declares `length` bytes (or a chunked body). */
export const head = (length: number | 'chunked') =>
  `POST /webhooks/standard-main HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
  (length === 'chunked' ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${length}\r\n`) +
  '\r\n';

/** `address` as one key per client: a dual-stack socket reports an IPv4 client as `::ffff:a.b.c.d`. */
function clientKey(address: string | undefined): string {
  return address?.startsWith('::ffff:') ? address.slice(7) : (address ?? '');
}

/**
 * The connections a server took and still holds, per client address, as a listener of its own
 * `connection` event sees them: one closed on arrival (by Node's cap or by one of the server's
 * own listeners before this one) never counts.
 */
export class HeldConnections {
  private readonly held = new Map<string, number>();
  private readonly onConnection = (socket: Socket) => {
    if (socket.destroyed) return;
    const address = clientKey(socket.remoteAddress);
    this.held.set(address, (this.held.get(address) ?? 0) + 1);
    socket.once('close', () => this.held.set(address, this.held.get(address)! - 1));
  };

  constructor(private readonly server: Server) {
    server.on('connection', this.onConnection);
  }

  of(address: string): number {
    return this.held.get(address) ?? 0;
  }

  stop(): void {
    this.server.off('connection', this.onConnection);
  }
}
