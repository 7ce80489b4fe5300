import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { paypalBody, paypalCert, paypalVectors, PaypalVector } from '../../test/fixtures/paypal';
import { padToCrc32 } from '../../test/support/crc32-collision';
import { crc32 } from '../common/crc32';
import { resolveEndpoint } from '../config/endpoints';
import type { EndpointDefinition } from '../config/options';
import { validateEndpoints } from '../config/validate';
import { nodeHeaders } from '../testing/receive';
import { PAYPAL_TEST_CA_PEM, PAYPAL_TEST_SIGNING_CERT_PEM, paypalHeaders, paypalTransmissionTime } from '../testing/paypal';
import { providerTable } from '.';
import { CertificateAnswer, CertificateFetcher, PaypalCertificates, DEFAULT_CERTIFICATE_LIMITS, bundleTrust, verifyCertificate } from './paypal-certificates';
import { allowedCertUrl, createPaypalProvider, paypalProvider } from './paypal.provider';
import type { ProviderAdapter } from './provider';
import { receiveDelivery } from './receive';

const DIGICERT_ROOT = paypalCert('digicert/DigiCertHighAssuranceEVRootCA.root.pem');
const KIT_URL = 'https://api.sandbox.paypal.com/v1/notifications/certs/CERT-kit';
const WEBHOOK_ID = '8PT597110X687430LKGECATA';

/** A fetcher that answers each URL from a table (a PEM, or an answer), counting calls. */
function fakeFetcher(table: Record<string, string | CertificateAnswer>, fallback?: string): CertificateFetcher & { calls: string[] } {
  const calls: string[] = [];
  const fetcher = (async (url: URL) => {
    calls.push(url.href);
    const entry = table[url.href] ?? fallback;
    if (entry === undefined) return { outcome: 'refused', reason: 'answered 404' };
    return typeof entry === 'string' ? { outcome: 'ok', pem: entry } : entry;
  }) as unknown as CertificateFetcher & { calls: string[] };
  fetcher.calls = calls;
  return fetcher;
}

/** A paypal endpoint of `adapter`, validated and resolved as at start. */
function endpointOf(adapter: ProviderAdapter, fields: Partial<EndpointDefinition> & Record<string, unknown> = {}, nowMs = Date.now()) {
  const table = new Map([...providerTable(), ['paypal', adapter]]);
  const [definition] = validateEndpoints(
    'WEBHOOK_ENDPOINTS',
    [{ id: 'pp', provider: 'paypal', merchantAccountId: 'acc_pp', webhookId: WEBHOOK_ID, caPem: PAYPAL_TEST_CA_PEM, ...fields }],
    nowMs,
    table,
  );
  return resolveEndpoint(definition, table);
}

/**
 * A paypal endpoint of `adapter` resolved without the start-up checks: for PayPal's simulator
 * vectors, whose webhook id no start accepts (anyone can have deliveries signed for it), to show
 * the signatures themselves verify.
 */
function uncheckedEndpointOf(adapter: ProviderAdapter, fields: Record<string, unknown>) {
  const table = new Map([...providerTable(), ['paypal', adapter]]);
  const definition = { id: 'pp', provider: 'paypal', secrets: [], merchantAccountId: 'acc_pp', toleranceSeconds: 300, ...fields } as EndpointDefinition;
  return resolveEndpoint(definition, table);
}

function receive(endpoint: ReturnType<typeof endpointOf>, headers: Record<string, string | undefined>, body: string | Buffer, nowMs = Date.now(), sender = '203.0.113.7') {
  return receiveDelivery(endpoint, { headers: nodeHeaders(headers), body: typeof body === 'string' ? Buffer.from(body) : body }, [], nowMs, { sender });
}

describe('paypal: the published signature vectors', () => {
  const vectors = paypalVectors();

  it('there are the 11 vectors the fixtures README lists', () => {
    expect(vectors.map((v) => v.name)).toHaveLength(11);
  });

  /** Inside the vector's certificate's validity, a minute after it was sent. */
  const nowOf = (v: PaypalVector) => Date.parse(v.headers['paypal-transmission-time']) + 60_000;
  const setUp = (v: PaypalVector, fields: Record<string, unknown> = {}) => {
    const fetcher = fakeFetcher({}, v.cert_pem);
    const adapter = createPaypalProvider({ fetchCertificate: fetcher });
    // PayPal's chain: the served leaf, the bundled DigiCert intermediate, DigiCert's root as the anchor.
    const settings = { webhookId: v.webhook_id, caPem: DIGICERT_ROOT, ...fields };
    const endpoint = v.webhook_id === 'WEBHOOK_ID' ? uncheckedEndpointOf(adapter, settings) : endpointOf(adapter, settings, nowOf(v));
    return { fetcher, endpoint };
  };
  /**
   * The vector's headers, its certificate URL under PayPal's certificate path: the Java SDK's test
   * names `/v1/notifications/test`, which no delivery may name. The URL is not signed.
   */
  const headersOf = (v: PaypalVector) => {
    const url = new URL(v.headers['paypal-cert-url']);
    return url.pathname.startsWith('/v1/notifications/certs/') ? v.headers : { ...v.headers, 'paypal-cert-url': `${url.origin}/v1/notifications/certs/CERT-test` };
  };

  it('the Java SDK test\'s certificate URL, outside /v1/notifications/certs/, is refused unfetched', async () => {
    const v = vectors.find((x) => x.name === 'java-sdk-test-2017-billing-plan-created')!;
    const { endpoint, fetcher } = setUp(v);
    expect(await receive(endpoint, v.headers, Buffer.from(v.body_base64, 'base64'), nowOf(v))).toEqual({ ok: false, error: 'invalid_signature' });
    expect(fetcher.calls).toEqual([]);
  });

  it.each(vectors.map((v) => [v.name, v] as const))('%s verifies, and is refused once a byte, the key or a signed part changes', async (_name, vector) => {
    const v = { ...vector, headers: headersOf(vector) };
    const body = Buffer.from(v.body_base64, 'base64');
    const eventId = JSON.parse(body.toString('utf8')).id as string;
    const now = nowOf(v);
    const { endpoint, fetcher } = setUp(v);
    const accepted = await receive(endpoint, v.headers, body, now);
    expect(accepted).toMatchObject({ ok: true, events: [{ eventId, deliveryId: v.headers['paypal-transmission-id'] }] });
    expect(fetcher.calls).toEqual([v.headers['paypal-cert-url']]);

    const refused = { ok: false, error: 'invalid_signature' };
    // A byte of the body: the last one, and the body parsed and written again (indented).
    const changed = Buffer.from(body);
    changed[changed.length - 1] ^= 0x01;
    expect(await receive(endpoint, v.headers, changed, now)).toEqual(refused);
    expect(await receive(endpoint, v.headers, Buffer.from(JSON.stringify(JSON.parse(body.toString('utf8')), null, 1)), now)).toEqual(refused);
    // Each signed part: the webhook id (the endpoint's), the transmission id, the transmission time.
    expect(await receive(setUp(v, { webhookId: `${v.webhook_id}X` }).endpoint, v.headers, body, now)).toEqual(refused);
    expect(await receive(endpoint, { ...v.headers, 'paypal-transmission-id': `${v.headers['paypal-transmission-id']}0` }, body, now)).toEqual(refused);
    const time = v.headers['paypal-transmission-time'];
    expect(await receive(endpoint, { ...v.headers, 'paypal-transmission-time': paypalTransmissionTime(Date.parse(time) + 1000) }, body, now)).toEqual(refused);
    // Another key: the kit's certificate (valid, of PayPal's name, trusted) at the same URL.
    const kitAdapter = createPaypalProvider({ fetchCertificate: fakeFetcher({}, PAYPAL_TEST_SIGNING_CERT_PEM) });
    const kitSettings = { webhookId: v.webhook_id, caPem: PAYPAL_TEST_CA_PEM, toleranceSeconds: 0 };
    const other = v.webhook_id === 'WEBHOOK_ID' ? uncheckedEndpointOf(kitAdapter, kitSettings) : endpointOf(kitAdapter, kitSettings);
    expect(await receive(other, v.headers, body)).toEqual(refused);
    // The same certificate once it has expired: it no longer verifies anything.
    expect(await receive(endpoint, v.headers, body, Date.parse(v.cert_validity.not_after) + 1000)).toEqual(refused);
  });

  it('the signed string is the CRC32 of the raw bytes (the non-ASCII vector)', () => {
    const v = vectors.find((x) => x.name === 'prod-live-2025-payment-sale-pending-non-ascii')!;
    const body = Buffer.from(v.body_base64, 'base64');
    expect(body.toString('utf8')).toContain('€');
    expect(v.expected.signed_string).toBe(
      `${v.headers['paypal-transmission-id']}|${v.headers['paypal-transmission-time']}|${v.webhook_id}|${crc32(body)}`,
    );
  });
});

