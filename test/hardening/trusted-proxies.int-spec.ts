import { AddressInfo } from 'node:net';
import { applyServerLimits, ServerLimits } from '../../src/http/server-limits';
import { WebhookSignatureGuard } from '../../src/webhooks/webhook-signature.guard';
import { createTestApp, eventually, PLATFORMS, TestApp } from '../support/app';
import { ForwardingProxy } from '../support/forwarding-proxy';
import { deliverFrom, expectAccepted, HeldConnections, RawClient, within } from '../support/raw-http';

/**
 * Behind a reverse proxy every client has the proxy's address. With the proxy named in
 * `trustedProxies`, a request from it is the client's that `X-Forwarded-For` names (the last
 * address there that is not a trusted proxy): the unverified-body share is that client's, so an
 * attacker's slow bodies through the proxy never keep another client's delivery through the same
 * proxy from being accepted; and the proxy's own connections are not held to one address's share.
 * Without it, the clients behind the proxy share one share (the behaviour before trusted proxies).
 * `X-Forwarded-For` from any other address changes nothing. The proxy (test/support) streams
 * bodies as they come, from 127.0.0.50; Linux routes all of 127/8 on loopback.
 */

const PROXY_ADDRESS = '127.0.0.50';
/** A range that holds the proxy's address: 127.0.0.48–55. */
const TRUSTED = '127.0.0.48/29';
const ATTACKER = '127.0.0.4';
const CLIENT = '127.0.0.5';
const BUDGET = 16_000;
const SHARE = 4_000;
/** 64 connections, so 16 an address; requests may take long, so stalled senders hold for the test. */
const LIMITS: ServerLimits = { httpRequestTimeoutMs: 30_000, httpHeadersTimeoutMs: 30_000, httpKeepAliveTimeoutMs: 5_000, httpMaxConnections: 64 };

/** The head of a webhook request declaring `length` bytes, with more header lines. */
const headWith = (length: number, extra: string[] = []) =>
  `POST /webhooks/standard-main HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n` +
  extra.map((line) => `${line}\r\n`).join('') +
  '\r\n';

/** The tally of answers to deliveries: `accepted`, or the status and body (or the error) of each other. */
function tally(answers: Array<{ status: number; body: string }>): Record<string, number> {
  return answers.reduce<Record<string, number>>((t, a) => {
    const outcome = a.status === 200 && a.body.includes('"status":"accepted"') ? 'accepted' : `${a.status} ${a.body}`;
    return { ...t, [outcome]: (t[outcome] ?? 0) + 1 };
  }, {});
}

/** A listening app (with or without trusted proxies) and a proxy in front of it. */
function proxiedApp(platform: (typeof PLATFORMS)[number], trustedProxies: string[] | undefined) {
  const s = {} as { t: TestApp; port: number; guard: WebhookSignatureGuard; proxy: ForwardingProxy; client: (port: number, address: string) => RawClient };
  const clients: RawClient[] = [];
  s.client = (port, address) => {
    const c = new RawClient(port, address);
    clients.push(c);
    return c;
  };
  beforeAll(async () => {
    s.t = await createTestApp(
      { ...(trustedProxies ? { trustedProxies } : {}), tuning: { unverifiedBodyBudgetBytes: BUDGET, unverifiedBodyClientShareBytes: SHARE } },
      { platform },
    );
    applyServerLimits(s.t.app.getHttpServer(), LIMITS);
    await s.t.app.listen(0, '127.0.0.1');
    s.port = (s.t.app.getHttpServer().address() as AddressInfo).port;
    s.guard = s.t.get(WebhookSignatureGuard);
    s.proxy = await new ForwardingProxy(s.port, PROXY_ADDRESS).start();
  });
  afterEach(async () => {
    for (const c of clients.splice(0)) c.destroy();
    await eventually(async () => s.guard.unverified.inFlight === 0, 5_000, 'the stalled bytes given back');
  });
  afterAll(async () => {
    await s.proxy?.stop();
    await s.t?.close();
  });
  return s;
}

