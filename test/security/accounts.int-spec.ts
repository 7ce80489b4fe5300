import request from 'supertest';
import type { EndpointDefinition } from '../../src/config/options';
import { signedHeaders } from '../../src/testing/sign';
import { AUTH, createTestApp, eventually, PLATFORMS, TEST_ENDPOINTS, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';

const CONNECT_SECRET = 'whsec_connect_marketplace';
const ANY_SECRET = 'whsec_connect_anyone';

/**
 * Merchant accounts as a trust boundary, from the side of the attacker: a connected account of a
 * marketplace (it writes its own events, `metadata.order_id` included, and the platform's Connect
 * endpoint relays them signed with the platform's secret) who wants to pay, refund or fill an order
 * that expects another account, or to take another account's deduplication keys. Each attack first,
 * then the legitimate paths of a Connect platform, which must keep working. Workers on, real
 * PostgreSQL and Redis, Express and Fastify.
 */
const ENDPOINTS: EndpointDefinition[] = [
  ...TEST_ENDPOINTS, // stripe-main serves acct_1 alone
  { id: 'connect', provider: 'stripe', secrets: [CONNECT_SECRET], merchantAccountIds: ['acct_A', 'acct_B'] },
  { id: 'connect-any', provider: 'stripe', secrets: [ANY_SECRET], merchantAccountIds: ['*'] },
];

describe.each(PLATFORMS)('%s: one merchant account never touches another\'s order', (platform) => {
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

  const send = (endpointId: string, secret: string, body: object) => {
    const text = JSON.stringify(body);
    return request(t.app.getHttpServer()).post(`/webhooks/${endpointId}`).set(signedHeaders('stripe', secret, text)).send(text);
  };
  const connect = (body: object) => send('connect', CONNECT_SECRET, body);
  /** The one row of an event once processed (any account, any scope). */
  const processed = (eventId: string) =>
    eventually(
      async () => {
        const rows = await t.dataSource.query(`SELECT status, outcome FROM webhook_inbox WHERE event_id = $1`, [eventId]);
        return rows.length === 1 && rows[0].status !== 'received' ? rows[0] : undefined;
      },
      15_000,
      `processing of ${eventId}`,
    );
  const paymentsOf = (orderId: string) =>
    t.dataSource.query(
      `SELECT merchant_account_id AS "account", provider_payment_id AS "pi", status FROM payments WHERE order_id = $1 ORDER BY id`,
      [orderId],
    );
  /** Everything an order's change would have written: the order row as stored, its fulfillment, its events. */
  const footprint = async (orderId: string) => ({
    order: await t.dataSource.query(`SELECT xmin::text AS version, status, paid_via FROM orders WHERE id = $1`, [orderId]),
    fulfillments: await d.count(`SELECT 1 FROM fulfillments WHERE order_id = $1`, [orderId]),
    outbox: await d.count(`SELECT 1 FROM outbox_message`),
  });
  const charge = (type: string, paymentIntentId: string, account: string, amountRefunded: number, orderId?: string) => {
    const eventId = uniqueId('evt');
    return {
      eventId,
      body: {
        id: eventId,
        object: 'event',
        type,
        account,
        created: Math.floor(Date.now() / 1000),
        data: {
          object: {
            id: uniqueId('ch'),
            object: 'charge',
            payment_intent: paymentIntentId,
            amount: 2500,
            amount_refunded: amountRefunded,
            currency: 'eur',
            metadata: orderId ? { order_id: orderId } : {},
          },
        },
      },
    };
  };

  describe('the attacks', () => {
    it("acct_B's own PaymentIntent naming acct_A's order in metadata: rejected account_mismatch; not paid, not shipped, nothing attached", async () => {
      const order = await d.createOrder('25.00', 'EUR');
      const registered = uniqueId('pi');
      await d.registerPayment(order.id, 'stripe', registered, 'acct_A');
      const before = await footprint(order.id);

      const attack = bodies.stripe('payment_intent.succeeded', uniqueId('pi'), { orderId: order.id, account: 'acct_B', amount: 2500 });
      expect((await connect(attack.body)).body).toEqual({ status: 'accepted', eventId: attack.eventId });
      expect(await processed(attack.eventId)).toEqual({ status: 'rejected', outcome: 'account_mismatch' });

      expect(await footprint(order.id)).toEqual(before);
      expect(await paymentsOf(order.id)).toEqual([{ account: 'acct_A', pi: registered, status: 'pending' }]);
      expect((await d.getOrder(order.id)).status).toBe('awaiting_payment');

      // acct_A's own payment still pays it, once.
      const paid = bodies.stripe('payment_intent.succeeded', registered, { account: 'acct_A', amount: 2500 });
      expect((await connect(paid.body)).status).toBe(200);
      expect(await processed(paid.eventId)).toEqual({ status: 'processed', outcome: 'applied' });
      expect((await d.getOrder(order.id)).status).toBe('paid');
      expect(await d.count(`SELECT 1 FROM fulfillments WHERE order_id = $1`, [order.id])).toBe(1);
    });

    it('the same attack on an order that names acct_A: rejected account_mismatch, from the Connect endpoint and from any other', async () => {
      const order = await d.createOrder('25.00', 'EUR', { merchantAccountId: 'acct_A' });
      const before = await footprint(order.id);

      const viaConnect = bodies.stripe('payment_intent.succeeded', uniqueId('pi'), { orderId: order.id, account: 'acct_B', amount: 2500 });
      const viaAny = bodies.stripe('payment_intent.succeeded', uniqueId('pi'), { orderId: order.id, account: 'acct_Z', amount: 2500 });
      // A single-account endpoint of another account (acct_1) vouches for acct_1, not for acct_A.
      const viaOther = bodies.stripe('payment_intent.succeeded', uniqueId('pi'), { orderId: order.id, amount: 2500 });
      expect((await connect(viaConnect.body)).status).toBe(200);
      expect((await send('connect-any', ANY_SECRET, viaAny.body)).status).toBe(200);
      expect((await send('stripe-main', 'whsec_test_stripe_new', viaOther.body)).status).toBe(200);
      for (const e of [viaConnect, viaAny, viaOther]) {
        expect(await processed(e.eventId)).toEqual({ status: 'rejected', outcome: 'account_mismatch' });
      }
      expect(await footprint(order.id)).toEqual(before);
      expect(await paymentsOf(order.id)).toEqual([]);
    });

    it("acct_B cannot refund an order support marked paid: its succeeded and refunded events are rejected, the order stays paid", async () => {
      const order = await d.createOrder('25.00', 'EUR');
      await d.registerPayment(order.id, 'stripe', uniqueId('pi'), 'acct_A');
      expect((await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'bank transfer' })).status).toBe(200);
      const before = await footprint(order.id);

      const pi = uniqueId('pi');
      const succeeded = bodies.stripe('payment_intent.succeeded', pi, { orderId: order.id, account: 'acct_B', amount: 2500 });
      const refunded = charge('charge.refunded', pi, 'acct_B', 2500, order.id);
      expect((await connect(succeeded.body)).status).toBe(200);
      expect(await processed(succeeded.eventId)).toEqual({ status: 'rejected', outcome: 'account_mismatch' });
      expect((await connect(refunded.body)).status).toBe(200);
      expect(await processed(refunded.eventId)).toEqual({ status: 'rejected', outcome: 'account_mismatch' });

      expect(await footprint(order.id)).toEqual(before);
      expect((await d.getOrder(order.id)).status).toBe('paid');
      expect(await d.count(`SELECT 1 FROM payments WHERE merchant_account_id = 'acct_B'`)).toBe(0);
    });

    it('200 payment_intent.canceled events of acct_B attach nothing to the order', async () => {
      const order = await d.createOrder('25.00', 'EUR');
      await d.registerPayment(order.id, 'stripe', uniqueId('pi'), 'acct_A');
      const events = Array.from({ length: 200 }, () =>
        bodies.stripe('payment_intent.canceled', uniqueId('pi'), { orderId: order.id, account: 'acct_B', amount: 2500 }),
      );
      for (let i = 0; i < events.length; i += 20) {
        const answers = await Promise.all(events.slice(i, i + 20).map((e) => connect(e.body)));
        expect(answers.map((a) => a.status)).toEqual(Array(answers.length).fill(200));
      }
      await eventually(
        async () => (await d.count(`SELECT 1 FROM webhook_inbox WHERE status = 'received'`)) === 0,
        30_000,
        'every delivery processed',
      );
      const outcomes = await t.dataSource.query(
        `SELECT status, outcome, count(*)::int AS n FROM webhook_inbox WHERE merchant_account_id = 'acct_B' GROUP BY status, outcome`,
      );
      expect(outcomes).toEqual([{ status: 'rejected', outcome: 'account_mismatch', n: 200 }]);
      expect(await paymentsOf(order.id)).toHaveLength(1);
      expect((await d.getOrder(order.id)).payments).toHaveLength(1);
    });

    it('at most 20 payments per order: the 21st event is rejected too_many_payments, the 21st registration answers 409', async () => {
      const order = await d.createOrder('25.00', 'EUR', { merchantAccountId: 'acct_A' });
      const events = Array.from({ length: 21 }, () =>
        bodies.stripe('payment_intent.canceled', uniqueId('pi'), { orderId: order.id, account: 'acct_A', amount: 2500 }),
      );
      // One at a time: which of them is the 21st is then known.
      for (const e of events) {
        expect((await connect(e.body)).status).toBe(200);
        await processed(e.eventId);
      }
      const outcomes = await Promise.all(events.map((e) => processed(e.eventId)));
      expect(outcomes.slice(0, 20)).toEqual(Array(20).fill({ status: 'processed', outcome: 'applied' }));
      expect(outcomes[20]).toEqual({ status: 'rejected', outcome: 'too_many_payments' });
      expect(await paymentsOf(order.id)).toHaveLength(20);

      const more = await d.http().post(`/orders/${order.id}/payments`).set(AUTH).send({ provider: 'stripe', providerPaymentId: uniqueId('pi') });
      expect(more.status).toBe(409);
      expect(more.body).toEqual({ error: 'too_many_payments' });
      // A registration already made answers as before (it attaches nothing new).
      const again = await d.http()
        .post(`/orders/${order.id}/payments`)
        .set(AUTH)
        .send({ provider: 'stripe', providerPaymentId: events[0].body.data.object.id });
      expect(again.status).toBe(200);
      expect(await paymentsOf(order.id)).toHaveLength(20);
    });

    it('registering a payment of another account than the order names: 409 account_mismatch, nothing written', async () => {
      const order = await d.createOrder('25.00', 'EUR', { merchantAccountId: 'acct_A' });
      const res = await d.http()
        .post(`/orders/${order.id}/payments`)
        .set(AUTH)
        .send({ provider: 'stripe', providerPaymentId: uniqueId('pi'), merchantAccountId: 'acct_B' });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: 'account_mismatch' });
      // paymos endpoints serve acc_1 alone: the default account is not the order's either.
      const paymos = await d.http().post(`/orders/${order.id}/payments`).set(AUTH).send({ provider: 'paymos', providerPaymentId: uniqueId('inv') });
      expect(paymos.status).toBe(409);
      expect(paymos.body).toEqual({ error: 'account_mismatch' });
      expect(await paymentsOf(order.id)).toEqual([]);
    });

    it("an event naming an account its endpoint does not serve never takes that account's key: the real event is accepted and processed once", async () => {
      const order = await d.createOrder('49.90', 'EUR');
      const pi = uniqueId('pi');
      await d.registerPayment(order.id, 'stripe', pi, 'acct_1');
      // The holder of the Connect secret sends, ahead of time, the id of an event of acct_1 (served by stripe-main).
      const real = bodies.stripe('payment_intent.succeeded', pi, { account: 'acct_1' });
      expect((await connect(real.body)).body).toEqual({ status: 'accepted', eventId: real.eventId });
      expect(await processed(real.eventId)).toEqual({ status: 'rejected', outcome: 'account_mismatch' });
      // The same bytes again to the Connect endpoint: a duplicate of that rejected row.
      expect((await connect(real.body)).body).toEqual({ status: 'duplicate', eventId: real.eventId });

      // The real event, through the endpoint that serves acct_1: a new event, applied.
      const res = await send('stripe-main', 'whsec_test_stripe_new', real.body);
      expect(res.body).toEqual({ status: 'accepted', eventId: real.eventId });
      const applied = await eventually(
        async () => {
          const [row] = await t.dataSource.query(`SELECT status, outcome FROM webhook_inbox WHERE event_id = $1 AND endpoint_id = 'stripe-main'`, [
            real.eventId,
          ]);
          return row && row.status !== 'received' ? row : undefined;
        },
        15_000,
        'the real event processed',
      );
      expect(applied).toEqual({ status: 'processed', outcome: 'applied' });
      expect((await send('stripe-main', 'whsec_test_stripe_new', real.body)).body).toEqual({ status: 'duplicate', eventId: real.eventId });

      const archive = await d.http().get(`/admin/webhook-deliveries?eventId=${real.eventId}`).set(AUTH);
      expect(archive.body.items.map((i: { endpointId: string; merchantAccountId: string; status: string; outcome: string }) => [
        i.endpointId,
        i.merchantAccountId,
        i.status,
        i.outcome,
      ])).toEqual([
        ['stripe-main', 'acct_1', 'processed', 'applied'],
        ['connect', 'acct_1', 'rejected', 'account_mismatch'],
      ]);
      expect((await d.getOrder(order.id)).status).toBe('paid');
      expect(await d.count(`SELECT 1 FROM fulfillments WHERE order_id = $1`, [order.id])).toBe(1);
      // Reconciliation counts only the event recorded under acct_1's own key.
      const report = await d.http()
        .post('/admin/reconciliation')
        .set(AUTH)
        .send({ provider: 'stripe', merchantAccountId: 'acct_1', eventIds: [real.eventId] });
      expect(report.body.missingEvents).toEqual([]);
    });
  });

  describe('the legitimate paths of a Connect platform', () => {
    it('a registered payment: its own account pays the order, no order id needed', async () => {
      const order = await d.createOrder();
      const pi = uniqueId('pi');
      await d.registerPayment(order.id, 'stripe', pi, 'acct_B');
      const paid = bodies.stripe('payment_intent.succeeded', pi, { account: 'acct_B' });
      expect((await connect(paid.body)).status).toBe(200);
      expect(await processed(paid.eventId)).toEqual({ status: 'processed', outcome: 'applied' });
      expect((await d.getOrder(order.id)).status).toBe('paid');
    });

    it('an order created with its account: paid through metadata.order_id alone, on the Connect endpoint and on ["*"]', async () => {
      const a = await d.createOrder('49.90', 'EUR', { merchantAccountId: 'acct_A' });
      const z = await d.createOrder('49.90', 'EUR', { merchantAccountId: 'acct_anyone_Z' });
      expect(a).toMatchObject({ merchantAccountId: 'acct_A' });
      const paidA = bodies.stripe('payment_intent.succeeded', uniqueId('pi'), { orderId: a.id, account: 'acct_A' });
      const paidZ = bodies.stripe('payment_intent.succeeded', uniqueId('pi'), { orderId: z.id, account: 'acct_anyone_Z' });
      expect((await connect(paidA.body)).status).toBe(200);
      expect((await send('connect-any', ANY_SECRET, paidZ.body)).status).toBe(200);
      expect(await processed(paidA.eventId)).toEqual({ status: 'processed', outcome: 'applied' });
      expect(await processed(paidZ.eventId)).toEqual({ status: 'processed', outcome: 'applied' });
      expect(await paymentsOf(a.id)).toEqual([{ account: 'acct_A', pi: paidA.body.data.object.id, status: 'succeeded' }]);
      expect((await d.getOrder(z.id)).status).toBe('paid');
      expect(await d.count(`SELECT 1 FROM fulfillments`)).toBe(2);
    });

    it('a registration needs no account when the order names one', async () => {
      const order = await d.createOrder('49.90', 'EUR', { merchantAccountId: 'acct_B' });
      const res = await d.http().post(`/orders/${order.id}/payments`).set(AUTH).send({ provider: 'stripe', providerPaymentId: uniqueId('pi') });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ merchantAccountId: 'acct_B', status: 'pending' });
    });

    it('a webhook that beats the registration: rejected account_mismatch, then the registration under its account lets it through', async () => {
      const order = await d.createOrder();
      const pi = uniqueId('pi');
      const early = bodies.stripe('payment_intent.succeeded', pi, { orderId: order.id, account: 'acct_A' });
      expect((await connect(early.body)).status).toBe(200);
      expect(await processed(early.eventId)).toEqual({ status: 'rejected', outcome: 'account_mismatch' });

      await d.registerPayment(order.id, 'stripe', pi, 'acct_A');
      await eventually(async () => (await d.getOrder(order.id)).status === 'paid', 15_000, 'the order paid');
      expect(await processed(early.eventId)).toEqual({ status: 'processed', outcome: 'applied' });
      expect(await paymentsOf(order.id)).toEqual([{ account: 'acct_A', pi, status: 'succeeded' }]);
      expect(await d.count(`SELECT 1 FROM fulfillments WHERE order_id = $1`, [order.id])).toBe(1);
    });

    it('an order echoes its account, and GET /orders filters on it', async () => {
      const a = await d.createOrder('49.90', 'EUR', { merchantAccountId: 'acct_A' });
      await d.createOrder('49.90', 'EUR', { merchantAccountId: 'acct_B' });
      await d.createOrder();
      const list = await d.http().get('/orders?merchantAccountId=acct_A').set(AUTH);
      expect(list.status).toBe(200);
      expect(list.body.items.map((o: { id: string }) => o.id)).toEqual([a.id]);
      expect(list.body.items[0].merchantAccountId).toBe('acct_A');
      const all = await d.http().get('/orders').set(AUTH);
      expect(all.body.items.map((o: { merchantAccountId: string | null }) => o.merchantAccountId)).toEqual([null, 'acct_B', 'acct_A']);
      const bad = await d.http().get(`/orders?merchantAccountId=${'x'.repeat(256)}`).set(AUTH);
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('validation_failed');
    });
  });
});