describe('paypal: PayPal signs the CRC32 of the body, not the body', () => {
  // A live delivery (not the simulator's): its signature is PayPal's, for a webhook of a merchant.
  const v = paypalVectors().find((x) => x.name === 'prod-live-2025-payment-sale-pending-non-ascii')!;
  const genuine = Buffer.from(v.body_base64, 'base64');
  const now = Date.parse(v.headers['paypal-transmission-time']) + 60_000;
  const setUp = () => {
    const fetcher = fakeFetcher({}, v.cert_pem);
    return endpointOf(createPaypalProvider({ fetchCertificate: fetcher }), { webhookId: v.webhook_id, caPem: DIGICERT_ROOT }, now);
  };
  // Other bytes of the same CRC32: PayPal's sample refund (another event), padded with 48 spaces and tabs.
  const forged = padToCrc32(Buffer.from(paypalBody('PAYMENT.CAPTURE.REFUNDED').text), crc32(genuine));
  const forgedId = JSON.parse(forged.toString('utf8')).id as string;

  it('the forgery: another event whose bytes have the genuine CRC32, still JSON', () => {
    expect(crc32(forged)).toBe(crc32(genuine));
    expect(forged.equals(genuine)).toBe(false);
    expect(JSON.parse(forged.toString('utf8'))).toMatchObject({ event_type: 'PAYMENT.CAPTURE.REFUNDED' });
  });

  it("the same transmission with other bytes of the body's CRC32 is refused once the genuine one came; the genuine bytes again are accepted", async () => {
    const endpoint = setUp();
    expect(await receive(endpoint, v.headers, genuine, now)).toMatchObject({ ok: true });
    const outcome = await receive(endpoint, v.headers, forged, now + 1_000);
    console.log(`a forged body of the genuine CRC32 under the genuine headers, after the genuine one: ${JSON.stringify(outcome).slice(0, 120)}`);
    expect(outcome).toEqual({ ok: false, error: 'invalid_signature' });
    // A resend of the same delivery: the same transmission, the same bytes.
    expect(await receive(endpoint, v.headers, genuine, now + 2_000)).toMatchObject({ ok: true });
  });

  it('what is left: the forged bytes first are accepted, and then the genuine ones are refused (docs/security.md)', async () => {
    const endpoint = setUp();
    expect(await receive(endpoint, v.headers, forged, now)).toMatchObject({ ok: true, events: [{ eventId: forgedId }] });
    expect(await receive(endpoint, v.headers, genuine, now)).toEqual({ ok: false, error: 'invalid_signature' });
  });

  it("a transmission is remembered for as long as it can be within the endpoint's tolerance, per endpoint", async () => {
    const hour = endpointOf(createPaypalProvider({ fetchCertificate: fakeFetcher({}, v.cert_pem) }), { webhookId: v.webhook_id, caPem: DIGICERT_ROOT, toleranceSeconds: 3_600 }, now);
    expect(await receive(hour, v.headers, genuine, now)).toMatchObject({ ok: true });
    // 59 minutes after its transmission time: still within the tolerance of an hour, still refused.
    expect(await receive(hour, v.headers, forged, now + 58 * 60_000)).toEqual({ ok: false, error: 'invalid_signature' });
    // Another endpoint never saw it.
    expect(await receive(setUp(), v.headers, forged, now)).toMatchObject({ ok: true });
  });
});

