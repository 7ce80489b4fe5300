import { X509Certificate } from 'node:crypto';
import { paypalBody, paypalCert, paypalVectors, PaypalVector } from '../../test/fixtures/paypal';
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
    return { fetcher, endpoint: endpointOf(adapter, { webhookId: v.webhook_id, caPem: DIGICERT_ROOT, ...fields }, nowOf(v)) };
  };

  it.each(vectors.map((v) => [v.name, v] as const))('%s verifies, and is refused once a byte, the key or a signed part changes', async (_name, v) => {
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
    const other = endpointOf(createPaypalProvider({ fetchCertificate: fakeFetcher({}, PAYPAL_TEST_SIGNING_CERT_PEM) }), { webhookId: v.webhook_id, toleranceSeconds: 0 });
    expect(await receive(other, v.headers, body)).toEqual(refused);
    // The same certificate once it has expired: it no longer verifies anything.
    expect(await receive(endpoint, v.headers, body, Date.parse(v.cert_validity.not_after) + 1000)).toEqual(refused);
  });

  it('the signed string is the CRC32 of the raw bytes (the non-ASCII vector)', () => {
    const v = vectors.find((x) => x.name === 'prod-live-2025-payment-sale-pending-non-ascii')!;
    const body = Buffer.from(v.body_base64, 'base64');
    expect(body.toString('utf8')).toContain('€');
    expect(v.expected.signed_string).toBe(
      `${v.headers['paypal-transmission-id']}|${v.headers['paypal-transmission-time']}|${v.webhook_id}|${require('../common/crc32').crc32(body)}`,
    );
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
    ['no URL at all', 'CERT-kit'],
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

  it('an endpoint of many accounts takes the declared one, and refuses a body that declares none', async () => {
    const { endpoint } = setUp({ merchantAccountId: undefined, merchantAccountIds: ['MERCHANT1'] });
    const { body: capture } = paypalBody('PAYMENT.CAPTURE.COMPLETED');
    const own = JSON.stringify({ ...capture, resource: { ...(capture.resource as object), payee: { merchant_id: 'MERCHANT1' } } });
    expect(await receive(endpoint, signed(own), own, now)).toMatchObject({ ok: true, events: [{ merchantAccountId: 'MERCHANT1' }] });
    expect(await receive(endpoint, signed(), body, now)).toMatchObject({ ok: false, error: 'malformed_payload' });
  });
});

describe('paypal: the certificate', () => {
  const now = Date.now();
  const kitTrust = bundleTrust(PAYPAL_TEST_CA_PEM, 'kit');
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
    expect(refusedFor(PAYPAL_TEST_SIGNING_CERT_PEM, bundleTrust(DIGICERT_ROOT, 'digicert'))).toContain('does not chain');
    expect(refusedFor('no certificate here')).toContain('holds no PEM certificate');
    expect(refusedFor(PAYPAL_TEST_SIGNING_CERT_PEM, kitTrust, Date.parse('2126-12-01T00:00:00Z'))).toContain('not valid now');
  });

  it("PayPal's own leaves chain to DigiCert's root through the bundled intermediate, each within its validity", () => {
    for (const v of paypalVectors()) {
      const inside = Date.parse(v.headers['paypal-transmission-time']);
      expect({ name: v.name, result: refusedFor(v.cert_pem, bundleTrust(DIGICERT_ROOT, 'digicert'), inside) }).toEqual({ name: v.name, result: 'accepted' });
      expect(refusedFor(v.cert_pem, bundleTrust(DIGICERT_ROOT, 'digicert'), Date.parse(v.cert_validity.not_after) + 1000)).toContain('not valid now');
      expect(refusedFor(v.cert_pem, kitTrust, inside)).toContain('does not chain');
    }
  });

  it.each([
    ['https://api.paypal.com/v1/notifications/certs/CERT-1', true],
    ['https://API.PAYPAL.COM:443/v1/notifications/certs/CERT-1', true],
    ['https://api.sandbox.paypal.com/v1/notifications/certs/CERT-1', true],
    ['https://api-m.paypal.com/v1/notifications/certs/CERT-1', false],
    ['https://api.paypal.com:444/x', false],
    ['http://api.paypal.com/x', false],
    ['ftp://api.paypal.com/x', false],
  ])('%s is allowed by the default certHosts: %s', (url, allowed) => {
    expect(allowedCertUrl(url, ['api.paypal.com', 'api.sandbox.paypal.com']) !== null).toBe(allowed);
  });

  it('a port is part of the host: "127.0.0.1:8443" allows that port only', () => {
    expect(allowedCertUrl('https://127.0.0.1:8443/c', ['127.0.0.1:8443'])).not.toBeNull();
    expect(allowedCertUrl('https://127.0.0.1:8444/c', ['127.0.0.1:8443'])).toBeNull();
    expect(allowedCertUrl('https://127.0.0.1/c', ['127.0.0.1:8443'])).toBeNull();
  });
});

