import request from 'supertest';
import type { EndpointDefinition } from '../../src/config/options';
import { signedHeaders } from '../../src/testing/sign';
import { AUTH, createTestApp, eventually, PLATFORMS, TEST_ENDPOINTS, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';

const CONNECT_SECRET = 'whsec_connect_platform';
const ANY_SECRET = 'whsec_connect_any';
const FACTUAREA_SECRET = 'whsec_factuarea_platform';

/** A Stripe Connect platform: one endpoint, two connected accounts; one that takes any account; a Factuarea one. */
const ENDPOINTS: EndpointDefinition[] = [
  ...TEST_ENDPOINTS,
  { id: 'connect', provider: 'stripe', secrets: [CONNECT_SECRET], merchantAccountIds: ['acct_A', 'acct_B'] },
  { id: 'connect-any', provider: 'stripe', secrets: [ANY_SECRET], merchantAccountIds: ['*'] },
  { id: 'factuarea-platform', provider: 'factuarea', secrets: [FACTUAREA_SECRET], merchantAccountIds: ['fa-A', 'fa-B'] },
];

/**
 * CONTRACT §1 `merchantAccountIds`: on an endpoint that serves many merchant accounts, the account
 * each body declares is its event's: part of the deduplication key, of the payment's key, and of
 * every lookup by them.
 */
describe.each(PLATFORMS)('%s: one endpoint, many merchant accounts (workers on)', (platform) => {
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    t = await createTestApp(
      { endpoints: ENDPOINTS, runWorkers: true, tuning: { inboxAttempts: 4, inboxBackoffMs: 50, unmatchedAfterAttempts: 2 } },
      { platform },
    );
    d = driver(t);
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  const send = (endpointId: string, secret: string, body: object, provider: 'stripe' | 'factuarea' = 'stripe') => {
    const text = JSON.stringify(body);
    return request(t.app.getHttpServer()).post(`/webhooks/${endpointId}`).set(signedHeaders(provider, secret, text)).send(text);
  };
  const inboxRows = (eventId: string) =>
    t.dataSource.query(
      `SELECT endpoint_id AS "endpointId", merchant_account_id AS "account", status, outcome
         FROM webhook_inbox WHERE event_id = $1 ORDER BY merchant_account_id`,
      [eventId],
    );
  const paymentsOf = (orderId: string) =>
    t.dataSource.query(
      `SELECT merchant_account_id AS "account", provider_payment_id AS "pi", status FROM payments WHERE order_id = $1 ORDER BY id`,
      [orderId],
    );
  const fulfillmentsOf = (orderId: string) => d.count(`SELECT 1 FROM fulfillments WHERE order_id = $1`, [orderId]);
  /** The processed row of an event under one account. */
  const processedUnder = (eventId: string, account: string) =>
    eventually(
      async () => {
        const [row] = await t.dataSource.query(
          `SELECT status, outcome FROM webhook_inbox WHERE event_id = $1 AND merchant_account_id = $2`,
          [eventId, account],
        );
        return row && row.status !== 'received' ? row : undefined;
      },
      15_000,
      `processing of ${eventId} under ${account}`,
    );

  it("two connected accounts' events are keyed apart, each paying its own order exactly once", async () => {
    // Each order names its account: an event of an endpoint of many accounts may pay only such an
    // order (or one with a payment registered under that account).
    const orderA = await d.createOrder('49.90', 'EUR', { merchantAccountId: 'acct_A' });
    const orderB = await d.createOrder('49.90', 'EUR', { merchantAccountId: 'acct_B' });
    const a = bodies.stripe('payment_intent.succeeded', uniqueId('pi'), { orderId: orderA.id, account: 'acct_A' });
    const b = bodies.stripe('payment_intent.succeeded', uniqueId('pi'), { orderId: orderB.id, account: 'acct_B' });

    expect((await send('connect', CONNECT_SECRET, a.body)).body).toEqual({ status: 'accepted', eventId: a.eventId });
    expect((await send('connect', CONNECT_SECRET, b.body)).body).toEqual({ status: 'accepted', eventId: b.eventId });
    expect(await processedUnder(a.eventId, 'acct_A')).toEqual({ status: 'processed', outcome: 'applied' });
    expect(await processedUnder(b.eventId, 'acct_B')).toEqual({ status: 'processed', outcome: 'applied' });
    // Resent: duplicates of their own account's rows.
    expect((await send('connect', CONNECT_SECRET, a.body)).body).toEqual({ status: 'duplicate', eventId: a.eventId });
    expect((await send('connect', CONNECT_SECRET, b.body)).body).toEqual({ status: 'duplicate', eventId: b.eventId });

    expect(await inboxRows(a.eventId)).toEqual([{ endpointId: 'connect', account: 'acct_A', status: 'processed', outcome: 'applied' }]);
    expect(await inboxRows(b.eventId)).toEqual([{ endpointId: 'connect', account: 'acct_B', status: 'processed', outcome: 'applied' }]);
    expect(await paymentsOf(orderA.id)).toEqual([{ account: 'acct_A', pi: a.body.data.object.id, status: 'succeeded' }]);
    expect(await paymentsOf(orderB.id)).toEqual([{ account: 'acct_B', pi: b.body.data.object.id, status: 'succeeded' }]);
    expect((await d.getOrder(orderA.id)).status).toBe('paid');
    expect((await d.getOrder(orderB.id)).status).toBe('paid');
    expect(await fulfillmentsOf(orderA.id)).toBe(1);
    expect(await fulfillmentsOf(orderB.id)).toBe(1);
    expect(await d.count(`SELECT 1 FROM payments`)).toBe(2);
    expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(2);
  });

  it('an account the endpoint does not serve: 200, recorded under it, rejected account_mismatch, nothing changed', async () => {
    const order = await d.createOrder();
    const c = bodies.stripe('payment_intent.succeeded', uniqueId('pi'), { orderId: order.id, account: 'acct_C' });
    const before = await t.dataSource.query(`SELECT xmin::text, * FROM orders WHERE id = $1`, [order.id]);

    const res = await send('connect', CONNECT_SECRET, c.body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId: c.eventId });
    expect(await processedUnder(c.eventId, 'acct_C')).toEqual({ status: 'rejected', outcome: 'account_mismatch' });

    expect(await inboxRows(c.eventId)).toEqual([{ endpointId: 'connect', account: 'acct_C', status: 'rejected', outcome: 'account_mismatch' }]);
    expect(await t.dataSource.query(`SELECT xmin::text, * FROM orders WHERE id = $1`, [order.id])).toEqual(before);
    expect(await d.count(`SELECT 1 FROM payments`)).toBe(0);
    expect(await d.count(`SELECT 1 FROM fulfillments`)).toBe(0);
    expect(await d.count(`SELECT 1 FROM outbox_message`)).toBe(0);
  });

  it('the same event id under two accounts is two events: two inbox rows', async () => {
    const eventId = uniqueId('evt');
    const of = (account: string) => ({ id: eventId, object: 'event', type: 'customer.created', account, data: { object: { id: 'cus_1', object: 'customer' } } });

    expect((await send('connect', CONNECT_SECRET, of('acct_A'))).body).toEqual({ status: 'accepted', eventId });
    expect((await send('connect', CONNECT_SECRET, of('acct_B'))).body).toEqual({ status: 'accepted', eventId });
    expect((await send('connect', CONNECT_SECRET, of('acct_B'))).body).toEqual({ status: 'duplicate', eventId });
    await processedUnder(eventId, 'acct_A');
    await processedUnder(eventId, 'acct_B');

    expect(await inboxRows(eventId)).toEqual([
      { endpointId: 'connect', account: 'acct_A', status: 'ignored', outcome: 'no_handler' },
      { endpointId: 'connect', account: 'acct_B', status: 'ignored', outcome: 'no_handler' },
    ]);
  });

  it('a body that declares no account: 400 malformed_payload, nothing recorded', async () => {
    const order = await d.createOrder();
    const none = bodies.stripe('payment_intent.succeeded', uniqueId('pi'), { orderId: order.id });

    const res = await send('connect', CONNECT_SECRET, none.body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'malformed_payload',
      detail: 'the endpoint serves many merchant accounts and the body declares none',
    });
    const fa = bodies.factuarea('invoice.paid', uniqueId('inv'), { orderId: order.id });
    const faRes = await send('factuarea-platform', FACTUAREA_SECRET, fa.body, 'factuarea');
    expect(faRes.status).toBe(400);
    expect(faRes.body.error).toBe('malformed_payload');
    expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(0);
  });

  it('["*"] takes any account, each its own', async () => {
    const order = await d.createOrder('49.90', 'EUR', { merchantAccountId: 'acct_anyone_Z' });
    const z = bodies.stripe('payment_intent.succeeded', uniqueId('pi'), { orderId: order.id, account: 'acct_anyone_Z' });

    expect((await send('connect-any', ANY_SECRET, z.body)).body).toEqual({ status: 'accepted', eventId: z.eventId });
    expect(await processedUnder(z.eventId, 'acct_anyone_Z')).toEqual({ status: 'processed', outcome: 'applied' });
    expect(await paymentsOf(order.id)).toEqual([{ account: 'acct_anyone_Z', pi: z.body.data.object.id, status: 'succeeded' }]);
    expect((await d.getOrder(order.id)).status).toBe('paid');
    expect(await fulfillmentsOf(order.id)).toBe(1);
  });

  it('a Factuarea endpoint of many accounts keys on account.id', async () => {
    const order = await d.createOrder('49.90', 'EUR', { merchantAccountId: 'fa-B' });
    const fa = bodies.factuarea('invoice.paid', uniqueId('inv'), { orderId: order.id, accountId: 'fa-B' });

    expect((await send('factuarea-platform', FACTUAREA_SECRET, fa.body, 'factuarea')).body).toEqual({ status: 'accepted', eventId: fa.eventId });
    expect(await processedUnder(fa.eventId, 'fa-B')).toEqual({ status: 'processed', outcome: 'applied' });
    expect((await d.getOrder(order.id)).status).toBe('paid');
  });

  it('the same provider payment id under two accounts is two payments, each registered and paid under its own', async () => {
    const pi = uniqueId('pi');
    const orderA = await d.createOrder();
    const orderB = await d.createOrder();
    await d.registerPayment(orderA.id, 'stripe', pi, 'acct_A');
    await d.registerPayment(orderB.id, 'stripe', pi, 'acct_B');
    // A registration must say which account: the stripe endpoints serve many.
    const unnamed = await d.http().post(`/orders/${orderA.id}/payments`).set(AUTH).send({ provider: 'stripe', providerPaymentId: pi });
    expect(unnamed.status).toBe(400);

    const a = bodies.stripe('payment_intent.succeeded', pi, { account: 'acct_A' }); // no order id: matched by the payment's key
    expect((await send('connect', CONNECT_SECRET, a.body)).status).toBe(200);
    expect(await processedUnder(a.eventId, 'acct_A')).toEqual({ status: 'processed', outcome: 'applied' });
    expect((await d.getOrder(orderA.id)).status).toBe('paid');
    expect(await paymentsOf(orderB.id)).toEqual([{ account: 'acct_B', pi, status: 'pending' }]);

    const b = bodies.stripe('payment_intent.succeeded', pi, { account: 'acct_B' });
    expect((await send('connect', CONNECT_SECRET, b.body)).status).toBe(200);
    expect(await processedUnder(b.eventId, 'acct_B')).toEqual({ status: 'processed', outcome: 'applied' });

    expect(await paymentsOf(orderA.id)).toEqual([{ account: 'acct_A', pi, status: 'succeeded' }]);
    expect(await paymentsOf(orderB.id)).toEqual([{ account: 'acct_B', pi, status: 'succeeded' }]);
    expect((await d.getOrder(orderB.id)).status).toBe('paid');
    expect(await d.count(`SELECT 1 FROM payments WHERE provider_payment_id = $1`, [pi])).toBe(2);
    expect(await fulfillmentsOf(orderA.id)).toBe(1);
    expect(await fulfillmentsOf(orderB.id)).toBe(1);
  });

  it("a parked delivery is released by a registration under its own account, not another's", async () => {
    const pi = uniqueId('pi');
    const orderA = await d.createOrder();
    const orderB = await d.createOrder();
    const b = bodies.stripe('payment_intent.succeeded', pi, { account: 'acct_B' });
    expect((await send('connect', CONNECT_SECRET, b.body)).status).toBe(200);
    expect(await processedUnder(b.eventId, 'acct_B')).toEqual({ status: 'unmatched', outcome: 'payment_not_found' });

    // The same payment id under acct_A: acct_B's event stays parked.
    await d.registerPayment(orderA.id, 'stripe', pi, 'acct_A');
    await d.registerPayment(orderB.id, 'stripe', pi, 'acct_B');
    await eventually(async () => (await d.getOrder(orderB.id)).status === 'paid', 15_000, 'order B paid');

    expect(await inboxRows(b.eventId)).toEqual([{ endpointId: 'connect', account: 'acct_B', status: 'processed', outcome: 'applied' }]);
    expect(await paymentsOf(orderA.id)).toEqual([{ account: 'acct_A', pi, status: 'pending' }]);
    expect(await paymentsOf(orderB.id)).toEqual([{ account: 'acct_B', pi, status: 'succeeded' }]);
    expect((await d.getOrder(orderA.id)).status).toBe('awaiting_payment');
    expect(await fulfillmentsOf(orderA.id)).toBe(0);
    expect(await fulfillmentsOf(orderB.id)).toBe(1);
  });

  it('single-account endpoints are as before: the endpoint account keys the event', async () => {
    const order = await d.createOrder();
    const one = bodies.stripe('payment_intent.succeeded', uniqueId('pi'), { orderId: order.id });
    const text = JSON.stringify(one.body);
    const res = await request(t.app.getHttpServer())
      .post('/webhooks/stripe-main')
      .set(signedHeaders('stripe', 'whsec_test_stripe_new', text))
      .send(text);
    expect(res.body).toEqual({ status: 'accepted', eventId: one.eventId });
    expect(await processedUnder(one.eventId, 'acct_1')).toEqual({ status: 'processed', outcome: 'applied' });
  });
});