describe('paypal: the checks and their order', () => {
  // A whole second, as PayPal's transmission times are.
  const now = Math.floor(Date.now() / 1000) * 1000;
  const body = paypalBody('PAYMENT.CAPTURE.COMPLETED').text;
  const setUp = (fields: Record<string, unknown> = {}) => {
    const fetcher = fakeFetcher({ [KIT_URL]: PAYPAL_TEST_SIGNING_CERT_PEM });
    return { fetcher, endpoint: endpointOf(createPaypalProvider({ fetchCertificate: fetcher }), fields) };
  };
  const signed = (b: string | Buffer = body, options: Partial<Parameters<typeof paypalHeaders>[2]> = {}) =>
    paypalHeaders(WEBHOOK_ID, b, { certUrl: KIT_URL, transmissionTime: paypalTransmissionTime(now), ...options });

  it('a delivery signed with the kit is accepted, with its event, its transmission as delivery id, and the order as resource', async () => {
    const { endpoint, fetcher } = setUp();
    const headers = signed();
    expect(await receive(endpoint, headers, body, now)).toEqual({
      ok: true,
      secretIndex: null,
      events: [
        expect.objectContaining({
          eventId: 'WH-58D329510W468432D-8HN650336L201105X',
          eventType: 'PAYMENT.CAPTURE.COMPLETED',
          resourceId: '1AB234567A1234567',
          deliveryId: headers['paypal-transmission-id'],
          merchantAccountId: 'acc_pp',
          body,
        }),
      ],
    });
    expect(fetcher.calls).toHaveLength(1);
  });

  it.each(['paypal-transmission-id', 'paypal-transmission-time', 'paypal-transmission-sig', 'paypal-cert-url', 'paypal-auth-algo'])(
    'row 3: without %s, missing_signature (and nothing fetched)',
    async (name) => {
      const { endpoint, fetcher } = setUp();
      expect(await receive(endpoint, { ...signed(), [name]: undefined }, body, now)).toEqual({ ok: false, error: 'missing_signature' });
      expect(fetcher.calls).toEqual([]);
    },
  );

  it.each([
    ['an algorithm other than SHA256withRSA', { 'paypal-auth-algo': 'SHA1withRSA' }],
    ['the algorithm in another case', { 'paypal-auth-algo': 'sha256withrsa' }],
    ['a signature that is not base64', { 'paypal-transmission-sig': 'not*base64' }],
    ['a transmission time that is no instant', { 'paypal-transmission-time': 'yesterday' }],
    ['a transmission time without its zone', { 'paypal-transmission-time': '2026-12-07T10:00:00' }],
    ['a transmission id with a control character', { 'paypal-transmission-id': 'abc\u0007' }],
  ])('row 3: %s is missing_signature', async (_what, change) => {
    const { endpoint, fetcher } = setUp();
    expect(await receive(endpoint, { ...signed(), ...change }, body, now)).toEqual({ ok: false, error: 'missing_signature' });
    expect(fetcher.calls).toEqual([]);
  });

  it.each([
    ['http://', 'http://api.sandbox.paypal.com/v1/notifications/certs/CERT-kit'],
    ['another host', 'https://evil.example/v1/notifications/certs/CERT-kit'],
    ['a listed host on another port', 'https://api.sandbox.paypal.com:8443/v1/notifications/certs/CERT-kit'],
    ['a host that ends like a listed one', 'https://api.sandbox.paypal.com.evil.example/v1/notifications/certs/CERT-kit'],
    ['credentials in the URL', 'https://user:pw@api.sandbox.paypal.com/v1/notifications/certs/CERT-kit'],
    ['an empty userinfo', 'https://@api.sandbox.paypal.com/v1/notifications/certs/CERT-kit'],
    ['no URL at all', 'CERT-kit'],
    ['a query', 'https://api.sandbox.paypal.com/v1/notifications/certs/CERT-kit?0'],
    ['an empty query', 'https://api.sandbox.paypal.com/v1/notifications/certs/CERT-kit?'],
    ['a fragment', 'https://api.sandbox.paypal.com/v1/notifications/certs/CERT-kit#0'],
    ['a path outside /v1/notifications/certs/', 'https://api.sandbox.paypal.com/v1/notifications/CERT-kit'],
    ['a path that climbs out of it', 'https://api.sandbox.paypal.com/v1/notifications/certs/../webhooks/CERT-kit'],
    ['a name with a percent-escape', 'https://api.sandbox.paypal.com/v1/notifications/certs/CERT-%6bit'],
    ['a name of two segments', 'https://api.sandbox.paypal.com/v1/notifications/certs/CERT/kit'],
    ['a backslash that makes the path another', 'https://api.sandbox.paypal.com\\evil.example/v1/notifications/certs/CERT-kit'],
    ['a host with a trailing dot', 'https://api.sandbox.paypal.com./v1/notifications/certs/CERT-kit'],
    ['more than 512 characters', `https://api.sandbox.paypal.com/v1/notifications/certs/CERT-${'k'.repeat(512)}`],
  ])('row 4: a certificate URL with %s is invalid_signature, without a fetch', async (_what, certUrl) => {
    const { endpoint, fetcher } = setUp();
    expect(await receive(endpoint, signed(body, { certUrl }), body, now)).toEqual({ ok: false, error: 'invalid_signature' });
    expect(fetcher.calls).toEqual([]);
  });

  it('row 4: a signature by another key is invalid_signature', async () => {
    const { endpoint } = setUp();
    const forged = signed(body, { privateKeyPem: require('node:crypto').generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) });
    expect(await receive(endpoint, forged, body, now)).toEqual({ ok: false, error: 'invalid_signature' });
  });

  it('row 4 before row 5: a forged signature with a stale time is invalid_signature; an authentic one is timestamp_out_of_tolerance', async () => {
    const { endpoint } = setUp();
    const stale = paypalTransmissionTime(now - 301_000);
    const authentic = signed(body, { transmissionTime: stale });
    expect(await receive(endpoint, { ...authentic, 'paypal-transmission-sig': signed(body)['paypal-transmission-sig'] }, body, now)).toEqual({
      ok: false,
      error: 'invalid_signature',
    });
    expect(await receive(endpoint, authentic, body, now)).toEqual({ ok: false, error: 'timestamp_out_of_tolerance' });
    // 300 s is inside the default tolerance, in both directions; 0 turns the check off.
    expect(await receive(endpoint, signed(body, { transmissionTime: paypalTransmissionTime(now - 300_000) }), body, now)).toMatchObject({ ok: true });
    expect(await receive(endpoint, signed(body, { transmissionTime: paypalTransmissionTime(now + 300_000) }), body, now)).toMatchObject({ ok: true });
    expect(await receive(endpoint, signed(body, { transmissionTime: paypalTransmissionTime(now + 302_000) }), body, now)).toEqual({ ok: false, error: 'timestamp_out_of_tolerance' });
    expect(await receive(setUp({ toleranceSeconds: 0 }).endpoint, authentic, body, now)).toMatchObject({ ok: true });
  });

  it.each([
    ['not JSON', 'not json', 'the body is not JSON'],
    ['without an id', JSON.stringify({ event_type: 'PAYMENT.CAPTURE.COMPLETED', resource: {} }), 'id is missing'],
    ['without an event_type', JSON.stringify({ id: 'WH-1', resource: {} }), 'event_type is missing'],
    ['with an id holding a control character', JSON.stringify({ id: 'WH-1\u0000', event_type: 'X' }), 'id is not a printable string'],
    ['with an account holding a bidirectional control', JSON.stringify({ id: 'WH-2', event_type: 'PAYMENT.CAPTURE.COMPLETED', resource: { payee: { merchant_id: 'M\u202e' } } }), 'resource.payee.merchant_id is not a printable'],
  ])('row 6: an authentic body %s is malformed_payload', async (_what, text, detail) => {
    const { endpoint } = setUp();
    const outcome = await receive(endpoint, signed(text), text, now);
    expect(outcome).toMatchObject({ ok: false, error: 'malformed_payload' });
    expect((outcome as { detail: string }).detail).toContain(detail);
  });

  it('the account a body declares is the event account (resource.payee.merchant_id); one the endpoint does not serve is recorded as such', async () => {
    const { endpoint } = setUp({ merchantAccountId: 'MERCHANT1' });
    const { body: capture } = paypalBody('PAYMENT.CAPTURE.COMPLETED');
    const declaring = (merchant: string) => JSON.stringify({ ...capture, resource: { ...(capture.resource as object), payee: { merchant_id: merchant } } });
    const own = declaring('MERCHANT1');
    expect(await receive(endpoint, signed(own), own, now)).toMatchObject({ ok: true, events: [{ merchantAccountId: 'MERCHANT1', served: true }] });
    const other = declaring('MERCHANT2');
    expect(await receive(endpoint, signed(other), other, now)).toMatchObject({ ok: true, events: [{ merchantAccountId: 'MERCHANT1', served: false }] });
  });

  it('spellings of one certificate URL are one URL: fetched once, under its normal form', async () => {
    const { endpoint, fetcher } = setUp();
    for (const certUrl of [
      KIT_URL,
      'https://API.Sandbox.PayPal.com/v1/notifications/certs/CERT-kit',
      'https://api.sandbox.paypal.com:443/v1/notifications/certs/CERT-kit',
      'https://api%2Esandbox.paypal.com/v1/notifications/certs/CERT-kit',
      'https://api.sandbox.paypal.com\\v1\\notifications\\certs\\CERT-kit',
      'https://api.sandbox.paypal.com/v1/notifications/x/../certs/CERT-kit',
    ]) {
      expect({ certUrl, outcome: await receive(endpoint, signed(body, { certUrl }), body, now) }).toMatchObject({ certUrl, outcome: { ok: true } });
    }
    expect(fetcher.calls).toEqual([KIT_URL]);
  });

  it('a delivery that makes the service fetch and does not verify counts against its sender: past 60 such URLs in a minute, 429 unfetched; a cached certificate still verifies for it', async () => {
    // Every URL serves a valid certificate of PayPal's name; the signatures are by another key.
    const fetcher = fakeFetcher({}, PAYPAL_TEST_SIGNING_CERT_PEM);
    const endpoint = endpointOf(createPaypalProvider({ fetchCertificate: fetcher }));
    expect(await receive(endpoint, signed(), body, now, 'guesser')).toMatchObject({ ok: true });
    const otherKey = require('node:crypto').generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' });
    const answers: string[] = [];
    for (let n = 0; n < 70; n++) {
      const certUrl = `https://api.sandbox.paypal.com/v1/notifications/certs/CERT-guess-${n}`;
      const outcome = await receive(endpoint, signed(body, { certUrl, privateKeyPem: otherKey }), body, now, 'guesser');
      answers.push(outcome.ok ? 'ok' : outcome.error);
    }
    console.log(`70 forged signatures naming valid certificates at 70 URLs: ${fetcher.calls.length - 1} fetched, answers ${JSON.stringify(countBy(answers))}`);
    expect(fetcher.calls).toHaveLength(1 + 61);
    expect(answers).toEqual([...Array(61).fill('invalid_signature'), ...Array(9).fill('rate_limited')]);
    expect(await receive(endpoint, signed(), body, now, 'guesser')).toMatchObject({ ok: true });
  });

  it("each endpoint has its own certificates: two endpoints of one adapter fetch the same URL once each", async () => {
    const fetcher = fakeFetcher({ [KIT_URL]: PAYPAL_TEST_SIGNING_CERT_PEM });
    const adapter = createPaypalProvider({ fetchCertificate: fetcher });
    for (const endpoint of [endpointOf(adapter), endpointOf(adapter)]) {
      expect(await receive(endpoint, signed(), body, now)).toMatchObject({ ok: true });
      expect(await receive(endpoint, signed(), body, now)).toMatchObject({ ok: true });
    }
    expect(fetcher.calls).toEqual([KIT_URL, KIT_URL]);
  });

  it('caFile is read once, at start: a delivery after the file is gone still verifies against what was read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'paypal-ca-'));
    const caFile = join(dir, 'ca.pem');
    writeFileSync(caFile, PAYPAL_TEST_CA_PEM);
    const fetcher = fakeFetcher({ [KIT_URL]: PAYPAL_TEST_SIGNING_CERT_PEM });
    const endpoint = endpointOf(createPaypalProvider({ fetchCertificate: fetcher }), { caPem: undefined, caFile });
    rmSync(dir, { recursive: true });
    expect(await receive(endpoint, signed(), body, now).catch((err: Error) => `threw: ${err.message}`)).toMatchObject({ ok: true });
  });
});