describe('paypal: what fetching certificates may cost', () => {
  const endpoint = {};
  const now = Date.now();
  const trust = bundleTrust(PAYPAL_TEST_CA_PEM, 'kit');
  const url = (n: number | string) => new URL(`https://api.paypal.com/v1/notifications/certs/CERT-${n}`);
  const limits = (more: Partial<typeof DEFAULT_CERTIFICATE_LIMITS> = {}) => ({ ...DEFAULT_CERTIFICATE_LIMITS, ...more });

  it('one fetch per URL: cached until the certificate expires', async () => {
    const fetcher = fakeFetcher({}, PAYPAL_TEST_SIGNING_CERT_PEM);
    const certificates = new PaypalCertificates(limits(), fetcher);
    for (let i = 0; i < 5; i++) expect(await certificates.keyFor(url(1), trust, { endpoint, sender: 'a', nowMs: now })).toMatchObject({ ok: true });
    expect(fetcher.calls).toHaveLength(1);
    const expired = Date.parse(new X509Certificate(PAYPAL_TEST_SIGNING_CERT_PEM).validTo) + 1000;
    expect(await certificates.keyFor(url(1), trust, { endpoint, sender: 'a', nowMs: expired })).toMatchObject({ ok: false, error: 'invalid_signature' });
    expect(fetcher.calls).toHaveLength(2);
  });

  it('deliveries naming a URL being fetched share its fetch', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    const certificates = new PaypalCertificates(limits(), async () => {
      calls++;
      await gate;
      return { outcome: 'ok', pem: PAYPAL_TEST_SIGNING_CERT_PEM };
    });
    const waiting = Array.from({ length: 10 }, (_, i) => certificates.keyFor(url('shared'), trust, { endpoint, sender: `s${i}`, nowMs: now }));
    release();
    const outcomes = await Promise.all(waiting);
    expect(outcomes.map((o) => o.ok)).toEqual(Array(10).fill(true));
    expect(calls).toBe(1);
  });

  it('a URL refused (a 404, a certificate failing its checks) is not fetched again for a minute; a 5xx is', async () => {
    const fetcher = fakeFetcher({ [url('bad').href]: paypalCert('certs/wrong-name.pem'), [url('down').href]: { outcome: 'unavailable', reason: 'answered 503' } });
    const certificates = new PaypalCertificates(limits(), fetcher);
    const at = (u: URL, nowMs: number) => certificates.keyFor(u, trust, { endpoint, sender: 'a', nowMs });
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
    const certificates = new PaypalCertificates(limits({ fetchTimeoutMs: 200 }), () => new Promise<CertificateAnswer>((resolve) => pending.push(() => resolve({ outcome: 'ok', pem: PAYPAL_TEST_SIGNING_CERT_PEM }))));
    const own = {};
    const ask = (n: number, sender: string) => certificates.keyFor(url(`budget-${n}`), trust, { endpoint: own, sender, nowMs: now });
    // Two at once per address: the third is answered 503 at once, unfetched.
    const first = [ask(1, 'a'), ask(2, 'a')];
    expect(await ask(3, 'a')).toMatchObject({ ok: false, error: 'unavailable' });
    // Eight at once per endpoint, whoever asks.
    const more = [3, 4, 5, 6, 7, 8].map((n) => ask(n, `b${n}`));
    expect(await ask(9, 'c')).toMatchObject({ ok: false, error: 'unavailable' });
    expect(pending).toHaveLength(8);
    expect(certificates.inFlight(own)).toBe(8);
    // Nobody answers: each gives its share back by its deadline (answered 503).
    expect((await Promise.all([...first, ...more])).every((o) => !o.ok && o.error === 'unavailable')).toBe(true);
    expect(certificates.inFlight(own)).toBe(0);
    expect(await Promise.race([ask(10, 'a'), new Promise((r) => setTimeout(() => r('pending'), 50))])).toBe('pending');
  });

  it('an address that named more than 60 refused URLs within a minute is answered rate_limited, without a fetch', async () => {
    const fetcher = fakeFetcher({});
    const certificates = new PaypalCertificates(limits(), fetcher);
    for (let n = 0; n < 61; n++) expect(await certificates.keyFor(url(`guess-${n}`), trust, { endpoint, sender: 'guesser', nowMs: now })).toMatchObject({ error: 'invalid_signature' });
    expect(await certificates.keyFor(url('guess-61'), trust, { endpoint, sender: 'guesser', nowMs: now })).toMatchObject({ ok: false, error: 'rate_limited' });
    expect(fetcher.calls).toHaveLength(61);
    // Another address is not refused; the guesser is again after the minute.
    expect(await certificates.keyFor(url('guess-62'), trust, { endpoint, sender: 'other', nowMs: now })).toMatchObject({ error: 'invalid_signature' });
    expect(await certificates.keyFor(url('guess-63'), trust, { endpoint, sender: 'guesser', nowMs: now + 61_000 })).toMatchObject({ error: 'invalid_signature' });
  });

  it('the cache holds at most 1,000 URLs, least recently used dropped first', async () => {
    const fetcher = fakeFetcher({}, PAYPAL_TEST_SIGNING_CERT_PEM);
    const certificates = new PaypalCertificates(limits(), fetcher);
    for (let n = 0; n < 1_050; n++) await certificates.keyFor(url(`many-${n}`), trust, { endpoint: {}, sender: `s${n}`, nowMs: now });
    expect(certificates.cached).toBe(1_000);
    expect(fetcher.calls).toHaveLength(1_050);
    await certificates.keyFor(url('many-1049'), trust, { endpoint, sender: 'x', nowMs: now });
    expect(fetcher.calls).toHaveLength(1_050);
    await certificates.keyFor(url('many-0'), trust, { endpoint, sender: 'x', nowMs: now });
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
    ['PAYMENT.CAPTURE.REVERSED', { kind: 'canceled', resourceId: '4L335234718889942', resourceKind: 'capture', amount: null, refund: { id: '09E71677NS257044M', amount: decimal('2.51') } }],
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
