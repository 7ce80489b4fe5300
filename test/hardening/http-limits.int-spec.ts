import { createServer, Server } from 'node:http';
import { AddressInfo, connect, Socket } from 'node:net';
import { applyServerLimits, ServerLimits } from '../../src/http/server-limits';
import { signedHeaders } from '../../src/testing/sign';
import { WebhookSignatureGuard } from '../../src/webhooks/webhook-signature.guard';
import { createTestApp, eventually, PLATFORMS, secretOf, TestApp, truncateAll } from '../support/app';
import { bodies, uniqueId } from '../support/domain';

/**
 * Issue 12, finding 4: what a client that is not authentic yet can make the service hold. The
 * HTTP server's request and header timeouts cut a body (or headers) that trickles in, answering
 * 503 `unavailable`; a budget of unverified webhook bytes answers a new delivery 503 at once while
 * it is spent, and recovers when those bytes are released. On a listening server, Express and
 * Fastify, real PostgreSQL and Redis.
 */

const LIMITS: ServerLimits = { httpRequestTimeoutMs: 1_000, httpHeadersTimeoutMs: 600, httpKeepAliveTimeoutMs: 2_000, httpMaxConnections: 64 };
const BUDGET = 10_000;
const UNAVAILABLE = '{"error":"unavailable"}';

/** A raw HTTP/1.1 client: what was answered, and when the server closed the connection. */
class RawClient {
  readonly socket: Socket;
  answer = '';
  closedAt: number | undefined;
  readonly closed: Promise<void>;
  private trickle: NodeJS.Timeout | undefined;

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
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
    if (!this.socket.destroyed) this.socket.write(text);
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
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
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

describe.each(PLATFORMS)('HTTP limits on %s (issue 12: 4)', (platform) => {
  let t: TestApp;
  let port: number;
  let guard: WebhookSignatureGuard;
  const clients: RawClient[] = [];
  const client = () => {
    const c = new RawClient(port);
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    t = await createTestApp({ tuning: { unverifiedBodyBudgetBytes: BUDGET } }, { platform });
    applyServerLimits(t.app.getHttpServer(), LIMITS);
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
    guard = t.get(WebhookSignatureGuard);
  });
  afterAll(async () => {
    for (const c of clients) c.destroy();
    await t.close();
  });
  beforeEach(() => truncateAll(t.dataSource));
  afterEach(() => {
    for (const c of clients.splice(0)) c.destroy();
  });

  /** A signed delivery on `standard-main`, over fetch. */
  async function deliver(): Promise<{ status: number; body: string }> {
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'));
    const text = JSON.stringify(body);
    const res = await fetch(`http://127.0.0.1:${port}/webhooks/standard-main`, {
      method: 'POST',
      headers: signedHeaders('standard', secretOf('standard-main'), text, { eventId }),
      body: text,
    });
    return { status: res.status, body: await res.text() };
  }

  const head = (length: number | 'chunked') =>
    `POST /webhooks/standard-main HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
    (length === 'chunked' ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${length}\r\n`) +
    '\r\n';

  it('applies the limits to the Node server', () => {
    const server = t.app.getHttpServer();
    expect({
      requestTimeout: server.requestTimeout,
      headersTimeout: server.headersTimeout,
      keepAliveTimeout: server.keepAliveTimeout,
      maxConnections: server.maxConnections,
    }).toEqual({ requestTimeout: 1_000, headersTimeout: 600, keepAliveTimeout: 2_000, maxConnections: 64 });
  });