describe('paypal: the certificate', () => {
  const now = Date.now();
  const kitTrust = bundleTrust(PAYPAL_TEST_CA_PEM);
  const refusedFor = (pem: string, trust = kitTrust, at = now) => {
    const result = verifyCertificate(pem, trust, at);
    return 'refused' in result ? result.refused : 'accepted';
  };

  it("the kit's leaf chains to the kit's CA, is valid now and names PayPal's sandbox signing name", () => {
    expect(refusedFor(PAYPAL_TEST_SIGNING_CERT_PEM)).toBe('accepted');
  });

  it.each([
    ['self-signed', 'certs/self-signed.pem', 'does not chain to a trusted CA'],
    ['of another name', 'certs/wrong-name.pem', 'names none of'],
    ['expired', 'certs/expired.pem', 'is not valid now'],
    ["issued by an intermediate the answer does not carry", 'certs/with-intermediate.pem', 'accepted'],
  ])('a leaf %s: %s', (_what, file, expected) => {
    const pem = paypalCert(file);
    const leafOnly = file === 'certs/with-intermediate.pem' ? new X509Certificate(pem).toString() : pem;
    if (expected === 'accepted') {
      // With its intermediate after it, as PayPal may send a chain; without it, it chains to nothing.
      expect(refusedFor(pem)).toBe('accepted');
      expect(refusedFor(leafOnly)).toContain('does not chain to a trusted CA');
    } else {
      expect(refusedFor(pem)).toContain(expected);
    }
  });

  it('the name may be in a DNS SAN alone, or in the subject CN alone', () => {
    expect(refusedFor(paypalCert('certs/san-only.pem'))).toBe('accepted');
    expect(refusedFor(paypalCert('certs/cn-only.pem'))).toBe('accepted');
  });

  it("a leaf is refused against anchors it does not chain to (the kit's leaf against the system's store and DigiCert's root)", () => {
    expect(refusedFor(PAYPAL_TEST_SIGNING_CERT_PEM, bundleTrust(DIGICERT_ROOT))).toContain('does not chain');
    expect(refusedFor('no certificate here')).toContain('holds no PEM certificate');
    expect(refusedFor(PAYPAL_TEST_SIGNING_CERT_PEM, kitTrust, Date.parse('2126-12-01T00:00:00Z'))).toContain('not valid now');
  });

  it("PayPal's own leaves chain to DigiCert's root through the bundled intermediate, each within its validity", () => {
    for (const v of paypalVectors()) {
      const inside = Date.parse(v.headers['paypal-transmission-time']);
      expect({ name: v.name, result: refusedFor(v.cert_pem, bundleTrust(DIGICERT_ROOT), inside) }).toEqual({ name: v.name, result: 'accepted' });
      expect(refusedFor(v.cert_pem, bundleTrust(DIGICERT_ROOT), Date.parse(v.cert_validity.not_after) + 1000)).toContain('not valid now');
      expect(refusedFor(v.cert_pem, kitTrust, inside)).toContain('does not chain');
    }
  });

  it("a trust's identity names its anchors, never their text: a digest, the same however the bundle is written", () => {
    const identity = bundleTrust(PAYPAL_TEST_CA_PEM).identity;
    expect(identity).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(bundleTrust(`# the kit's CA, with a comment\r\n${PAYPAL_TEST_CA_PEM.replace(/\n/g, '\r\n')}`).identity).toBe(identity);
    expect(bundleTrust(DIGICERT_ROOT).identity).not.toBe(identity);
  });

  it('an answer must be PEM blocks and whitespace only: a page that reflects what was asked, a certificate among its text, is refused', () => {
    const block = new X509Certificate(PAYPAL_TEST_SIGNING_CERT_PEM).toString();
    expect(refusedFor(`\r\n${block}\n\t${block}  \n`)).toBe('accepted');
    expect(refusedFor(`<html><body><p>No such certificate: </p><pre>\n${block}</pre></body></html>`)).toContain('holds more than PEM certificates');
    expect(refusedFor(`{"name":"RESOURCE_NOT_FOUND","debug_id":"\n${block}"}`)).toContain('holds more than PEM certificates');
  });

  it.each([
    ['https://api.paypal.com/v1/notifications/certs/CERT-1', 'https://api.paypal.com/v1/notifications/certs/CERT-1'],
    ['https://API.PAYPAL.COM:443/v1/notifications/certs/CERT-1', 'https://api.paypal.com/v1/notifications/certs/CERT-1'],
    ['https://api.sandbox.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-1a5f47cb', 'https://api.sandbox.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-1a5f47cb'],
    ['https://api%2epaypal%2ecom/v1/notifications/certs/CERT-1', 'https://api.paypal.com/v1/notifications/certs/CERT-1'],
    ['https://api.paypal.com\\v1\\notifications\\certs\\CERT-1', 'https://api.paypal.com/v1/notifications/certs/CERT-1'],
    ['https://api-m.paypal.com/v1/notifications/certs/CERT-1', null],
    ['https://api.paypal.com./v1/notifications/certs/CERT-1', null],
    ['https://api.paypal.com:444/v1/notifications/certs/CERT-1', null],
    ['https://api.paypal.com/v1/notifications/certs/', null],
    ['https://api.paypal.com/v1/notifications/certs/..', null],
    ['https://api.paypal.com/x', null],
    ['http://api.paypal.com/v1/notifications/certs/CERT-1', null],
    ['ftp://api.paypal.com/v1/notifications/certs/CERT-1', null],
  ])('%s, with the default certHosts: %s', (url, allowed) => {
    expect(allowedCertUrl(url, ['api.paypal.com', 'api.sandbox.paypal.com'])?.href ?? null).toBe(allowed);
  });

  it('a port is part of the host: "127.0.0.1:8443" allows that port only', () => {
    const path = '/v1/notifications/certs/CERT-1';
    expect(allowedCertUrl(`https://127.0.0.1:8443${path}`, ['127.0.0.1:8443'])).not.toBeNull();
    expect(allowedCertUrl(`https://127.0.0.1:8444${path}`, ['127.0.0.1:8443'])).toBeNull();
    expect(allowedCertUrl(`https://127.0.0.1${path}`, ['127.0.0.1:8443'])).toBeNull();
  });
});

