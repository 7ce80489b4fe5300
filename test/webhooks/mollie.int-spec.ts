import { Logger } from '@nestjs/common';
import request from 'supertest';
import type { EndpointDefinition } from '../../src/config/options';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { AUTH, createTestApp, eventually, PLATFORMS, TEST_ENDPOINTS, TestApp, truncateAll } from '../support/app';
import { driver } from '../support/domain';
import { MollieStub } from '../support/mollie-stub';

const FAST = { carrierBackoffBaseMs: 20, carrierBackoffCapMs: 200, sweepIntervalMs: 200, sweepAfterMs: 100, inboxBackoffMs: 50 };

/**
 * Mollie through the real webhook route (docs/webhooks.md#mollie): a hint `id=tr_…` is authenticated
 * by fetching the payment from a local stub of Mollie's Payments API through the official
 * `@mollie/api-client`; what is recorded is the payment fetched, keyed on the business fact it shows.
 */
describe.each(PLATFORMS)('%s: mollie, a hint authenticated by fetching it (workers on)', (platform) => {
  const stub = new MollieStub();
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  const mollie = (): EndpointDefinition => ({ id: 'mollie-main', provider: 'mollie', secrets: [], merchantAccountId: stub.profileId, apiKey: stub.apiKey, apiBaseUrl: stub.url });

  beforeAll(async () => {
    await stub.start();
    await sim.start();
    t = await createTestApp(
      { endpoints: [...TEST_ENDPOINTS, mollie()], runWorkers: true, carriers: [{ name: 'default', url: sim.url, timeoutMs: 300 }], tuning: FAST },
      { platform },
    );
    d = driver(t);
  });
  afterAll(async () => {
    await t?.close();
    await sim.stop();
    await stub.stop();
  });
  beforeEach(async () => {
    await truncateAll(t.dataSource);
    stub.reset();
    sim.reset();
  });
  afterEach(() => jest.restoreAllMocks());

  const hint = (body: string) =>
    request(t.app.getHttpServer()).post('/webhooks/mollie-main').set('Content-Type', 'application/x-www-form-urlencoded').send(body);
  /** Past the window in which a payment is fetched at most once (the module's clock moves on). */
  const nextWindow = () => t.clock.setSeconds(Math.floor(t.clock.now() / 1000) + 2);
  const rowOf = async (eventId: string) =>
    (await t.dataSource.query(`SELECT id, provider, merchant_account_id AS "account", resource_id AS "resourceId", event_type AS "eventType" FROM webhook_inbox WHERE event_id = $1`, [eventId]))[0];
  const paymentOf = async (providerPaymentId: string) => {
    const res = await d.http().get(`/payments?provider=mollie&providerPaymentId=${providerPaymentId}`).set(AUTH);
    const [payment] = res.body.items as Array<{ status: string; refundedAmount: string }>;
    return { status: payment.status, refunded: payment.refundedAmount };
  };
  const fulfilled = (orderId: string) => eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 15_000, `order ${orderId} fulfilled`);

  async function paidOrder(sameHintAgain?: (paymentId: string, eventId: string) => Promise<void>) {
    const order = await d.createOrder('49.90', 'EUR');
    const payment = stub.addPayment({ status: 'paid', orderId: order.id });
    const eventId = `${payment.id}:paid:0.00:0`;
    const res = await hint(`id=${payment.id}`);
    expect([res.status, res.body]).toEqual([200, { status: 'accepted', eventId }]);
    await sameHintAgain?.(payment.id, eventId);
    expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    return { order, payment, eventId };
  }

  it('a paid payment: recorded as fetched, the order fulfilled exactly once; the same hint again is a duplicate', async () => {
    const { order, payment, eventId } = await paidOrder(async (paymentId, id) => {
      // At once: Mollie is asked again (a hint is never answered from a fetch that began before
      // it), and the payment is unchanged: the same event.
      expect((await hint(`id=${paymentId}`)).body).toEqual({ status: 'duplicate', eventId: id });
      expect(stub.requestsFor(paymentId)).toBe(2);
    });
    await fulfilled(order.id);
    expect(sim.shipments.filter((s) => s.orderId === order.id)).toHaveLength(1);
    const asked = { paymentId: payment.id, authorization: `Bearer ${stub.apiKey}`, embed: 'refunds,chargebacks', status: 200 };
    expect(stub.requests).toEqual([asked, asked]);

    // Later too: unchanged, the same event.
    nextWindow();
    expect((await hint(`id=${payment.id}`)).body).toEqual({ status: 'duplicate', eventId });
    expect(stub.requestsFor(payment.id)).toBe(3);
    expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(1);
    expect(sim.shipments.filter((s) => s.orderId === order.id)).toHaveLength(1);

    // The archive holds the payment Mollie returned, never the hint's bytes, and never the key.
    const row = await rowOf(eventId);
    expect(row).toMatchObject({ provider: 'mollie', account: stub.profileId, resourceId: payment.id, eventType: 'payment.paid' });
    const detail = await d.http().get(`/admin/webhook-deliveries/${row.id}`).set(AUTH);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ provider: 'mollie', eventId, resourceId: payment.id, merchantAccountId: stub.profileId });
    expect(detail.body.body).toMatchObject({ resource: 'payment', id: payment.id, status: 'paid', profileId: stub.profileId, amount: { value: '49.90', currency: 'EUR' }, metadata: { order_id: order.id } });
    const stored = JSON.stringify(await t.dataSource.query(`SELECT * FROM webhook_inbox`));
    expect(stored).not.toContain(stub.apiKey);
    expect(JSON.stringify(detail.body)).not.toContain(stub.apiKey);
  });

  it('a refund, then the rest: each a new event, the payment partially refunded then refunded', async () => {
    const { order, payment } = await paidOrder();
    stub.refund(payment.id, '10.00');
    nextWindow();
    const partial = `${payment.id}:paid:10.00:0`;
    expect((await hint(`id=${payment.id}`)).body).toEqual({ status: 'accepted', eventId: partial });
    expect(await d.processed(partial)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf(payment.id)).toEqual({ status: 'partially_refunded', refunded: '10.00' });
    expect((await rowOf(partial)).eventType).toBe('payment.refunded');

    stub.refund(payment.id, '39.90');
    nextWindow();
    const full = `${payment.id}:paid:49.90:0`;
    expect((await hint(`id=${payment.id}`)).body).toEqual({ status: 'accepted', eventId: full });
    expect(await d.processed(full)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect((await paymentOf(payment.id)).status).toBe('refunded');
    expect((await d.getOrder(order.id)).status).toBe('refunded');
  });

  it('a chargeback: a new event, the payment dispute_lost', async () => {
    const { payment } = await paidOrder();
    stub.chargeBack(payment.id, '49.90');
    nextWindow();
    const eventId = `${payment.id}:paid:0.00:49.90`;
    expect((await hint(`id=${payment.id}`)).body).toEqual({ status: 'accepted', eventId });
    expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect((await paymentOf(payment.id)).status).toBe('dispute_lost');
    expect((await rowOf(eventId)).eventType).toBe('payment.charged_back');
  });

  it('a body that is not id=<tr_…>: 400 malformed_payload, Mollie not called', async () => {
    for (const body of ['', 'id=re_4qqhO89gsT', 'id=tr_WDqYK6vllg&x=1', '{"id":"tr_WDqYK6vllg"}']) {
      const res = await hint(body);
      expect([res.status, res.body.error]).toEqual([400, 'malformed_payload']);
    }
    expect(stub.requests).toEqual([]);
    expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(0);
  });

  it('a hint for a payment Mollie does not have: 400, nothing recorded; 200 at once reach Mollie once', async () => {
    const res = await hint('id=tr_unknown0001');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'malformed_payload', detail: "Mollie has no payment tr_unknown0001 for this endpoint's API key" });
    expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(0);

    nextWindow();
    // The module's clock held still, so that however long 200 requests take to arrive they all fall in one window.
    const held = jest.spyOn(t.clock, 'now').mockReturnValue(t.clock.now());
    const flood = await Promise.all(Array.from({ length: 200 }, () => hint('id=tr_unknown0002')));
    expect(new Set(flood.map((r) => r.status))).toEqual(new Set([400]));
    expect(stub.requestsFor('tr_unknown0002')).toBe(1);

    // Many distinct bogus ids, each hinted twice at once: each fetched once (in waves within the
    // share of fetches one address may have in flight).
    const ids = Array.from({ length: 40 }, (_, i) => `tr_bogus${i}x`);
    for (let wave = 0; wave < ids.length; wave += 8) {
      await Promise.all(ids.slice(wave, wave + 8).flatMap((id) => [hint(`id=${id}`), hint(`id=${id}`)]));
    }
    expect(ids.map((id) => stub.requestsFor(id))).toEqual(ids.map(() => 1));
    held.mockRestore();
    expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(0);
  });

  it('Mollie answers 429 or 5xx: 503 unavailable, nothing recorded, the key in no log line', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn');
    const payment = stub.addPayment({ status: 'paid' });
    stub.failNext(1, 429);
    const limited = await hint(`id=${payment.id}`);
    expect([limited.status, limited.body]).toEqual([503, { error: 'unavailable' }]);

    nextWindow();
    // The client itself tries a 5xx three times (here without waiting: Retry-After 0).
    stub.failNext(3, 502, { retryAfter: 0 });
    const failing = await hint(`id=${payment.id}`);
    expect([failing.status, failing.body]).toEqual([503, { error: 'unavailable' }]);
    expect(stub.requests.map((r) => r.status)).toEqual([429, 502, 502, 502]);
    expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(0);

    const logged = warn.mock.calls.map((call) => call.map(String).join(' '));
    expect(logged.some((line) => line.includes(`Mollie answered 429 for payment ${payment.id}`))).toBe(true);
    expect(logged.some((line) => line.includes(stub.apiKey))).toBe(false);

    // Once Mollie answers again, the delivery Mollie retries is recorded.
    nextWindow();
    expect((await hint(`id=${payment.id}`)).body).toEqual({ status: 'accepted', eventId: `${payment.id}:paid:0.00:0` });
  });

  it('Mollie slower than the fetch timeout: 503 unavailable, answered within the bound', async () => {
    const payment = stub.addPayment({ status: 'paid' });
    stub.slow(6_000);
    const started = Date.now();
    const res = await hint(`id=${payment.id}`);
    const elapsed = Date.now() - started;
    process.stdout.write(`[${platform}] answer with Mollie 6 s slow: ${res.status} after ${elapsed} ms\n`);
    expect([res.status, res.body]).toEqual([503, { error: 'unavailable' }]);
    expect(elapsed).toBeGreaterThanOrEqual(3_900);
    expect(elapsed).toBeLessThan(5_000);
    expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(0);
  });

  it("another profile's payment: recorded, rejected account_mismatch, nothing changed", async () => {
    const order = await d.createOrder('49.90', 'EUR');
    const payment = stub.addPayment({ status: 'paid', orderId: order.id, profileId: 'pfl_SomeoneElse' });
    const eventId = `${payment.id}:paid:0.00:0`;
    expect((await hint(`id=${payment.id}`)).body).toEqual({ status: 'accepted', eventId });
    expect(await d.processed(eventId)).toMatchObject({ status: 'rejected', outcome: 'account_mismatch' });
    expect(await d.count(`SELECT 1 FROM payments`)).toBe(0);
    expect((await d.getOrder(order.id)).status).toBe('awaiting_payment');
  });

  it('a payment of another amount: rejected amount_mismatch, no shipment', async () => {
    const order = await d.createOrder('49.90', 'EUR');
    const payment = stub.addPayment({ status: 'paid', orderId: order.id, value: '10.00' });
    const eventId = `${payment.id}:paid:0.00:0`;
    expect((await hint(`id=${payment.id}`)).body).toEqual({ status: 'accepted', eventId });
    expect(await d.processed(eventId)).toMatchObject({ status: 'rejected', outcome: 'amount_mismatch' });
    expect((await d.getOrder(order.id)).status).toBe('awaiting_payment');
    expect(await d.count(`SELECT 1 FROM fulfillments`)).toBe(0);
    expect(sim.shipments).toHaveLength(0);
  });
});
