import { Logger } from '@nestjs/common';
import { Agent, createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { TuningOptions } from '../../src/config/options';
import { applyServerLimits, ServerLimits } from '../../src/http/server-limits';
import { WebhookSignatureGuard } from '../../src/webhooks/webhook-signature.guard';
import { createTestApp, eventually, Platform, PLATFORMS, TestApp, truncateAll } from '../support/app';
import { deliverFrom, expectAccepted, expectUnavailable, head, HeldConnections, RawClient, UNAVAILABLE, within } from '../support/raw-http';

/**
 * Issue 12, finding 4: what a client that is not authentic yet can make the service hold. The
 * HTTP server's request and header timeouts cut a body (or headers) that trickles in, answering
 * 503 `unavailable`. The budget of unverified webhook bytes counts bytes that arrived, never
 * declared lengths: idle connections declaring large bodies keep no other client's delivery from
 * being accepted; once bytes that really arrived spend the budget (or one client's share of it), a
 * delivery answers 503 at once, and recovers when they are released. On a listening server,
 * Express and Fastify, real PostgreSQL and Redis.
 */

const LIMITS: ServerLimits = { httpRequestTimeoutMs: 1_000, httpHeadersTimeoutMs: 600, httpKeepAliveTimeoutMs: 2_000, httpMaxConnections: 64 };
/** Long enough that senders stalled on purpose hold for the whole test. */
const HOLD_LIMITS: ServerLimits = { httpRequestTimeoutMs: 30_000, httpHeadersTimeoutMs: 5_000, httpKeepAliveTimeoutMs: 5_000, httpMaxConnections: 256 };
/** A listening test app with these server limits and tuning; raw clients made by `client` are closed after each test. */
function listeningApp(platform: Platform, limits: ServerLimits, tuning: Partial<TuningOptions> = {}) {
  const s = {} as { t: TestApp; port: number; guard: WebhookSignatureGuard; client: (localAddress?: string) => RawClient };
  const clients: RawClient[] = [];
  s.client = (localAddress?: string) => {
    const c = new RawClient(s.port, localAddress);
    clients.push(c);
    return c;
  };
  beforeAll(async () => {
    s.t = await createTestApp({ tuning }, { platform });
    applyServerLimits(s.t.app.getHttpServer(), limits);
    await s.t.app.listen(0, '127.0.0.1');
    s.port = (s.t.app.getHttpServer().address() as AddressInfo).port;
    s.guard = s.t.get(WebhookSignatureGuard);
  });
  afterAll(async () => {
    for (const c of clients) c.destroy();
    await s.t?.close();
  });
  beforeEach(() => truncateAll(s.t.dataSource));
  afterEach(() => {
    for (const c of clients.splice(0)) c.destroy();
  });
  return s;
}

describe.each(PLATFORMS)('HTTP limits on %s (issue 12: 4)', (platform) => {
  const s = listeningApp(platform, LIMITS);
  let t: TestApp;
  let port: number;
  let guard: WebhookSignatureGuard;
  beforeAll(() => ({ t, port, guard } = s));
  const client = () => s.client();
  const deliver = () => deliverFrom(port, '127.0.0.1');

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
    // Only the bytes that arrived are held, never the 400 declared.
    await eventually(async () => guard.unverified.inFlight >= 3, 2_000, 'the first bytes taken');
    expect(guard.unverified.inFlight).toBeLessThanOrEqual(slow.sent - head(400).length);
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

  it('a delivery verified, or refused, gives its bytes back', async () => {
    expectAccepted(await deliver());
    const unsigned = await fetch(`http://127.0.0.1:${port}/webhooks/standard-main`, { method: 'POST', body: '{"type":"x"}' });
    expect(unsigned.status).toBe(401);
    expect(guard.unverified.inFlight).toBe(0);
    expect(guard.unverified.heldBy('127.0.0.1')).toBe(0);
  });
});

describe.each(PLATFORMS)('unverified bytes counted as they arrive on %s', (platform) => {
  describe('with the default budget (32 MiB)', () => {
    const s = listeningApp(platform, HOLD_LIMITS);
    const HOLDERS = 40;

    it('40 connections declaring 1 MiB and sending one byte hold 40 bytes: another client is accepted within 2 s throughout', async () => {
      const holders = Array.from({ length: HOLDERS }, () => s.client('127.0.0.1'));
      for (const h of holders) h.write(head(1_048_576) + '{');
      // Every holder's byte has reached the guard.
      await eventually(async () => s.guard.unverified.inFlight >= HOLDERS, 5_000, "the holders' bytes arrived");

      let accepted = 0;
      const until = Date.now() + 3_000;
      while (Date.now() < until) {
        expectAccepted(await within(deliverFrom(s.port, '127.0.0.2'), 2_000, 'a delivery from another client answered'));
        accepted++;
      }
      expect(accepted).toBeGreaterThanOrEqual(3);
      // The holders held throughout, unanswered, and hold only the bytes they sent.
      expect(holders.filter((h) => h.closedAt !== undefined || h.answer !== '')).toEqual([]);
      expect(s.guard.unverified.inFlight).toBe(HOLDERS);
      expect(s.guard.unverified.heldBy('127.0.0.1')).toBe(HOLDERS);
      expect(s.guard.unverified.heldBy('127.0.0.2')).toBe(0);
    });
  });

  describe('with a budget of 16,000 bytes, 4,000 a client', () => {
    const BUDGET = 16_000;
    const SHARE = 4_000;
    const s = listeningApp(platform, HOLD_LIMITS, { unverifiedBodyBudgetBytes: BUDGET, unverifiedBodyClientShareBytes: SHARE });
    /** A sender from `address` that declares 8,000 bytes, really sends `bytes` of them, and stalls. */
    const stall = (address: string, bytes = SHARE) => {
      const c = s.client(address);
      c.write(head(8_000) + '{"type":'.padEnd(bytes, ' '));
      return c;
    };
    const expectRawUnavailable = (c: RawClient) => {
      expect(c.answer).toMatch(/^HTTP\/1\.1 503 /);
      expect(c.answer).toMatch(/\r\nconnection: close\r\n/i);
      expect(c.answer.endsWith(UNAVAILABLE)).toBe(true);
    };

    it('spent by bytes that arrived: a newcomer answers 503 at once, a client over its share 503 while another is accepted; released, accepted and healthy', async () => {
      const unverified = s.guard.unverified;
      const [c3, c4, c5] = ['127.0.0.3', '127.0.0.4', '127.0.0.5'].map((a) => stall(a));
      await eventually(async () => unverified.inFlight === 3 * SHARE, 5_000, 'three shares arrived');
      expect([unverified.heldBy('127.0.0.3'), unverified.heldBy('127.0.0.4'), unverified.heldBy('127.0.0.5')]).toEqual([SHARE, SHARE, SHARE]);

      // One byte over its share, while the budget has room: that client is refused, its bytes given back.
      c3.write(' ');
      await within(c3.closed, 3_000, 'the client over its share answered');
      expectRawUnavailable(c3);
      await eventually(async () => unverified.inFlight === 2 * SHARE, 2_000, 'its share given back');
      // The share is the address's, whatever the connection: another one from 127.0.0.4 is refused.
      expectUnavailable(await within(deliverFrom(s.port, '127.0.0.4'), 2_000, 'a second connection of a full share answered'));
      // Another client's delivery is accepted meanwhile.
      expectAccepted(await within(deliverFrom(s.port, '127.0.0.7'), 2_000, 'another client answered'));

      // Four clients each hold their share: the budget is spent.
      const stalled = [c4, c5, stall('127.0.0.3'), stall('127.0.0.6')];
      await eventually(async () => unverified.inFlight === BUDGET, 5_000, 'the budget spent');
      // A newcomer answers 503 at once, unread; one declaring nothing (chunked) too.
      expectUnavailable(await within(deliverFrom(s.port, '127.0.0.7'), 2_000, 'the newcomer answered'));
      const chunked = s.client('127.0.0.8');
      chunked.write(head('chunked') + `${(500).toString(16)}\r\n${'x'.repeat(500)}\r\n`);
      await within(chunked.closed, 3_000, 'the chunked newcomer answered');
      expectRawUnavailable(chunked);
      expect(unverified.inFlight).toBe(BUDGET);

      // The stalled senders hang up: their bytes are given back, the newcomer is accepted, the service healthy.
      for (const c of stalled) c.destroy();
      await eventually(async () => unverified.inFlight === 0, 2_000, 'the budget given back');
      expectAccepted(await within(deliverFrom(s.port, '127.0.0.7'), 2_000, 'the newcomer answered again'));
      const health = await fetch(`http://127.0.0.1:${s.port}/health`);
      expect(health.status).toBe(200);
      expect(unverified.inFlight).toBe(0);
      for (const a of ['127.0.0.3', '127.0.0.4', '127.0.0.5', '127.0.0.6', '127.0.0.7', '127.0.0.8']) expect(unverified.heldBy(a)).toBe(0);
    });

    it('one keep-alive connection: each delivery gives its bytes back, so many in a row outgrow no share', async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        // Deliveries in a row until twice the share has been sent over the one connection.
        const answers = [];
        for (let sent = 0; sent <= 2 * SHARE; sent += answers[answers.length - 1].sent) {
          answers.push(await within(deliverFrom(s.port, '127.0.0.9', agent), 2_000, `delivery ${answers.length} answered`));
        }
        for (const answer of answers) expectAccepted(answer);
        expect(answers.slice(1).every((a) => a.reused)).toBe(true);
        expect(s.guard.unverified.inFlight).toBe(0);
        expect(s.guard.unverified.heldBy('127.0.0.9')).toBe(0);
      } finally {
        agent.destroy();
      }
    });
  });
});