describe('paypal: certHosts as configured', () => {
  const now = Math.floor(Date.now() / 1000) * 1000;
  const body = paypalBody('PAYMENT.CAPTURE.COMPLETED').text;
  /** Whether a delivery naming `certUrl` makes an endpoint of `certHosts` fetch it. */
  const fetches = async (certHosts: string[], certUrl: string) => {
    const fetcher = fakeFetcher({}, PAYPAL_TEST_SIGNING_CERT_PEM);
    const endpoint = endpointOf(createPaypalProvider({ fetchCertificate: fetcher }), { certHosts });
    await receive(endpoint, paypalHeaders(WEBHOOK_ID, body, { certUrl, transmissionTime: paypalTransmissionTime(now) }), body, now);
    return fetcher.calls;
  };

  it.each([
    ['a host with the default port', ['API.PayPal.com:443'], 'https://api.paypal.com/v1/notifications/certs/CERT-1'],
    ['an uncompressed IPv6 address', ['[0:0:0:0:0:0:0:1]:8443'], 'https://[::1]:8443/v1/notifications/certs/CERT-1'],
    ['an IPv6 address and the default port', ['[0:0:0:0:0:0:0:1]:443'], 'https://[0::1]/v1/notifications/certs/CERT-1'],
  ])('%s (%j) matches the URLs of that host', async (_what, certHosts, certUrl) => {
    expect(await fetches(certHosts, certUrl)).toEqual([new URL(certUrl).href]);
  });

  it('a trailing dot is another host: listed without it, a URL with it is not fetched', async () => {
    expect(await fetches(['api.paypal.com'], 'https://api.paypal.com./v1/notifications/certs/CERT-1')).toEqual([]);
  });
});

