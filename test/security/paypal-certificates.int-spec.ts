import { generateKeyPairSync } from 'node:crypto';
import request from 'supertest';
import type { EndpointDefinition } from '../../src/config/options';
import { createPaypalProvider } from '../../src/providers/paypal.provider';
import { PAYPAL_TEST_SIGNING_CERT_PEM, PAYPAL_TEST_CERT_PATH, paypalHeaders, PaypalCertServer, startPaypalCertServer } from '../../src/testing/paypal';
import { paypalBody, paypalCert } from '../fixtures/paypal';
import { createTestApp, PLATFORMS, TestApp, truncateAll } from '../support/app';
import { uniqueId } from '../support/domain';

const WEBHOOK_ID = '4JH86294D6297924G';
/** Where PayPal serves certificates: every URL a delivery may name is under it. */
const CERTS = '/v1/notifications/certs';
/** The cache bound of the `paypal-small` provider: a few fetches show what 1,000 would. */
const SMALL_CACHE = 10;
/** The kit's adapter with a small cache, as a host's provider of its own name. */
const smallPaypal = { ...createPaypalProvider({ limits: { maxCachedCertificates: SMALL_CACHE } }), name: 'paypal-small' };

/**
 * What a sender can do with `PAYPAL-CERT-URL`, a URL it chooses (docs/security.md#paypals-certificate):
 * the service fetches only from the endpoint's hosts, follows no redirect, reads at most 16 KiB,
 * trusts only a certificate of PayPal's name that chains to its CA and is valid now, answers 503
 * within the receive bound when the host hangs, keeps a bounded number of certificates per endpoint,
 * and bounds what one address can make it fetch. Every delivery here is signed with the kit's key: only the
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
      [`${CERTS}/self-signed`]: paypalCert('certs/self-signed.pem'),
      [`${CERTS}/wrong-name`]: paypalCert('certs/wrong-name.pem'),
      [`${CERTS}/expired`]: paypalCert('certs/expired.pem'),
      [`${CERTS}/too-long`]: `${PAYPAL_TEST_SIGNING_CERT_PEM}${'\n'.repeat(16 * 1024)}`,
      // A page that shows what was asked for, with a valid certificate of PayPal's name inside it.
      [`${CERTS}/reflects`]: `<html><body><p>Not found: </p><pre>\n${PAYPAL_TEST_SIGNING_CERT_PEM}</pre></body></html>`,
      [`${CERTS}/redirect`]: (_req, res) => void res.writeHead(302, { location: PAYPAL_TEST_CERT_PATH }).end(),
      [`${CERTS}/server-error`]: (_req, res) => void res.writeHead(500).end(),
      [`${CERTS}/hangs`]: (_req, res) => void hanging.push(() => res.end()),
      // Outside PayPal's certificate path: never to be asked.
      '/v1/other/CERT-outside': PAYPAL_TEST_SIGNING_CERT_PEM,
    });
    // A server the endpoint does not list: it must never be asked.
    elsewhere = await startPaypalCertServer();
    const endpoints: EndpointDefinition[] = [
      { id: 'paypal-main', provider: 'paypal', secrets: [], merchantAccountId: 'M1', webhookId: WEBHOOK_ID, caPem: certs.caPem, certHosts: [certs.certHost] },
      // The same, for the flood: what one address has cost is counted per endpoint, from nothing here.
      { id: 'paypal-flood', provider: 'paypal', secrets: [], merchantAccountId: 'M1', webhookId: WEBHOOK_ID, caPem: certs.caPem, certHosts: [certs.certHost] },
      // And for the forged signatures, from nothing too.
      { id: 'paypal-forged', provider: 'paypal', secrets: [], merchantAccountId: 'M1', webhookId: WEBHOOK_ID, caPem: certs.caPem, certHosts: [certs.certHost] },
      { id: 'paypal-small', provider: 'paypal-small', secrets: [], merchantAccountId: 'M1', webhookId: WEBHOOK_ID, caPem: certs.caPem, certHosts: [certs.certHost] },
    ];
    t = await createTestApp({ endpoints, providers: [smallPaypal] }, { platform });
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
  const send = async (certUrl: string, text = body(), endpointId = 'paypal-main', privateKeyPem?: string) => {
    const res = await request(t.app.getHttpServer()).post(`/webhooks/${endpointId}`).set(paypalHeaders(WEBHOOK_ID, text, { certUrl, privateKeyPem })).send(text);
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

  it('URL tricks on a listed host: a fragment, a query, userinfo, a path outside PayPal\'s, over 512 characters are 401 unfetched; other spellings of the known URL are that URL, never fetched again', async () => {
    expect(await send(certs.certUrl)).toEqual({ status: 200, body: expect.objectContaining({ status: 'accepted' }) });
    const fetchedBefore = certs.requests;
    // 200 fragments of the real URL: on the code before, each was a URL of its own, fetched and cached.
    const fragments = [];
    for (let n = 0; n < 200; n++) fragments.push((await send(`${certs.certUrl}#${n}`)).status);
    const refused = [
      `${certs.certUrl}?v=1`,
      `${certs.certUrl}?`,
      certs.certUrl.replace('https://', 'https://user:pw@'),
      certs.certUrl.replace('https://', 'https://@'),
      certs.urlFor('/v1/other/CERT-outside'),
      certs.urlFor(`${CERTS}/../../other/CERT-outside`),
      certs.urlFor(`${CERTS}/CERT-${'x'.repeat(512)}`),
    ];
    const answers = [];
    for (const url of refused) answers.push((await send(url)).status);
    console.log(`[${platform}] 200 fragments of the real URL and ${refused.length} other tricks: ${certs.requests - fetchedBefore} fetched, answers ${JSON.stringify(countBy([...fragments, ...answers]))}`);
    expect(fragments).toEqual(Array(200).fill(401));
    expect(answers).toEqual(Array(refused.length).fill(401));
    expect(certs.requests - fetchedBefore).toBe(0);
    expect(certs.requestsTo('/v1/other/CERT-outside')).toBe(0);

    // A percent-encoded host, backslashes, a trailing dot on the address: the same URL once normalised, answered from the cache.
    const [, port] = certs.certHost.split(':');
    const spellings = [
      `https://127%2E0%2E0%2E1:${port}${PAYPAL_TEST_CERT_PATH}`,
      `https://127.0.0.1:${port}${PAYPAL_TEST_CERT_PATH.replace(/\//g, '\\')}`,
      `https://127.0.0.1.:${port}${PAYPAL_TEST_CERT_PATH}`,
    ];
    for (const url of spellings) expect({ url, answer: await send(url) }).toEqual({ url, answer: { status: 200, body: expect.objectContaining({ status: 'accepted' }) } });
    expect(certs.requests - fetchedBefore).toBe(0);
  });

  it('a page that holds a certificate among other text (one that reflects what was asked) is no certificate: 401', async () => {
    expect(await send(certs.urlFor(`${CERTS}/reflects`))).toEqual(INVALID);
    expect(certs.requestsTo(`${CERTS}/reflects`)).toBe(1);
  });

  it('a redirect is not followed: 401, and the place it points to is not asked', async () => {
    const before = certs.requestsTo(PAYPAL_TEST_CERT_PATH);
    expect(await send(certs.urlFor(`${CERTS}/redirect`))).toEqual(INVALID);
    expect(certs.requestsTo(`${CERTS}/redirect`)).toBe(1);
    expect(certs.requestsTo(PAYPAL_TEST_CERT_PATH)).toBe(before);
  });

  it.each([
    ['an answer over 16 KiB', `${CERTS}/too-long`],
    ['a self-signed certificate', `${CERTS}/self-signed`],
    ['a certificate of another name', `${CERTS}/wrong-name`],
    ['an expired certificate', `${CERTS}/expired`],
    ['a 404', `${CERTS}/none-here`],
  ])('%s: 401 invalid_signature; the URL is not asked again within the minute', async (_what, path) => {
    expect(await send(certs.urlFor(path))).toEqual(INVALID);
    expect(await send(certs.urlFor(path))).toEqual(INVALID);
    expect(certs.requestsTo(path)).toBe(1);
  });

  it('a 5xx is 503 (PayPal retries), and is asked again next time', async () => {
    expect(await send(certs.urlFor(`${CERTS}/server-error`))).toEqual({ status: 503, body: { error: 'unavailable' } });
    expect(await send(certs.urlFor(`${CERTS}/server-error`))).toEqual({ status: 503, body: { error: 'unavailable' } });
    expect(certs.requestsTo(`${CERTS}/server-error`)).toBe(2);
  });

  it('a certificate host that hangs: 503 within the receive bound', async () => {
    const started = Date.now();
    const answer = await send(certs.urlFor(`${CERTS}/hangs`));
    const elapsed = Date.now() - started;
    console.log(`[${platform}] a hanging certificate host answered ${answer.status} after ${elapsed} ms`);
    expect(answer).toEqual({ status: 503, body: { error: 'unavailable' } });
    // The fetch gives up at 3 s; the guard's own bound is 4.5 s; a loaded machine adds some.
    expect(elapsed).toBeGreaterThanOrEqual(2_900);
    expect(elapsed).toBeLessThan(8_000);
  });

  it(`${SMALL_CACHE + 1} distinct certificate URLs on an endpoint that caches ${SMALL_CACHE}: the oldest is fetched again, the newest are not`, async () => {
    const path = (n: number) => `${CERTS}/CERT-many-${n}`;
    for (let n = 0; n <= SMALL_CACHE; n++) certs.serve(path(n), PAYPAL_TEST_SIGNING_CERT_PEM);
    const text = body();
    for (let n = 0; n <= SMALL_CACHE; n++) expect((await send(certs.urlFor(path(n)), text, 'paypal-small')).status).toBe(200);
    const fetched = (n: number) => certs.requestsTo(path(n));
    expect([fetched(0), fetched(1), fetched(SMALL_CACHE)]).toEqual([1, 1, 1]);
    // #1 and the last are among those kept; #0 was dropped for the last.
    await send(certs.urlFor(path(1)), text, 'paypal-small');
    await send(certs.urlFor(path(SMALL_CACHE)), text, 'paypal-small');
    await send(certs.urlFor(path(0)), text, 'paypal-small');
    console.log(`[${platform}] fetches after ${SMALL_CACHE + 1} URLs and three again: #0 ${fetched(0)}, #1 ${fetched(1)}, #${SMALL_CACHE} ${fetched(SMALL_CACHE)}`);
    expect([fetched(0), fetched(1), fetched(SMALL_CACHE)]).toEqual([2, 1, 1]);
  });

  it('forged signatures naming valid certificates at distinct URLs: each fetch that verifies nothing counts against the sender; past 60, 429 unfetched', async () => {
    const otherKey = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    for (let n = 0; n < 70; n++) certs.serve(`${CERTS}/CERT-valid-${n}`, PAYPAL_TEST_SIGNING_CERT_PEM);
    const before = certs.requests;
    const answers: number[] = [];
    for (let n = 0; n < 70; n++) answers.push((await send(certs.urlFor(`${CERTS}/CERT-valid-${n}`), body(), 'paypal-forged', otherKey)).status);
    console.log(`[${platform}] 70 forged signatures, each naming a valid certificate at a URL of its own: ${certs.requests - before} fetched, answers ${JSON.stringify(countBy(answers))}`);
    expect(certs.requests - before).toBe(61);
    expect(answers).toEqual([...Array(61).fill(401), ...Array(9).fill(429)]);
  }, 60_000);

  it('a flood of forged certificate URLs from one address: at most 2 fetches at once, then 429 once more than 60 of its fetches came to nothing', async () => {
    // PayPal's real certificate is known before the flood: fetched for this endpoint, whatever another one holds.
    const realBefore = certs.requestsTo(PAYPAL_TEST_CERT_PATH);
    expect((await send(certs.certUrl, body(), 'paypal-flood')).status).toBe(200);
    expect(certs.requestsTo(PAYPAL_TEST_CERT_PATH) - realBefore).toBe(1);
    // 20 at once, each naming a URL that hangs: two are fetched, the rest refused 503 unfetched.
    for (let n = 0; n < 20; n++) certs.serve(`${CERTS}/hang-${n}`, (_req, res) => void hanging.push(() => res.writeHead(404).end()));
    const before = certs.requests;
    const flood = await Promise.all(Array.from({ length: 20 }, (_, n) => send(certs.urlFor(`${CERTS}/hang-${n}`), body(), 'paypal-flood')));
    const fetchedAtOnce = certs.requests - before;
    console.log(`[${platform}] 20 forged URLs at once: ${fetchedAtOnce} fetched, answers ${JSON.stringify(countBy(flood.map((a) => a.status)))}`);
    expect(fetchedAtOnce).toBe(2);
    expect(flood.every((a) => a.status === 503)).toBe(true);

    // Guessing: URLs PayPal's host does not have (404). The two fetches that hung count too: 59 are
    // asked, 61 in all; then the address is refused.
    const guessesBefore = certs.requests;
    const answers: number[] = [];
    for (let n = 0; n < 70; n++) answers.push((await send(certs.urlFor(`${CERTS}/guess-${n}`), body(), 'paypal-flood')).status);
    console.log(`[${platform}] 70 guessed URLs: ${certs.requests - guessesBefore} fetched, answers ${JSON.stringify(countBy(answers))}`);
    expect(certs.requests - guessesBefore).toBe(59);
    expect(answers.slice(0, 59).every((s) => s === 401)).toBe(true);
    expect(answers.slice(59)).toEqual(Array(11).fill(429));
    // A certificate it already holds still verifies, even for that address.
    expect((await send(certs.certUrl, body(), 'paypal-flood')).status).toBe(200);
  }, 60_000);
});

function countBy(values: number[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
