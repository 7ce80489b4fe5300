import type { CarrierAdapter, ShipmentRequest, ShipmentResult } from '../../src/fulfillment/carriers/carrier';
import type { EndpointDefinition } from '../../src/config/options';
import type { ProviderAdapter, ReceiveResult } from '../../src/providers';
import { AUTH, createTestApp, eventually, TEST_ENDPOINTS, TestApp } from '../support/app';
import { driver, uniqueId } from '../support/domain';
import { acmeEvent, acmeHeaders, acmeProvider } from '../support/acme-provider';

/**
 * A provider of the host's own (docs/providers.md), end to end on the real PostgreSQL and Redis:
 * registered with `providers: [acme]`, an endpoint of it, its payments registered over REST, its
 * signed deliveries received, processed and fulfilled like a built-in provider's, and held to
 * every rule of the receive path (check order, answers, keys, printable ids, accounts) whatever the
 * adapter returns.
 */
const ACME_SECRET = 'acme_sk_e2e_0123456789';
const ACCOUNT = 'm_1';

/** The carrier: answers ok with a shipment id and counts its calls per order. */
class StubCarrier implements CarrierAdapter {
  readonly name = 'default';
  readonly calls: ShipmentRequest[] = [];
  async ship(request: ShipmentRequest): Promise<ShipmentResult> {
    this.calls.push(request);
    return { ok: true, shipmentId: `shp_${this.calls.length}` };
  }
  callsFor(orderId: string): number {
    return this.calls.filter((c) => c.orderId === orderId).length;
  }
}

/** "rogue": acme's checks, then whatever the test makes it answer (what a broken or hostile adapter may do). */
let rogueAnswer: (verified: Extract<ReceiveResult, { ok: true }>) => ReceiveResult | Promise<ReceiveResult> = (v) => v;
const rogueProvider: ProviderAdapter = {
  ...acmeProvider,
  name: 'rogue',
  async receive(delivery, context) {
    const result = await acmeProvider.receive(delivery, context);
    return result.ok ? rogueAnswer(result) : result;
  },
  // What processing reads: the declared account the body has, or none (the adapter forgets it).
  normalize: (body, eventType, endpoint) => {
    const event = acmeProvider.normalize(body, eventType, endpoint);
    return event && { ...event, declaredAccount: null };
  },
};

const ENDPOINTS: EndpointDefinition[] = [
  ...TEST_ENDPOINTS,
  { id: 'acme-main', provider: 'acme', secrets: [ACME_SECRET], merchantAccountId: ACCOUNT, region: 'eu' },
  { id: 'acme-many', provider: 'acme', secrets: [ACME_SECRET], merchantAccountIds: ['m_1', 'm_2'] },
  { id: 'rogue-main', provider: 'rogue', secrets: [ACME_SECRET], merchantAccountId: ACCOUNT },
];