describe('paypal: what fetching certificates may cost', () => {
  const now = Date.now();
  const trust = bundleTrust(PAYPAL_TEST_CA_PEM);
  const url = (n: number | string) => new URL(`https://api.paypal.com/v1/notifications/certs/CERT-${n}`);
  const limits = (more: Partial<typeof DEFAULT_CERTIFICATE_LIMITS> = {}) => ({ ...DEFAULT_CERTIFICATE_LIMITS, ...more });
  /** A signature any certificate of the kit's key verifies. */
  const anySignature = () => true;

  it('one fetch per URL: cached until the certificate expires', async () => {
    const fetcher = fakeFetcher({}, PAYPAL_TEST_SIGNING_CERT_PEM);
    const certificates = new PaypalCertificates(trust, limits(), fetcher);
    for (let i = 0; i < 5; i++) expect(await certificates.verify(url(1), anySignature, { sender: 'a', nowMs: now })).toEqual({ ok: true });
    expect(fetcher.calls).toHaveLength(1);
    const expired = Date.parse(new X509Certificate(PAYPAL_TEST_SIGNING_CERT_PEM).validTo) + 1000;
    expect(await certificates.verify(url(1), anySignature, { sender: 'a', nowMs: expired })).toMatchObject({ ok: false, error: 'invalid_signature' });
    expect(fetcher.calls).toHaveLength(2);
  });

  it('deliveries naming a URL being fetched share its fetch, each verifying its own signature', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    const certificates = new PaypalCertificates(trust, limits(), async () => {
      calls++;
      await gate;
      return { outcome: 'ok', pem: PAYPAL_TEST_SIGNING_CERT_PEM };
    });
    const waiting = Array.from({ length: 10 }, (_, i) => certificates.verify(url('shared'), () => i % 2 === 0, { sender: `s${i}`, nowMs: now }));
    release();
    const outcomes = await Promise.all(waiting);
    expect(outcomes.map((o) => o.ok)).toEqual([true, false, true, false, true, false, true, false, true, false]);
    expect(calls).toBe(1);
  });

  it('a URL refused (a 404, a certificate failing its checks) is not fetched again for a minute; a 5xx is', async () => {
    const fetcher = fakeFetcher({ [url('bad').href]: paypalCert('certs/wrong-name.pem'), [url('down').href]: { outcome: 'unavailable', reason: 'answered 503' } });
    const certificates = new PaypalCertificates(trust, limits(), fetcher);
    const at = (u: URL, nowMs: number) => certificates.verify(u, anySignature, { sender: 'a', nowMs });
    expect(await at(url('missing'), now)).toMatchObject({ ok: false, error: 'invalid_signature' });
    expect(await at(url('bad'), now)).toMatchObject({ ok: false, error: 'invalid_signature' });
    expect(await at(url('missing'), now + 59_000)).toMatchObject({ ok: false, error: 'invalid_signature' });
    expect(await at(url('bad'), now + 59_000)).toMatchObject({ ok: false, error: 'invalid_signature' });
    expect(fetcher.calls).toHaveLength(2);
    expect(await at(url('bad'), now + 61_000)).toMatchObject({ ok: false, error: 'invalid_signature' });
    expect(fetcher.calls).toHaveLength(3);
    expect(await at(url('down'), now)).toMatchObject({ ok: false, error: 'unavailable' });
    expect(await at(url('down'), now)).toMatchObject({ ok: false, error: 'unavailable' });
    expect(fetcher.calls.filter((c) => c === url('down').href)).toHaveLength(2);
  });

  it('fetches are bounded per sender address and per endpoint; a fetcher that never answers gives its share back at its deadline', async () => {
    const pending: Array<() => void> = [];
    const certificates = new PaypalCertificates(trust, limits({ fetchTimeoutMs: 200 }), () => new Promise<CertificateAnswer>((resolve) => pending.push(() => resolve({ outcome: 'ok', pem: PAYPAL_TEST_SIGNING_CERT_PEM }))));
    const ask = (n: number, sender: string) => certificates.verify(url(`budget-${n}`), anySignature, { sender, nowMs: now });
    // Two at once per address: the third is answered 503 at once, unfetched.
    const first = [ask(1, 'a'), ask(2, 'a')];
    expect(await ask(3, 'a')).toMatchObject({ ok: false, error: 'unavailable' });
    // Eight at once per endpoint, whoever asks.
    const more = [3, 4, 5, 6, 7, 8].map((n) => ask(n, `b${n}`));
    expect(await ask(9, 'c')).toMatchObject({ ok: false, error: 'unavailable' });
    expect(pending).toHaveLength(8);
    expect(certificates.inFlight).toBe(8);
    // Nobody answers: each gives its share back by its deadline (answered 503).
    expect((await Promise.all([...first, ...more])).every((o) => !o.ok && o.error === 'unavailable')).toBe(true);
    expect(certificates.inFlight).toBe(0);
    expect(await Promise.race([ask(10, 'a'), new Promise((r) => setTimeout(() => r('pending'), 50))])).toBe('pending');
  });

  it('an address whose fetches came to nothing for more than 60 URLs within a minute is answered rate_limited, without a fetch', async () => {
    const fetcher = fakeFetcher({});
    const certificates = new PaypalCertificates(trust, limits(), fetcher);
    const ask = (n: number, sender: string, nowMs = now) => certificates.verify(url(`guess-${n}`), anySignature, { sender, nowMs });
    for (let n = 0; n < 61; n++) expect(await ask(n, 'guesser')).toMatchObject({ error: 'invalid_signature' });
    expect(await ask(61, 'guesser')).toMatchObject({ ok: false, error: 'rate_limited' });
    expect(fetcher.calls).toHaveLength(61);
    // Another address is not refused; the guesser is again after the minute.
    expect(await ask(62, 'other')).toMatchObject({ error: 'invalid_signature' });
    expect(await ask(63, 'guesser', now + 61_000)).toMatchObject({ error: 'invalid_signature' });
  });

  it('the cache holds at most 1,000 URLs by default, least recently used dropped first', async () => {
    const fetcher = fakeFetcher({}, PAYPAL_TEST_SIGNING_CERT_PEM);
    const certificates = new PaypalCertificates(trust, limits(), fetcher);
    for (let n = 0; n < 1_050; n++) await certificates.verify(url(`many-${n}`), anySignature, { sender: `s${n}`, nowMs: now });
    expect(certificates.cached).toBe(1_000);
    expect(fetcher.calls).toHaveLength(1_050);
    await certificates.verify(url('many-1049'), anySignature, { sender: 'x', nowMs: now });
    expect(fetcher.calls).toHaveLength(1_050);
    await certificates.verify(url('many-0'), anySignature, { sender: 'x', nowMs: now });
    expect(fetcher.calls).toHaveLength(1_051);
  });
});

