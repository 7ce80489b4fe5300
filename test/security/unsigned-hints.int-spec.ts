import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EndpointDefinition } from '../../src/config/options';
import { KnownPayments } from '../../src/webhooks/known-payments.service';
import { EndpointRegistry } from '../../src/webhooks/endpoint-registry';
import { WebhookSignatureGuard } from '../../src/webhooks/webhook-signature.guard';
import { createTestApp, eventually, PLATFORMS, TEST_ENDPOINTS, TestApp } from '../support/app';
import { driver } from '../support/domain';
import { ForwardingProxy } from '../support/forwarding-proxy';
import { MollieStub } from '../support/mollie-stub';

/** The address the suite's reverse proxy connects from, named in `trustedProxies`. */
const PROXY_ADDRESS = '127.0.99.1';

interface Answer {
  status: number;
  body: unknown;
}

/** A Mollie hint `id=<paymentId>` from `localAddress` (Linux routes all of 127/8 on loopback: each is a client of its own). */
function hintFrom(port: number, localAddress: string, paymentId: string, agent: Agent | false = false, headers: Record<string, string> = {}): Promise<Answer> {
  const body = `id=${paymentId}`;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        localAddress,
        agent,
        method: 'POST',
        path: '/webhooks/mollie-main',
        headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(body.length) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: text.length > 0 ? JSON.parse(text) : null }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * What an unsigned sender can make the service spend (docs/security.md): Mollie's hints are
 * unsigned, and authenticated by fetching the payment they name with the merchant's API key. A hint
 * is answered only by a fetch that began after it arrived (a change is never lost to an earlier
 * answer, and a failure is never reused); a 404 is remembered for a minute; an address that names
 * many payments Mollie does not have is refused without a call; payments the service knows are
 * fetched whatever a flood of forged ids does. Against a local stub of Mollie's API through the
 * official client, on a listening server, Express and Fastify, real PostgreSQL.
 */