describe("a provider of the host's own, end to end", () => {
  const carrier = new StubCarrier();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    t = await createTestApp({
      providers: [acmeProvider, rogueProvider],
      endpoints: ENDPOINTS,
      runWorkers: true,
      carriers: [],
      carrierAdapters: [carrier],
      tuning: { sweepIntervalMs: 200, sweepAfterMs: 100 },
    });
    d = driver(t);
  });
  afterAll(async () => {
    await t?.close();
  });
  beforeEach(() => {
    rogueAnswer = (v) => v;
  });

  const deliver = (endpointId: string, body: string, headers: Record<string, string> = acmeHeaders(ACME_SECRET, body)) =>
    d.http().post(`/webhooks/${endpointId}`).set(headers).send(body);
  const rows = (eventId: string) => d.count(`SELECT 1 FROM webhook_inbox WHERE event_id = $1`, [eventId]);
  const recordedRows = (provider: string) => d.count(`SELECT 1 FROM webhook_inbox WHERE provider = $1`, [provider]);

  /** An order with an acme payment registered for it over REST. */
  async function orderWithAcmePayment(extra: Record<string, unknown> = {}) {
    const order = await d.createOrder('49.90', 'EUR', extra);
    const chargeId = uniqueId('ch');
    const res = await d.http().post(`/orders/${order.id}/payments`).set(AUTH).send({ provider: 'acme', providerPaymentId: chargeId, merchantAccountId: ACCOUNT });
    expect({ status: res.status, body: res.status === 201 ? null : res.body }).toEqual({ status: 201, body: null });
    expect(res.body).toMatchObject({ provider: 'acme', providerPaymentId: chargeId, merchantAccountId: ACCOUNT, status: 'pending' });
    return { orderId: order.id, chargeId, paymentId: res.body.id as string };
  }

  describe('the REST API knows the provider', () => {
    it('a payment of it is registered, listed and filtered; the delivery archive filters on it', async () => {
      const { orderId, chargeId, paymentId } = await orderWithAcmePayment();
      const listed = await d.http().get('/payments').query({ provider: 'acme', providerPaymentId: chargeId }).set(AUTH);
      expect(listed.status).toBe(200);
      expect(listed.body.items.map((p: { id: string }) => p.id)).toEqual([paymentId]);
      expect((await d.getOrder(orderId)).payments).toHaveLength(1);
      const archive = await d.http().get('/admin/webhook-deliveries').query({ provider: 'acme' }).set(AUTH);
      expect(archive.status).toBe(200);
    });

    it.each([
      ['POST /orders/{id}/payments', 'post', 'payments'],
      ['GET /payments', 'get', '/payments'],
      ['GET /admin/webhook-deliveries', 'get', '/admin/webhook-deliveries'],
      ['POST /admin/reconciliation', 'post', '/admin/reconciliation'],
    ] as const)('%s: an unknown name is a 400 that lists the host providers too', async (_route, method, path) => {
      const names = ['paymos', 'factuarea', 'stripe', 'standard', 'adyen', 'mollie', 'paypal', 'checkout', 'square', 'paddle', 'acme', 'rogue'];
      let res;
      if (path === 'payments') {
        const order = await d.createOrder();
        res = await d.http().post(`/orders/${order.id}/payments`).set(AUTH).send({ provider: 'acmee', providerPaymentId: 'ch_1' });
      } else if (method === 'get') {
        res = await d.http().get(path).query({ provider: 'acmee' }).set(AUTH);
      } else {
        res = await d.http().post(path).set(AUTH).send({ provider: 'acmee', merchantAccountId: ACCOUNT });
      }
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_failed');
      const [detail] = res.body.details;
      expect(detail.field).toBe('provider');
      // Every name the module knows: the built-in ones (whichever this build has) and the host's.
      const known = (detail.message as string).replace(/^provider must be one of /, '').split(', ');
      expect(known).toEqual(expect.arrayContaining(['paymos', 'factuarea', 'stripe', 'standard', 'acme', 'rogue']));
      expect(known.filter((n) => !names.includes(n))).toEqual([]);
      expect(known.slice(-2)).toEqual(['acme', 'rogue']);
    });

    it('an unknown name beside other invalid fields: every field answered at once, as before', async () => {
      const order = await d.createOrder();
      const res = await d.http().post(`/orders/${order.id}/payments`).set(AUTH).send({ provider: 42, providerPaymentId: '' });
      expect(res.status).toBe(400);
      expect(res.body.details.map((e: { field: string }) => e.field)).toEqual(['provider', 'providerPaymentId']);
      expect(res.body.details[0].message).toMatch(/^provider must be one of paymos, .*, acme, rogue$/);
    });

    it('reconciliation of the host provider reports on its own records', async () => {
      const res = await d.http().post('/admin/reconciliation').set(AUTH).send({ provider: 'acme', merchantAccountId: ACCOUNT, eventIds: ['ae_never_sent'] });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ missingEvents: ['ae_never_sent'], backfill: null });
    });
  });

  describe('a signed paid delivery', () => {
    it('accepted, processed, the order paid and fulfilled exactly once; a redelivery is a duplicate and changes nothing', async () => {
      const { orderId, chargeId } = await orderWithAcmePayment();
      const { eventId, body } = acmeEvent('charge.paid', chargeId, { orderId });

      const first = await deliver('acme-main', body);
      expect({ status: first.status, body: first.body }).toEqual({ status: 200, body: { status: 'accepted', eventId } });
      expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
      await eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 15_000, 'the order fulfilled');
      expect(carrier.callsFor(orderId)).toBe(1);

      const again = await deliver('acme-main', body);
      expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: { status: 'duplicate', eventId } });
      // Signed anew (another timestamp), the same event is still the same event.
      const resigned = await deliver('acme-main', body, acmeHeaders(ACME_SECRET, body, Math.floor(Date.now() / 1000) - 5));
      expect(resigned.body).toEqual({ status: 'duplicate', eventId });
      expect(await rows(eventId)).toBe(1);
      const view = await d.getOrder(orderId);
      expect(view).toMatchObject({ status: 'fulfilled', payments: [{ provider: 'acme', providerPaymentId: chargeId, status: 'succeeded', merchantAccountId: ACCOUNT }] });
      expect(carrier.callsFor(orderId)).toBe(1);

      // The archive shows it under its provider, its own stored headers, the signature redacted.
      const [row] = await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [eventId]);
      const detail = await d.http().get(`/admin/webhook-deliveries/${row.id}`).set(AUTH);
      expect(detail.status).toBe(200);
      expect(detail.body).toMatchObject({ provider: 'acme', endpointId: 'acme-main', merchantAccountId: ACCOUNT, eventId, resourceId: chargeId });
      expect(Object.keys(detail.body.headers)).toContain('acme-signature');
      expect(JSON.stringify(detail.body.headers)).not.toMatch(/[0-9a-f]{64}/);
    });

    it('a webhook for a charge never registered is matched through its order id, which creates the payment', async () => {
      const order = await d.createOrder();
      const chargeId = uniqueId('ch');
      const { eventId, body } = acmeEvent('charge.paid', chargeId, { orderId: order.id });
      expect((await deliver('acme-main', body)).body).toEqual({ status: 'accepted', eventId });
      expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
      await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, 'the order fulfilled');
      expect(carrier.callsFor(order.id)).toBe(1);
    });
  });

  describe("the receive path's answers", () => {
    it.each<[string, (body: string) => Record<string, string>, number, unknown]>([
      ['no Acme-Signature', () => ({ 'content-type': 'application/json' }), 401, { error: 'missing_signature' }],
      ['a signature of another secret', (body) => acmeHeaders('acme_sk_someone_else_99', body), 401, { error: 'invalid_signature' }],
      ['signed an hour ago', (body) => acmeHeaders(ACME_SECRET, body, Math.floor(Date.now() / 1000) - 3600), 401, { error: 'timestamp_out_of_tolerance' }],
    ])('%s: a 401, nothing recorded', async (_what, headers, status, answer) => {
      const { eventId, body } = acmeEvent('charge.paid', uniqueId('ch'));
      const res = await deliver('acme-main', body, headers(body));
      expect({ status: res.status, body: res.body }).toEqual({ status, body: answer });
      expect(await rows(eventId)).toBe(0);
    });

    it('a body changed after signing: 401 invalid_signature', async () => {
      const { eventId, body } = acmeEvent('charge.paid', uniqueId('ch'), { amount: '49.90' });
      const res = await deliver('acme-main', body.replace('49.90', '0.01'), acmeHeaders(ACME_SECRET, body));
      expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { error: 'invalid_signature' } });
      expect(await rows(eventId)).toBe(0);
    });

    it('an unprintable event id: 400 malformed_payload, nothing recorded', async () => {
      const body = JSON.stringify({ event: { id: 'ae_bidi\u202e', type: 'charge.paid' }, charge: { id: 'ch_1' } });
      const res = await deliver('acme-main', body);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 400,
        body: { error: 'malformed_payload', detail: 'event.id is not a printable string of at most 255 characters' },
      });
      expect(await d.count(`SELECT 1 FROM webhook_inbox WHERE event_id LIKE 'ae_bidi%'`)).toBe(0);
    });

    it("an event of another account than its single-account endpoint's: recorded, answered 200, rejected/account_mismatch", async () => {
      const { orderId, chargeId } = await orderWithAcmePayment();
      const { eventId, body } = acmeEvent('charge.paid', chargeId, { orderId, merchant: 'm_other' });
      expect((await deliver('acme-main', body)).body).toEqual({ status: 'accepted', eventId });
      expect(await d.processed(eventId)).toMatchObject({ status: 'rejected', outcome: 'account_mismatch' });
      expect((await d.getOrder(orderId)).status).toBe('awaiting_payment');
      expect(carrier.callsFor(orderId)).toBe(0);
    });

    it('on an endpoint of many accounts: an account it does not serve is recorded and rejected; an event that declares none is a 400', async () => {
      const { eventId, body } = acmeEvent('charge.paid', uniqueId('ch'), { merchant: 'm_9' });
      expect((await deliver('acme-many', body)).body).toEqual({ status: 'accepted', eventId });
      expect(await d.processed(eventId)).toMatchObject({ status: 'rejected', outcome: 'account_mismatch' });
      const none = acmeEvent('charge.paid', uniqueId('ch'));
      const res = await deliver('acme-many', none.body);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 400,
        body: { error: 'malformed_payload', detail: 'the endpoint serves many merchant accounts and the body declares none' },
      });
    });
  });

  describe('an adapter that misbehaves is held to the rules (attacker side)', () => {
    it('an unprintable event id from the adapter itself: 400 malformed_payload, nothing recorded', async () => {
      rogueAnswer = (v) => ({ ...v, events: v.events.map((e) => ({ ...e, eventId: 'ae_\u0000nul' })) });
      const { body } = acmeEvent('charge.paid', uniqueId('ch'));
      const before = await recordedRows('rogue');
      const res = await deliver('rogue-main', body);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 400,
        body: { error: 'malformed_payload', detail: 'the event id is not a printable string of at most 255 characters' },
      });
      expect(await recordedRows('rogue')).toBe(before);
    });

    it("an event whose account differs from its single-account endpoint's: recorded, rejected/account_mismatch, the order untouched", async () => {
      const order = await d.createOrder();
      const chargeId = uniqueId('ch');
      const reg = await d.http().post(`/orders/${order.id}/payments`).set(AUTH).send({ provider: 'rogue', providerPaymentId: chargeId });
      expect(reg.status).toBe(201);
      // The adapter names another account for the event, and its normalize() declares none.
      rogueAnswer = (v) => ({ ...v, events: v.events.map((e) => ({ ...e, account: 'm_other' })) });
      const { eventId, body } = acmeEvent('charge.paid', chargeId, { orderId: order.id });
      expect((await deliver('rogue-main', body)).body).toEqual({ status: 'accepted', eventId });
      expect(await d.processed(eventId)).toMatchObject({ status: 'rejected', outcome: 'account_mismatch' });
      expect((await d.getOrder(order.id)).status).toBe('awaiting_payment');
      expect(carrier.callsFor(order.id)).toBe(0);
      // It took no key of its endpoint's account: the event, delivered as the account's own, is new.
      rogueAnswer = (v) => v;
      expect((await deliver('rogue-main', body)).body).toEqual({ status: 'accepted', eventId });
      expect(await rows(eventId)).toBe(2);
    });

    it('an adapter that throws a plain Error: 503 unavailable, nothing recorded', async () => {
      rogueAnswer = () => {
        throw new Error('acme API down');
      };
      const { eventId, body } = acmeEvent('charge.paid', uniqueId('ch'));
      const res = await deliver('rogue-main', body);
      expect({ status: res.status, body: res.body }).toEqual({ status: 503, body: { error: 'unavailable' } });
      expect(await rows(eventId)).toBe(0);
    });

    it('an adapter that returns a refusal code the receive path does not know: 503 unavailable, nothing recorded', async () => {
      rogueAnswer = () => ({ ok: false, error: 'teapot' as never });
      const { eventId, body } = acmeEvent('charge.paid', uniqueId('ch'));
      const res = await deliver('rogue-main', body);
      expect({ status: res.status, body: res.body }).toEqual({ status: 503, body: { error: 'unavailable' } });
      expect(await rows(eventId)).toBe(0);
    });

    it('an adapter that returns no event: 400 malformed_payload', async () => {
      rogueAnswer = (v) => ({ ...v, events: [] });
      const res = await deliver('rogue-main', acmeEvent('charge.paid', uniqueId('ch')).body);
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: { error: 'malformed_payload', detail: 'the delivery carries no event' } });
    });

    it('a refusal with a detail: only malformed_payload says why, a signature failure never does', async () => {
      rogueAnswer = () => ({ ok: false, error: 'invalid_signature', detail: 'the key was k_123' });
      const res = await deliver('rogue-main', acmeEvent('charge.paid', uniqueId('ch')).body);
      expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { error: 'invalid_signature' } });
    });
  });
});