describe('paypal: events (the published bodies)', () => {
  const normalize = (name: string) => {
    const { body } = paypalBody(name);
    return paypalProvider.normalize(body, body.event_type as string);
  };
  const decimal = (value: string) => ({ form: 'decimal', value });

  it.each([
    ['CHECKOUT.ORDER.APPROVED', { kind: 'authorized', resourceId: '0U12052141410134E', amount: decimal('6.00'), currency: 'USD', orderReference: null, captureId: null }],
    ['PAYMENT.AUTHORIZATION.CREATED.v2-derived', { kind: 'authorized', resourceId: '9RC99380MW614700D', amount: decimal('2.51'), currency: 'USD', orderReference: 'ORDER-REF-1', declaredAccount: '7KNGBPH2U58GQ' }],
    ['PAYMENT.AUTHORIZATION.VOIDED', { kind: 'canceled', resourceId: '9RC99380MW614700D', amount: decimal('2.51'), currency: 'USD', captureId: null }],
    ['PAYMENT.CAPTURE.PENDING', { kind: 'processing', resourceId: '8PR65097T8571330M', amount: decimal('2.51'), captureId: '02T21492PP3782704' }],
    ['PAYMENT.CAPTURE.COMPLETED', { kind: 'succeeded', resourceId: '1AB234567A1234567', amount: decimal('30.00'), currency: 'USD', captureId: '12A34567BC123456S' }],
    ['PAYMENT.CAPTURE.COMPLETED.pui-docs', { kind: 'succeeded', resourceId: '5O190127TN364715T', amount: decimal('100.00'), currency: 'EUR', orderReference: 'MERCHANT_CUSTOM_ID', captureId: '84745544P6340640G' }],
    ['PAYMENT.CAPTURE.DENIED', { kind: 'failed', resourceId: '5O190127TN364715T', orderReference: 'MERCHANT_CUSTOM_ID', captureId: '826413372K501814R' }],
    ['PAYMENT.CAPTURE.DECLINED', { kind: 'failed', resourceId: '48R416400V564864N', orderReference: 'CUSTOMID-1001', captureId: '7U133281TB3277326' }],
    ['PAYMENT.CAPTURE.REFUNDED', { kind: 'refunded', resourceId: '0JF852973C016714D', resourceKind: 'capture', amount: null, currency: 'USD', refund: { id: '1Y107995YT783435V', amount: decimal('0.99') } }],
    ['PAYMENT.CAPTURE.REVERSED', { kind: 'refunded', resourceId: '4L335234718889942', resourceKind: 'capture', amount: null, refund: { id: '09E71677NS257044M', amount: decimal('2.51'), reversal: true } }],
    ['CUSTOMER.DISPUTE.CREATED', { kind: 'disputed', resourceId: '00D10444LD479031K', resourceKind: 'capture', amount: null, currency: 'USD', refund: null }],
    // Canceled by the buyer: the merchant keeps the money.
    ['CUSTOMER.DISPUTE.RESOLVED', { kind: 'dispute_won', resourceId: '00D10444LD479031K', resourceKind: 'capture', amount: null }],
  ])('%s', (name, expected) => {
    expect(normalize(name)).toMatchObject(expected);
  });

  it('a dispute resolved for the seller is won, for the buyer (or accepted) lost', () => {
    const { body } = paypalBody('CUSTOMER.DISPUTE.RESOLVED');
    const withOutcome = (code: string) =>
      paypalProvider.normalize({ ...body, resource: { ...(body.resource as object), dispute_outcome: { outcome_code: code } } }, 'CUSTOMER.DISPUTE.RESOLVED')?.kind;
    expect(withOutcome('RESOLVED_SELLER_FAVOUR')).toBe('dispute_won');
    expect(withOutcome('RESOLVED_BUYER_FAVOUR')).toBe('dispute_lost');
    expect(withOutcome('ACCEPTED')).toBe('dispute_lost');
  });

  it('a dispute resolved without an outcome code decides nothing: ignored (null), never lost', () => {
    const { body } = paypalBody('CUSTOMER.DISPUTE.RESOLVED');
    const { dispute_outcome: _outcome, ...resource } = body.resource as Record<string, unknown>;
    expect(paypalProvider.normalize({ ...body, resource }, 'CUSTOMER.DISPUTE.RESOLVED')).toBeNull();
    expect(paypalProvider.normalize({ ...body, resource: { ...resource, dispute_outcome: {} } }, 'CUSTOMER.DISPUTE.RESOLVED')).toBeNull();
  });

  it('when it happened: an ISO 8601 instant with its zone, else the next date the event gives', () => {
    const { body } = paypalBody('PAYMENT.CAPTURE.COMPLETED.pui-docs');
    const resource = body.resource as Record<string, unknown>;
    const at = (update_time: unknown) => paypalProvider.normalize({ ...body, resource: { ...resource, update_time } }, 'PAYMENT.CAPTURE.COMPLETED')?.occurredAt?.toISOString();
    expect(at('2022-04-01T21:20:49Z')).toBe('2022-04-01T21:20:49.000Z');
    // What Date would read as something (an RFC 1123 date, a date without its zone) is no instant here.
    const created = new Date(resource.create_time as string).toISOString();
    expect(at('Fri, 01 Apr 2022 21:20:49 GMT')).toBe(created);
    expect(at('2022-04-01 21:20:49')).toBe(created);
  });

  it('types not in the table, and bodies naming no payment, are ignored (null)', () => {
    const sale = JSON.parse(Buffer.from(paypalVectors()[0].body_base64, 'base64').toString('utf8'));
    expect(paypalProvider.normalize(sale, 'PAYMENT.SALE.COMPLETED')).toBeNull();
    // PayPal's published v1 authorization names no PayPal order.
    expect(normalize('PAYMENT.AUTHORIZATION.CREATED')).toBeNull();
    expect(paypalProvider.normalize({ id: 'WH-1', event_type: 'PAYMENT.CAPTURE.COMPLETED' }, 'PAYMENT.CAPTURE.COMPLETED')).toBeNull();
    const { body: refund } = paypalBody('PAYMENT.CAPTURE.REFUNDED');
    expect(paypalProvider.normalize({ ...refund, resource: { ...(refund.resource as object), links: [] } }, 'PAYMENT.CAPTURE.REFUNDED')).toBeNull();
  });
});

