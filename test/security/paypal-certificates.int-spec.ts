import request from 'supertest';
import type { EndpointDefinition } from '../../src/config/options';
import { PAYPAL_TEST_SIGNING_CERT_PEM, PAYPAL_TEST_CERT_PATH, paypalHeaders, PaypalCertServer, startPaypalCertServer } from '../../src/testing/paypal';
import { paypalBody, paypalCert } from '../fixtures/paypal';
import { createTestApp, PLATFORMS, TestApp, truncateAll } from '../support/app';
import { uniqueId } from '../support/domain';

const WEBHOOK_ID = '4JH86294D6297924G';

/**
 * What a sender can do with `PAYPAL-CERT-URL`, a URL it chooses (docs/security.md#paypals-certificate):
 * the service fetches only from the endpoint's hosts, follows no redirect, reads at most 16 KiB,
 * trusts only a certificate of PayPal's name that chains to its CA and is valid now, answers 503
 * within the receive bound when the host hangs, keeps at most 1,000 certificates, and bounds what
 * one address can make it fetch. Every delivery here is signed with the kit's key: only the
 * certificate (or its URL) is wrong.
 */
describe.each(PLATFORMS)('%s: PayPal certificate URLs from an attacker', (platform) => {
  let certs: PaypalCertServer;
  let elsewhere: PaypalCertServer;
  let t: TestApp;
  /** Hanging answers, released at the end. */
  const hanging: Array<() => void> = [];

  beforeAll(async () => {
    certs = await startPaypalCertServer({
      '/certs/self-signed': paypalCert('certs/self-signed.pem'),
      '/certs/wrong-name': paypalCert('certs/wrong-name.pem'),
      '/certs/expired': paypalCert('certs/expired.pem'),
      '/certs/too-long': `${PAYPAL_TEST_SIGNING_CERT_PEM}${'#'.repeat(16 * 1024)}`,
      '/certs/redirect': (_req, res) => void res.writeHead(302, { location: PAYPAL_TEST_CERT_PATH }).end(),
      '/certs/server-error': (_req, res) => void res.writeHead(500).end(),
      '/certs/hangs': (_req, res) => void hanging.push(() => res.end()),
    });
    // A server the endpoint does not list: it must never be asked.
    elsewhere = await startPaypalCertServer();
    const endpoints: EndpointDefinition[] = [
      { id: 'paypal-main', provider: 'paypal', secrets: [], merchantAccountId: 'M1', webhookId: WEBHOOK_ID, caPem: certs.caPem, certHosts: [certs.certHost] },
      // The same, for the flood: what one address has cost is counted per endpoint, from nothing here.
      { id: 'paypal-flood', provider: 'paypal', secrets: [], merchantAccountId: 'M1', webhookId: WEBHOOK_ID, caPem: certs.caPem, certHosts: [certs.certHost] },
    ];
    t = await createTestApp({ endpoints }, { platform });
  });
  afterAll(async () => {
    for (const release of hanging) release();
    await t?.close();
    await certs?.close();
    await elsewhere?.close();
  });
  beforeEach(async () => {
    await truncateAll(t.dataSource);
  });

  const body = () => {
    const { body: sample } = paypalBody('PAYMENT.CAPTURE.COMPLETED');
    return JSON.stringify({ ...sample, id: `WH-${uniqueId('S')}` });
  };
  const send = async (certUrl: string, text = body(), endpointId = 'paypal-main') => {
    const res = await request(t.app.getHttpServer()).post(`/webhooks/${endpointId}`).set(paypalHeaders(WEBHOOK_ID, text, { certUrl })).send(text);
    return { status: res.status, body: res.body as unknown };
  };
  const INVALID = { status: 401, body: { error: 'invalid_signature' } };

  it("the kit's own certificate is accepted: the rest of this file refuses only what is wrong", async () => {
    expect(await send(certs.certUrl)).toEqual({ status: 200, body: expect.objectContaining({ status: 'accepted' }) });
  });

  it('a URL on a host the endpoint does not list, or over http, is 401 without a request to it', async () => {
    expect(await send(elsewhere.certUrl)).toEqual(INVALID);
    expect(await send(elsewhere.certUrl.replace('https:', 'http:'))).toEqual(INVALID);
    expect(await send(certs.certUrl.replace('https:', 'http:'))).toEqual(INVALID);
    expect(elsewhere.requests).toBe(0);
    console.log(`[${platform}] requests to an unlisted host: ${elsewhere.requests}`);
  });

  it('a redirect is not followed: 401, and the place it points to is not asked', async () => {
    const before = certs.requestsTo(PAYPAL_TEST_CERT_PATH);
    expect(await send(certs.urlFor('/certs/redirect'))).toEqual(INVALID);
    expect(certs.requestsTo('/certs/redirect')).toBe(1);
    expect(certs.requestsTo(PAYPAL_TEST_CERT_PATH)).toBe(before);
  });

  it.each([
    ['an answer over 16 KiB', '/certs/too-long'],
    ['a self-signed certificate', '/certs/self-signed'],
    ['a certificate of another name', '/certs/wrong-name'],
    ['an expired certificate', '/certs/expired'],
    ['a 404', '/certs/none-here'],
  ])('%s: 401 invalid_signature; the URL is not asked again within the minute', async (_what, path) => {
    expect(await send(certs.urlFor(path))).toEqual(INVALID);
    expect(await send(certs.urlFor(path))).toEqual(INVALID);
    expect(certs.requestsTo(path)).toBe(1);
  });

  it('a 5xx is 503 (PayPal retries), and is asked again next time', async () => {
    expect(await send(certs.urlFor('/certs/server-error'))).toEqual({ status: 503, body: { error: 'unavailable' } });
    expect(await send(certs.urlFor('/certs/server-error'))).toEqual({ status: 503, body: { error: 'unavailable' } });
    expect(certs.requestsTo('/certs/server-error')).toBe(2);
  });

  it('a certificate host that hangs: 503 within the receive bound', async () => {
    const started = Date.now();
    const answer = await send(certs.urlFor('/certs/hangs'));
    const elapsed = Date.now() - started;
    console.log(`[${platform}] a hanging certificate host answered ${answer.status} after ${elapsed} ms`);
    expect(answer).toEqual({ status: 503, body: { error: 'unavailable' } });
    // The fetch gives up at 3 s; the guard's own bound is 4.5 s; a loaded machine adds some.
    expect(elapsed).toBeGreaterThanOrEqual(2_900);
    expect(elapsed).toBeLessThan(8_000);
  });

  it('1,001 distinct certificate URLs: the cache keeps 1,000 (the oldest is fetched again, the newest are not)', async () => {
    const path = (n: number) => `/v1/notifications/certs/CERT-many-${n}`;
    for (let n = 0; n <= 1_000; n++) certs.serve(path(n), PAYPAL_TEST_SIGNING_CERT_PEM);
    const text = body();
    // Two at a time: one address's share of fetches.
    for (let n = 0; n <= 1_000; n += 2) {
      const answers = await Promise.all([n, n + 1].filter((k) => k <= 1_000).map((k) => send(certs.urlFor(path(k)), text)));
      for (const a of answers) expect(a.status).toBe(200);
    }
    const fetched = (n: number) => certs.requestsTo(path(n));
    expect([fetched(0), fetched(1), fetched(1_000)]).toEqual([1, 1, 1]);
    // #1 and #1000 are among the 1,000 kept; #0 was dropped for #1000.
    await send(certs.urlFor(path(1)), text);
    await send(certs.urlFor(path(1_000)), text);
    await send(certs.urlFor(path(0)), text);
    console.log(`[${platform}] fetches after 1,001 URLs and three again: #0 ${fetched(0)}, #1 ${fetched(1)}, #1000 ${fetched(1_000)}`);
    expect([fetched(0), fetched(1), fetched(1_000)]).toEqual([2, 1, 1]);
  }, 120_000);

  it('a flood of forged certificate URLs from one address: at most 2 fetches at once, then 429 once it named more than 60 refused URLs', async () => {
    // PayPal's real certificate is known before the flood.
    expect((await send(certs.certUrl, body(), 'paypal-flood')).status).toBe(200);
    // 20 at once, each naming a URL that hangs: two are fetched, the rest refused 503 unfetched.
    for (let n = 0; n < 20; n++) certs.serve(`/flood/hang-${n}`, (_req, res) => void hanging.push(() => res.writeHead(404).end()));
    const before = certs.requests;
    const flood = await Promise.all(Array.from({ length: 20 }, (_, n) => send(certs.urlFor(`/flood/hang-${n}`), body(), 'paypal-flood')));
    const fetchedAtOnce = certs.requests - before;
    console.log(`[${platform}] 20 forged URLs at once: ${fetchedAtOnce} fetched, answers ${JSON.stringify(countBy(flood.map((a) => a.status)))}`);
    expect(fetchedAtOnce).toBe(2);
    expect(flood.every((a) => a.status === 503)).toBe(true);

    // Guessing: URLs PayPal's host does not have (404). 61 are asked; then the address is refused.
    const guessesBefore = certs.requests;
    const answers: number[] = [];
    for (let n = 0; n < 70; n++) answers.push((await send(certs.urlFor(`/flood/guess-${n}`), body(), 'paypal-flood')).status);
    console.log(`[${platform}] 70 guessed URLs: ${certs.requests - guessesBefore} fetched, answers ${JSON.stringify(countBy(answers))}`);
    expect(certs.requests - guessesBefore).toBe(61);
    expect(answers.slice(0, 61).every((s) => s === 401)).toBe(true);
    expect(answers.slice(61)).toEqual(Array(9).fill(429));
    // A certificate it already holds still verifies, even for that address.
    expect((await send(certs.certUrl, body(), 'paypal-flood')).status).toBe(200);
  }, 60_000);
});

function countBy(values: number[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