  it('a body trickling one byte every 100 ms is cut at the request timeout: 503 unavailable, closed, its bytes given back', async () => {
    const slow = client();
    const started = Date.now();
    slow.write(head(400));
    slow.trickleOut('{"type":"payment.succeeded"'.padEnd(400, ' '), 100);
    await eventually(async () => guard.unverified.inFlight === 400, 2_000, 'the declared bytes taken');
    await within(slow.closed, 3_000, 'the slow request cut');
    // Cut at the timeout (checked every 150 ms here), not after Node's 300 s.
    expect(slow.closedAt! - started).toBeGreaterThanOrEqual(LIMITS.httpRequestTimeoutMs - 50);
    expect(slow.closedAt! - started).toBeLessThan(LIMITS.httpRequestTimeoutMs + 1_500);
    expect(slow.answer).toMatch(/^HTTP\/1\.1 503 /);
    expect(slow.answer.endsWith(UNAVAILABLE)).toBe(true);
    await eventually(async () => guard.unverified.inFlight === 0, 2_000, 'the bytes given back');
    // And the service answers the next sender as ever.
    expect((await deliver()).status).toBe(200);
  });

  it('headers trickling in are cut at the headers timeout with 503', async () => {
    const slow = client();
    const started = Date.now();
    slow.trickleOut(head(10), 100);
    await within(slow.closed, 3_000, 'the slow headers cut');
    expect(slow.closedAt! - started).toBeLessThan(LIMITS.httpHeadersTimeoutMs + 1_500);
    expect(slow.answer).toMatch(/^HTTP\/1\.1 503 /);
    expect(slow.answer.endsWith(UNAVAILABLE)).toBe(true);
  });

  it('the budget of unverified bytes spent: a new delivery answers 503 at once, unread; released, the next is accepted', async () => {
    // A sender that declared 9,990 bytes and sent a few: they are held, unverified.
    const holder = client();
    holder.write(head(9_990) + '{"type":');
    await eventually(async () => guard.unverified.inFlight === 9_990, 2_000, 'the budget taken');

    const refused = await deliver();
    expect(refused).toEqual({ status: 503, body: UNAVAILABLE });
    // A sender declaring nothing (chunked) is refused too once its bytes pass the budget.
    const chunked = client();
    chunked.write(head('chunked') + `${(500).toString(16)}\r\n${'x'.repeat(500)}\r\n`);
    await within(chunked.closed, 3_000, 'the chunked delivery answered');
    expect(chunked.answer).toMatch(/^HTTP\/1\.1 503 /);
    expect(chunked.answer.endsWith(UNAVAILABLE)).toBe(true);
    expect(guard.unverified.inFlight).toBe(9_990);

    // The holder hangs up: its bytes are given back, and deliveries are accepted again.
    holder.destroy();
    await eventually(async () => guard.unverified.inFlight === 0, 2_000, 'the budget given back');
    const accepted = await deliver();
    expect(accepted.status).toBe(200);
    expect(JSON.parse(accepted.body)).toMatchObject({ status: 'accepted' });
    expect(guard.unverified.inFlight).toBe(0);
  });

  it('a delivery verified, or refused, gives its bytes back', async () => {
    expect((await deliver()).status).toBe(200);
    const unsigned = await fetch(`http://127.0.0.1:${port}/webhooks/standard-main`, { method: 'POST', body: '{"type":"x"}' });
    expect(unsigned.status).toBe(401);
    expect(guard.unverified.inFlight).toBe(0);
  });
});

describe('applyServerLimits on a bare Node server', () => {
  let server: Server;
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('leaves other client errors answered as Node does (400, closed)', async () => {
    server = createServer((_req, res) => res.end('ok'));
    applyServerLimits(server, LIMITS);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const c = new RawClient((server.address() as AddressInfo).port);
    c.write('NOT HTTP AT ALL\r\n\r\n');
    await within(c.closed, 3_000, 'the bad request closed');
    expect(c.answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
  });

  it('keeps headersTimeout within requestTimeout, and the check interval under both', () => {
    server = createServer();
    applyServerLimits(server, { ...LIMITS, httpRequestTimeoutMs: 2_000, httpHeadersTimeoutMs: 5_000 });
    expect(server.headersTimeout).toBe(2_000);
    expect((server as Server & { connectionsCheckingInterval: number }).connectionsCheckingInterval).toBe(500);
  });
});