describe('paypal: the outcome of refunds (payment commands)', () => {
  const refundBody = (fields: Record<string, unknown> = {}) => {
    const { body } = paypalBody('PAYMENT.CAPTURE.REFUNDED');
    return { ...body, resource: { ...(body.resource as object), ...fields } };
  };

  it('PAYMENT.CAPTURE.REFUNDED confirms the refund by its own id (succeeded), beside the refund it applies', () => {
    expect(paypalProvider.normalize(refundBody(), 'PAYMENT.CAPTURE.REFUNDED')).toMatchObject({
      kind: 'refunded',
      resourceId: '0JF852973C016714D',
      refund: { id: '1Y107995YT783435V', amount: { form: 'decimal', value: '0.99' } },
      refundOutcomes: [{ id: '1Y107995YT783435V', status: 'succeeded' }],
    });
    expect(paypalProvider.normalize(refundBody({ status: 'COMPLETED' }), 'PAYMENT.CAPTURE.REFUNDED')?.refundOutcomes).toEqual([{ id: '1Y107995YT783435V', status: 'succeeded' }]);
  });

  it('a refund PayPal reports FAILED or CANCELLED is a refund_outcome failed, with the reason, and moves no amount', () => {
    for (const status of ['FAILED', 'CANCELLED']) {
      expect(paypalProvider.normalize(refundBody({ status, status_details: { reason: 'ECHECK' } }), 'PAYMENT.CAPTURE.REFUNDED')).toEqual({
        kind: 'refund_outcome',
        resourceId: '0JF852973C016714D',
        resourceKind: 'capture',
        orderId: null,
        amount: null,
        currency: 'USD',
        refundedAmount: null,
        refund: null,
        refundOutcomes: [{ id: '1Y107995YT783435V', status: 'failed', reason: `PayPal refund ${status} (ECHECK)` }],
        declaredAccount: null,
        occurredAt: expect.any(Date),
      });
    }
    expect(paypalProvider.normalize(refundBody({ status: 'FAILED' }), 'PAYMENT.CAPTURE.REFUNDED')?.refundOutcomes).toEqual([{ id: '1Y107995YT783435V', status: 'failed', reason: 'PayPal refund FAILED' }]);
  });

  it('a refund still PENDING is not confirmed yet; a reversal names no refund the module asked for', () => {
    expect(paypalProvider.normalize(refundBody({ status: 'PENDING' }), 'PAYMENT.CAPTURE.REFUNDED')).not.toHaveProperty('refundOutcomes');
    const { body } = paypalBody('PAYMENT.CAPTURE.REVERSED');
    expect(paypalProvider.normalize(body, 'PAYMENT.CAPTURE.REVERSED')).not.toHaveProperty('refundOutcomes');
  });
});

describe('paypal: endpoint fields', () => {
  const start = (fields: Record<string, unknown>) => () =>
    validateEndpoints('WEBHOOK_ENDPOINTS', [{ id: 'pp', provider: 'paypal', merchantAccountId: 'acc', webhookId: WEBHOOK_ID, ...fields }]);

  it('a minimal endpoint: webhookId; certHosts default to PayPal\'s; OAuth credentials and apiBaseUrl are accepted', () => {
    expect(start({})()).toEqual([expect.objectContaining({ webhookId: WEBHOOK_ID })]);
    const [withApi] = start({ clientId: 'AbC', clientSecret: 'EcD', apiBaseUrl: 'https://api-m.sandbox.paypal.com/' })();
    expect(withApi).toMatchObject({ clientId: 'AbC', clientSecret: 'EcD', apiBaseUrl: 'https://api-m.sandbox.paypal.com' });
  });

  it.each([
    [{ webhookId: undefined }, '"webhookId" is required'],
    [{ webhookId: 'has space' }, '"webhookId" is required'],
    [{ apiKey: 'sk' }, '"apiKey" is not for paypal endpoints'],
    [{ certHosts: [] }, '"certHosts" must be a non-empty list'],
    [{ certHosts: ['https://api.paypal.com'] }, '"certHosts" must be a non-empty list'],
    [{ caFile: '/nonexistent/ca.pem' }, '"caFile" cannot be read (ENOENT)'],
    [{ caPem: 'no pem' }, '"caPem" holds no PEM certificate'],
    [{ caPem: PAYPAL_TEST_CA_PEM, caFile: '/x' }, 'give "caFile" or "caPem", not both'],
    [{ clientId: 'AbC' }, '"clientId" and "clientSecret" go together'],
    [{ secrets: ['s3cr3t-s3cr3t'] }, 'endpoint "pp"'],
    [{ webhookId: 'WEBHOOK_ID' }, `"webhookId" WEBHOOK_ID is the id PayPal's Webhooks Simulator signs with: anyone can have deliveries signed for it`],
    [{ webhookId: 'webhook_id' }, `"webhookId" webhook_id is the id PayPal's Webhooks Simulator signs with`],
    [
      { merchantAccountId: undefined, merchantAccountIds: ['MERCHANT1'] },
      'endpoint "pp": "merchantAccountIds" is not available for paypal (its bodies declare no account); use "merchantAccountId"',
    ],
  ])('%j is refused at start: %s', (fields, message) => {
    expect(start(fields)).toThrow(message);
  });

  it('the client secret is never in a start-up line', () => {
    let message = '';
    try {
      start({ clientId: 'AbC', clientSecret: 'TOP-SECRET-VALUE', apiBaseUrl: 'ftp://x' })();
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('apiBaseUrl');
    expect(message).not.toContain('TOP-SECRET-VALUE');
  });
});

function countBy(values: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}