describe.each(PLATFORMS)('trusted proxies on %s', (platform) => {
  describe(`trustedProxies ${TRUSTED}`, () => {
    const s = proxiedApp(platform, [TRUSTED]);
    /** A sender through the proxy that declares 8,000 bytes, sends `bytes` of them and stalls. */
    const stallThroughProxy = (address: string, bytes: number, extra: string[] = []) =>
      s.client(s.proxy.port, address).write(headWith(8_000, extra) + '{"type":'.padEnd(bytes, ' '));

    it("an attacker's slow bodies through the proxy hold its own share only: another client's deliveries through the same proxy are accepted", async () => {
      const unverified = s.guard.unverified;
      stallThroughProxy(ATTACKER, 2_000);
      stallThroughProxy(ATTACKER, 2_000);
      await eventually(async () => unverified.inFlight === SHARE, 5_000, "the attacker's slow bodies arrived");
      // Past its share, the attacker's next delivery through the proxy is refused.
      const over = s.client(s.proxy.port, ATTACKER);
      over.write(headWith(8_000) + '{');
      await eventually(async () => over.answer.startsWith('HTTP/1.1 503 '), 5_000, "the attacker's third delivery answered");

      const answers = [];
      for (let i = 0; i < 5; i++) answers.push(await within(deliverFrom(s.proxy.port, CLIENT), 5_000, 'a delivery through the proxy answered'));
      expect(tally(answers)).toEqual({ accepted: 5 });
      expect({ attacker: unverified.heldBy(ATTACKER), proxy: unverified.heldBy(PROXY_ADDRESS), client: unverified.heldBy(CLIENT) }).toEqual({
        attacker: SHARE,
        proxy: 0,
        client: 0,
      });
    });

    it('an X-Forwarded-For the client sent through the proxy is not believed: the address the proxy appended is the client', async () => {
      stallThroughProxy(ATTACKER, 1_000, ['X-Forwarded-For: 127.0.0.9']);
      await eventually(async () => s.guard.unverified.inFlight === 1_000, 5_000, 'the slow body arrived');
      expect({ attacker: s.guard.unverified.heldBy(ATTACKER), spoofed: s.guard.unverified.heldBy('127.0.0.9') }).toEqual({ attacker: 1_000, spoofed: 0 });
    });

    it('X-Forwarded-For sent directly from an untrusted address changes nothing: the client is its socket address, its share one', async () => {
      const unverified = s.guard.unverified;
      const direct = (xff: string) => s.client(s.port, '127.0.0.6').write(headWith(8_000, [`X-Forwarded-For: ${xff}`]) + '{"type":'.padEnd(2_000, ' '));
      direct('127.0.0.7');
      direct(`127.0.0.8, ${PROXY_ADDRESS}`);
      await eventually(async () => unverified.inFlight === SHARE, 5_000, 'the slow bodies arrived');
      expect(['127.0.0.6', '127.0.0.7', '127.0.0.8', PROXY_ADDRESS].map((a) => unverified.heldBy(a))).toEqual([SHARE, 0, 0, 0]);
      // A fresh address in the header buys no fresh share.
      const third = s.client(s.port, '127.0.0.6');
      third.write(headWith(8_000, ['X-Forwarded-For: 127.0.0.10']) + '{');
      await within(third.closed, 5_000, 'the third delivery answered');
      expect(third.answer).toMatch(/^HTTP\/1\.1 503 /);
    });

    it("the connection share does not apply to the trusted proxy: 30 of its connections are held, while an untrusted address's stop at 16", async () => {
      const held = new HeldConnections(s.t.app.getHttpServer());
      try {
        const other = Array.from({ length: 30 }, () => s.client(s.port, '127.0.0.60'));
        const proxy = Array.from({ length: 30 }, () => s.client(s.port, PROXY_ADDRESS));
        const closed = (cs: RawClient[]) => cs.filter((c) => c.closedAt !== undefined).length;
        await eventually(
          async () => held.of(PROXY_ADDRESS) + closed(proxy) === 30 && held.of('127.0.0.60') + closed(other) === 30,
          10_000,
          'the connections taken or closed',
        );
        expect({ proxy: held.of(PROXY_ADDRESS), other: held.of('127.0.0.60'), otherClosed: closed(other) }).toEqual({ proxy: 30, other: 16, otherClosed: 14 });
      } finally {
        held.stop();
      }
    });
  });

  describe('no trustedProxies', () => {
    const s = proxiedApp(platform, undefined);

    it("every client through the proxy is the proxy: an attacker's slow bodies fill its one share, and another client's delivery through it answers 503 (directly, it is accepted)", async () => {
      const unverified = s.guard.unverified;
      for (let i = 0; i < 2; i++) s.client(s.proxy.port, ATTACKER).write(headWith(8_000) + '{"type":'.padEnd(2_000, ' '));
      await eventually(async () => unverified.inFlight === SHARE, 5_000, "the attacker's slow bodies arrived");
      expect({ proxy: unverified.heldBy(PROXY_ADDRESS), attacker: unverified.heldBy(ATTACKER) }).toEqual({ proxy: SHARE, attacker: 0 });

      const answer = await within(deliverFrom(s.proxy.port, CLIENT), 5_000, 'a delivery through the proxy answered');
      expect({ status: answer.status, body: answer.body }).toEqual({ status: 503, body: '{"error":"unavailable"}' });
      expectAccepted(await within(deliverFrom(s.port, CLIENT), 5_000, 'a direct delivery answered'));
    });
  });
});