describe.each(PLATFORMS)('%s: unsigned hints', (platform) => {
  const stub = new MollieStub();
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  let port: number;
  const mollie = (): EndpointDefinition => ({ id: 'mollie-main', provider: 'mollie', secrets: [], merchantAccountId: stub.profileId, apiKey: stub.apiKey, apiBaseUrl: stub.url });
  /** Addresses of a test of its own: what one address named in an earlier test is never counted in another. */
  let block = 0;
  const addresses = () => {
    block++;
    return (host: number) => `127.0.${block}.${host}`;
  };

  beforeAll(async () => {
    await stub.start();
    t = await createTestApp({ endpoints: [...TEST_ENDPOINTS, mollie()], trustedProxies: [PROXY_ADDRESS] }, { platform });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
    d = driver(t);
  });
  afterAll(async () => {
    await t?.close();
    await stub.stop();
  });
  beforeEach(() => stub.reset());
  afterEach(() => jest.restoreAllMocks());

  const requestsFor = (prefix: string) => stub.requests.filter((r) => r.paymentId.startsWith(prefix)).length;
  const later = (seconds: number) => t.clock.setSeconds(Math.floor(t.clock.now() / 1000) + seconds);

  it('two changes within one second are two recorded events: the second hint fetches again', async () => {
    const at = addresses();
    const order = await d.createOrder('49.90', 'EUR');
    const payment = stub.addPayment({ status: 'paid', orderId: order.id });
    // The module's clock held still: both hints come at the same instant.
    jest.spyOn(t.clock, 'now').mockReturnValue(t.clock.now());
    expect(await hintFrom(port, at(1), payment.id)).toEqual({ status: 200, body: { status: 'accepted', eventId: `${payment.id}:paid:0.00:0` } });
    stub.refund(payment.id, '10.00');
    expect(await hintFrom(port, at(1), payment.id)).toEqual({ status: 200, body: { status: 'accepted', eventId: `${payment.id}:paid:10.00:0` } });
    expect(stub.requestsFor(payment.id)).toBe(2);
    expect(await d.count(`SELECT 1 FROM webhook_inbox WHERE resource_id = $1`, [payment.id])).toBe(2);
  });

  it('a hint that arrives while a fetch runs is answered by a fetch that began after it', async () => {
    const at = addresses();
    const payment = stub.addPayment({ status: 'paid' });
    const release = stub.hold();
    const first = hintFrom(port, at(1), payment.id);
    await eventually(async () => stub.requestsFor(payment.id) === 1, 5_000, 'the first fetch');
    // Refunded at Mollie while the first fetch is on its way: Mollie's own hint follows, and is
    // being checked (its bytes held by the guard) before Mollie answers the first fetch.
    stub.refund(payment.id, '49.90');
    const second = hintFrom(port, at(2), payment.id);
    const hintBytes = Buffer.byteLength(`id=${payment.id}`);
    await eventually(async () => t.get(WebhookSignatureGuard).unverified.inFlight === 2 * hintBytes, 5_000, 'both hints being checked');
    expect(stub.requestsFor(payment.id)).toBe(1);
    release();
    expect(await first).toEqual({ status: 200, body: { status: 'accepted', eventId: `${payment.id}:paid:0.00:0` } });
    expect(await second).toEqual({ status: 200, body: { status: 'accepted', eventId: `${payment.id}:paid:49.90:0` } });
    expect(stub.requestsFor(payment.id)).toBe(2);
  });

  it('a failed fetch is never reused: Mollie answering 500, then answering again, the next hint is recorded', async () => {
    const at = addresses();
    const payment = stub.addPayment({ status: 'paid' });
    jest.spyOn(t.clock, 'now').mockReturnValue(t.clock.now());
    // The client tries a 5xx three times itself (here without waiting: Retry-After 0).
    stub.failNext(3, 500, { retryAfter: 0 });
    expect(await hintFrom(port, at(1), payment.id)).toEqual({ status: 503, body: { error: 'unavailable' } });
    expect(await hintFrom(port, at(1), payment.id)).toEqual({ status: 200, body: { status: 'accepted', eventId: `${payment.id}:paid:0.00:0` } });
    expect(stub.requests.map((r) => r.status)).toEqual([500, 500, 500, 200]);
  });

  it('a payment Mollie answered 404 for is not asked about again for a minute, whoever hints it', async () => {
    const at = addresses();
    const notFound = { status: 400, body: { error: 'malformed_payload', detail: "Mollie has no payment tr_gone0001 for this endpoint's API key" } };
    expect(await hintFrom(port, at(1), 'tr_gone0001')).toEqual(notFound);
    later(59);
    expect(await hintFrom(port, at(1), 'tr_gone0001')).toEqual(notFound);
    expect(await hintFrom(port, at(2), 'tr_gone0001')).toEqual(notFound);
    expect(stub.requestsFor('tr_gone0001')).toBe(1);
    later(61);
    expect(await hintFrom(port, at(2), 'tr_gone0001')).toEqual(notFound);
    expect(stub.requestsFor('tr_gone0001')).toBe(2);
  });

  it('an address that named more than 60 payments Mollie has not: 429 rate_limited without a call; other addresses and known payments go on', async () => {
    const at = addresses();
    const guesser = at(66);
    for (let i = 0; i < 61; i++) {
      expect((await hintFrom(port, guesser, `tr_guess${i}`)).status).toBe(400);
    }
    expect(requestsFor('tr_guess')).toBe(61);
    expect(await hintFrom(port, guesser, 'tr_guess61')).toEqual({ status: 429, body: { error: 'rate_limited' } });
    expect(await hintFrom(port, guesser, 'tr_guess0')).toEqual({ status: 429, body: { error: 'rate_limited' } });
    expect(requestsFor('tr_guess')).toBe(61);
    // Another address is asked for.
    expect((await hintFrom(port, at(2), 'tr_guess62')).status).toBe(400);
    expect(requestsFor('tr_guess')).toBe(62);
    // A payment Mollie has answered for is fetched, even from the refused address; one only the
    // database knows is not worth a question for a refused address.
    const order = await d.createOrder('49.90', 'EUR');
    const registered = stub.addPayment({ status: 'paid', orderId: order.id });
    await d.registerPayment(order.id, 'mollie', registered.id);
    expect(await hintFrom(port, guesser, registered.id)).toEqual({ status: 429, body: { error: 'rate_limited' } });
    expect(await hintFrom(port, at(2), registered.id)).toEqual({ status: 200, body: { status: 'accepted', eventId: `${registered.id}:paid:0.00:0` } });
    expect(await hintFrom(port, guesser, registered.id)).toEqual({ status: 200, body: { status: 'duplicate', eventId: `${registered.id}:paid:0.00:0` } });
    // A minute after the ids it named, it is asked for again.
    later(61);
    expect((await hintFrom(port, guesser, 'tr_guess63')).status).toBe(400);
    expect(requestsFor('tr_guess')).toBe(63);
  });

  it('behind a trusted proxy the budgets are the forwarded client\'s: one client refused, another through the same proxy fetched; a forged X-Forwarded-For from elsewhere changes nothing', async () => {
    const at = addresses();
    const proxy = await new ForwardingProxy(port, PROXY_ADDRESS).start();
    try {
      const guesser = at(66);
      for (let i = 0; i < 61; i++) expect((await hintFrom(proxy.port, guesser, `tr_proxied${i}`)).status).toBe(400);
      expect(await hintFrom(proxy.port, guesser, 'tr_proxied61')).toEqual({ status: 429, body: { error: 'rate_limited' } });
      // Another client of the same proxy is not the guesser.
      expect((await hintFrom(proxy.port, at(2), 'tr_proxied62')).status).toBe(400);
      expect(requestsFor('tr_proxied')).toBe(62);
      // Sent directly, a claim to be someone else is not believed: the budget spent is the sender's own.
      for (let i = 63; i < 124; i++) expect((await hintFrom(port, at(4), `tr_proxied${i}`, false, { 'x-forwarded-for': at(5) })).status).toBe(400);
      expect(await hintFrom(port, at(4), 'tr_proxied124', false, { 'x-forwarded-for': at(5) })).toEqual({ status: 429, body: { error: 'rate_limited' } });
      expect((await hintFrom(proxy.port, at(5), 'tr_proxied125')).status).toBe(400);
      expect(requestsFor('tr_proxied')).toBe(124);
    } finally {
      await proxy.stop();
    }
  });

  it('forged hints from four addresses, 96 connections, Mollie answering in 300 ms: every real hint is recorded, and each address costs a bounded number of calls', async () => {
    const at = addresses();
    stub.slow(300);
    const real: string[] = [];
    for (let i = 0; i < 10; i++) {
      const order = await d.createOrder('49.90', 'EUR');
      const payment = stub.addPayment({ status: 'paid', orderId: order.id });
      await d.registerPayment(order.id, 'mollie', payment.id);
      real.push(payment.id);
    }
    const attackers = [11, 12, 13, 14].map((host) => ({ host, agent: new Agent({ keepAlive: true, maxSockets: 24 }) }));
    try {
      const flood = attackers.flatMap(({ host, agent }) =>
        Array.from({ length: 100 }, (_, i) => hintFrom(port, at(host), `tr_forged${host}x${i}`, agent)),
      );
      // Mollie's own hints arrive once the flood is under way.
      await eventually(async () => requestsFor('tr_forged') >= 32, 10_000, 'the flood under way');
      const answers = await Promise.all(real.map((id) => hintFrom(port, at(1), id)));
      expect(answers).toEqual(real.map((id) => ({ status: 200, body: { status: 'accepted', eventId: `${id}:paid:0.00:0` } })));
      const refused = await Promise.all(flood);
      const statuses = refused.map((a) => a.status);
      process.stdout.write(
        `[${platform}] flood answers: ${[400, 429, 503].map((s) => `${s}×${statuses.filter((x) => x === s).length}`).join(' ')}; calls per address: ${attackers.map(({ host }) => requestsFor(`tr_forged${host}x`)).join(', ')}\n`,
      );
      expect(statuses.filter((s) => s !== 400 && s !== 429 && s !== 503)).toEqual([]);
      // At most 61 ids answered 404, and what it had in flight when the 61st came back (its share: 8).
      for (const { host } of attackers) expect(requestsFor(`tr_forged${host}x`)).toBeLessThanOrEqual(61 + 7);
    } finally {
      for (const { agent } of attackers) agent.destroy();
    }
    expect(await d.count(`SELECT 1 FROM webhook_inbox WHERE resource_id LIKE 'tr_forged%'`)).toBe(0);
  });

  it('the service knows a payment registered for an order, or named by an event recorded before; no other', async () => {
    const at = addresses();
    const endpoint = t.get(EndpointRegistry).get('mollie-main')!;
    const known = t.get(KnownPayments);
    const order = await d.createOrder('49.90', 'EUR');
    const registered = `tr_registered${platform}`;
    await d.registerPayment(order.id, 'mollie', registered);
    const seen = stub.addPayment({ status: 'open' });
    expect((await hintFrom(port, at(1), seen.id)).status).toBe(200);
    expect(await known.knows(endpoint, registered)).toBe(true);
    expect(await known.knows(endpoint, seen.id)).toBe(true);
    expect(await known.knows(endpoint, 'tr_never0001')).toBe(false);
  });
});