describe('applyServerLimits on a bare Node server', () => {
  let server: Server;
  const clients: RawClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.destroy();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('one address holds at most a quarter of maxConnections: past it, its connections are closed on arrival; another address is taken', async () => {
    server = createServer((_req, res) => res.end('ok'));
    // 64 connections, so 16 an address; headers may take long, so idle connections stay.
    applyServerLimits(server, { ...LIMITS, httpRequestTimeoutMs: 30_000, httpHeadersTimeoutMs: 30_000 });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const held = new HeldConnections(server);
    try {
      const open = (address: string, count: number) => {
        const opened = Array.from({ length: count }, () => new RawClient(port, address));
        clients.push(...opened);
        return opened;
      };
      const closed = (cs: RawClient[]) => cs.filter((c) => c.closedAt !== undefined).length;
      const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
      const flood = open('127.0.0.40', 20);
      await eventually(async () => held.of('127.0.0.40') + closed(flood) === 20, 5_000, 'the 20 connections taken or closed');
      expect({ held: held.of('127.0.0.40'), closed: closed(flood) }).toEqual({ held: 16, closed: 4 });
      // Said once for the four, naming the network and what to do, never the whole address.
      const said = warn.mock.calls.map((c) => String(c[0])).filter((line) => line.includes('past one address'));
      expect(said).toEqual([expect.stringMatching(/^connections from 127\.0\.0\.0\/24 past one address's share \(16 open\) are closed on arrival; .*trustedProxies/)]);
      warn.mockRestore();
      // Closed unanswered: no byte of theirs was read.
      expect(flood.filter((c) => c.closedAt !== undefined && c.answer !== '')).toEqual([]);

      const other = open('127.0.0.41', 1);
      await eventually(async () => held.of('127.0.0.41') === 1, 5_000, 'another address taken');
      // One of the 16 gone, that address is taken again.
      flood.find((c) => c.closedAt === undefined)!.destroy();
      await eventually(async () => held.of('127.0.0.40') === 15, 5_000, 'one released');
      const again = open('127.0.0.40', 1);
      await eventually(async () => held.of('127.0.0.40') === 16, 5_000, 'the address taken again');
      expect(closed([...other, ...again])).toBe(0);
    } finally {
      held.stop();
    }
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
