import { DeliveryProcessingService } from '../../src/webhooks/delivery-processing.service';
import { createTestApp, eventually, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';

/**
 * The table of invariants, each driven through the service as a provider and a host
 * would: signed webhooks over HTTP, processed by the BullMQ workers, on the real PostgreSQL
 * and Redis.
 */
describe('payment-order scenarios (signed webhooks, workers on)', () => {
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    // An unknown payment's event is parked after 2 attempts, before the last of 3.
    t = await createTestApp({ runWorkers: true, tuning: { inboxAttempts: 3, inboxBackoffMs: 50, unmatchedAfterAttempts: 2 } });
    d = driver(t);
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  const fulfillmentsOf = (orderId: string) => d.count(`SELECT 1 FROM fulfillments WHERE order_id = $1`, [orderId]);
  const outboxOf = (orderId: string) =>
    d.count(`SELECT 1 FROM outbox_message WHERE payload->>'orderId' = $1`, [orderId]);
  const snapshot = async (orderId: string) => ({
    orders: await t.dataSource.query(`SELECT xmin::text, * FROM orders WHERE id = $1`, [orderId]),
    payments: await t.dataSource.query(`SELECT xmin::text, * FROM payments WHERE order_id = $1 ORDER BY id`, [orderId]),
    fulfillments: await t.dataSource.query(`SELECT id, order_id, carrier, created_at FROM fulfillments WHERE order_id = $1`, [orderId]),
    // The message itself; its delivery (attempts, errors) is the relay's business and runs meanwhile.
    outbox: await t.dataSource.query(
      `SELECT id, type, payload, idempotency_key, created_at FROM outbox_message WHERE payload->>'orderId' = $1`,
      [orderId],
    ),
  });

  /** A second app whose workers are off, for a test that drives processing itself; truncated first, closed after. */
  async function withoutWorkers(test: (app: TestApp, dn: ReturnType<typeof driver>) => Promise<void>): Promise<void> {
    const app = await createTestApp({ runWorkers: false });
    try {
      await truncateAll(app.dataSource);
      await test(app, driver(app));
    } finally {
      await app.close();
    }
  }

  it('the same event arriving twice makes one business change', async () => {
    const order = await d.createOrder();
    const { eventId, body } = bodies.paymos('invoice.paid', uniqueId('inv'), { orderId: order.id });
    expect((await d.send('paymos-a', 'paymos', body)).body).toEqual({ status: 'accepted', eventId });
    expect((await d.processed(eventId)).outcome).toBe('applied');
    const before = await snapshot(order.id);
    expect((await d.send('paymos-a', 'paymos', body)).body).toEqual({ status: 'duplicate', eventId });
    expect(await snapshot(order.id)).toEqual(before);
    expect((await d.getOrder(order.id)).status).toBe('paid');
    expect(await fulfillmentsOf(order.id)).toBe(1);
    expect(await outboxOf(order.id)).toBe(1);
  });

  it('two workers processing the same event at once: the database arbitrates, one change', async () => {
    await withoutWorkers(async (noWorkers, dn) => {
      const order = await dn.createOrder();
      const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
      await dn.send('standard-main', 'standard', body, { eventId });
      const [{ id }] = await noWorkers.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [eventId]);
      const processing = noWorkers.get(DeliveryProcessingService);
      const results = await Promise.all(Array.from({ length: 6 }, () => processing.process(id, false)));
      expect(results.filter((r) => r !== null)).toEqual([{ status: 'processed', outcome: 'applied' }]);
      expect(await dn.count(`SELECT 1 FROM fulfillments WHERE order_id = $1`, [order.id])).toBe(1);
      expect(await dn.count(`SELECT 1 FROM payments WHERE order_id = $1`, [order.id])).toBe(1);
      expect((await dn.getOrder(order.id)).status).toBe('paid');
    });
  });

  it('processing that fails before commit rolls back, and the retry applies the change', async () => {
    // A real failure inside the transaction: the first fulfillment insert raises.
    // A sequence, because nextval() survives the rollback of the transaction it ran in.
    await t.dataSource.query(`CREATE SEQUENCE IF NOT EXISTS test_fail_once`);
    await t.dataSource.query(`SELECT setval('test_fail_once', 1, false)`);
    await t.dataSource.query(`
      CREATE OR REPLACE FUNCTION test_fail_once() RETURNS trigger AS $$
      BEGIN
        IF nextval('test_fail_once') = 1 THEN
          RAISE EXCEPTION 'injected failure';
        END IF;
        RETURN NEW;
      END $$ LANGUAGE plpgsql`);
    await t.dataSource.query(
      `CREATE TRIGGER test_fail_once BEFORE INSERT ON fulfillments FOR EACH ROW EXECUTE FUNCTION test_fail_once()`,
    );
    try {
      const order = await d.createOrder();
      const { eventId, body } = bodies.paymos('invoice.paid', uniqueId('inv'), { orderId: order.id });
      await d.send('paymos-a', 'paymos', body);
      const row = await d.processed(eventId);
      expect(row).toMatchObject({ status: 'processed', outcome: 'applied', attempts: 2, lastError: null });
      // The failed attempt left nothing: one payment, one fulfillment, one message.
      expect(await d.count(`SELECT 1 FROM payments WHERE order_id = $1`, [order.id])).toBe(1);
      expect(await fulfillmentsOf(order.id)).toBe(1);
      expect(await outboxOf(order.id)).toBe(1);
      expect((await d.getOrder(order.id)).status).toBe('paid');
    } finally {
      await t.dataSource.query(`DROP TRIGGER IF EXISTS test_fail_once ON fulfillments`);
      await t.dataSource.query(`DROP FUNCTION IF EXISTS test_fail_once()`);
      await t.dataSource.query(`DROP SEQUENCE IF EXISTS test_fail_once`);
    }
  });

  it('the answer lost after commit: the resent delivery is acknowledged and changes nothing', async () => {
    const order = await d.createOrder();
    const { eventId, body } = bodies.stripe('payment_intent.succeeded', uniqueId('pi'), { orderId: order.id });
    // The sender never saw this 200 (say its connection dropped), so it sends the same bytes again.
    await d.send('stripe-main', 'stripe', body);
    await d.processed(eventId);
    const before = await snapshot(order.id);
    const resent = await d.send('stripe-main', 'stripe', body);
    expect(resent.status).toBe(200);
    expect(resent.body).toEqual({ status: 'duplicate', eventId });
    // And a job that runs again after its commit (a stalled worker) finds the row final.
    const [{ id }] = await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [eventId]);
    expect(await t.get(DeliveryProcessingService).process(id, false)).toBeNull();
    expect(await snapshot(order.id)).toEqual(before);
  });

  it('two different events for the same correct payment: the order is fulfilled once', async () => {
    const order = await d.createOrder();
    const invoice = uniqueId('inv');
    // Each Paymos endpoint gets its own evt_… for the same invoice becoming paid.
    const a = bodies.paymos('invoice.paid', invoice, { orderId: order.id });
    const b = bodies.paymos('invoice.paid', invoice, { orderId: order.id });
    await Promise.all([d.send('paymos-a', 'paymos', a.body), d.send('paymos-a', 'paymos', b.body)]);
    const outcomes = [(await d.processed(a.eventId)).outcome, (await d.processed(b.eventId)).outcome].sort();
    expect(outcomes).toEqual(['already_applied', 'applied']);
    expect(await fulfillmentsOf(order.id)).toBe(1);
    expect(await outboxOf(order.id)).toBe(1);
  });

  it('an old pending after succeeded: the state does not go back', async () => {
    const order = await d.createOrder();
    const invoice = uniqueId('inv');
    const paid = bodies.paymos('invoice.paid', invoice, { orderId: order.id });
    await d.send('paymos-a', 'paymos', paid.body);
    await d.processed(paid.eventId);
    const created = bodies.paymos('invoice.created', invoice, { orderId: order.id });
    await d.send('paymos-a', 'paymos', created.body);
    expect(await d.processed(created.eventId)).toMatchObject({ status: 'processed', outcome: 'stale' });
    const view = await d.getOrder(order.id);
    expect(view.status).toBe('paid');
    expect(view.payments.map((p: { status: string }) => p.status)).toEqual(['succeeded']);
  });

  describe('wrong signature, merchant, amount or currency: no payment transition at all', () => {
    it.each([
      ['merchant', () => bodies.stripe('payment_intent.succeeded', 'pi_x', { account: 'acct_someone_else' }), 'account_mismatch'],
      ['amount', () => bodies.stripe('payment_intent.succeeded', 'pi_x', { amount: 4000 }), 'amount_mismatch'],
      ['currency', () => bodies.stripe('payment_intent.succeeded', 'pi_x', { currency: 'usd' }), 'currency_mismatch'],
    ])('%s', async (_what, make, outcome) => {
      const order = await d.createOrder();
      const pi = uniqueId('pi');
      await d.registerPayment(order.id, 'stripe', pi);
      const { eventId, body } = make();
      (body.data.object as { id: string }).id = pi;
      (body.data.object as { metadata: object }).metadata = { order_id: order.id };
      await d.send('stripe-main', 'stripe', body);
      expect(await d.processed(eventId)).toMatchObject({ status: 'rejected', outcome });
      const view = await d.getOrder(order.id);
      expect(view.status).toBe('awaiting_payment');
      expect(view.payments.map((p: { status: string }) => p.status)).toEqual(['pending']);
      expect(await fulfillmentsOf(order.id)).toBe(0);
    });

    it('amount, on a payment the event would create from its order id: no payment is created', async () => {
      const order = await d.createOrder();
      const { eventId, body } = bodies.paymos('invoice.paid', uniqueId('inv'), { orderId: order.id, amount: '10.00' });
      await d.send('paymos-a', 'paymos', body);
      expect(await d.processed(eventId)).toMatchObject({ status: 'rejected', outcome: 'amount_mismatch' });
      expect(await d.count(`SELECT 1 FROM payments`)).toBe(0);
      expect((await d.getOrder(order.id)).status).toBe('awaiting_payment');
    });

    it('signature', async () => {
      const order = await d.createOrder();
      const { body } = bodies.stripe('payment_intent.succeeded', uniqueId('pi'), { orderId: order.id });
      const text = JSON.stringify(body);
      const res = await d
        .http()
        .post('/webhooks/stripe-main')
        .set({ 'stripe-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}`, 'content-type': 'application/json' })
        .send(text);
      expect(res.status).toBe(401);
      expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(0);
      expect(await d.count(`SELECT 1 FROM payments`)).toBe(0);
      expect((await d.getOrder(order.id)).status).toBe('awaiting_payment');
    });
  });

  it("support marks the order paid, then the provider's event arrives: one fulfillment", async () => {
    const order = await d.createOrder();
    const marked = await d.http().post(`/orders/${order.id}/mark-paid`).set({ Authorization: 'Bearer test-admin-token' }).send({ reason: 'wire transfer' });
    expect(marked.status).toBe(200);
    expect(marked.body.status).toBe('paid');
    const { eventId, body } = bodies.factuarea('invoice.paid', `inv-${uniqueId('fa')}`, { orderId: order.id });
    await d.send('factuarea-company', 'factuarea', body, { eventId });
    expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    const view = await d.getOrder(order.id);
    expect(view.status).toBe('paid');
    expect(view.payments.map((p: { status: string }) => p.status)).toEqual(['succeeded']);
    expect(await fulfillmentsOf(order.id)).toBe(1);
    expect(await outboxOf(order.id)).toBe(1);
  });

  describe('every provider drives an order to paid', () => {
    it('paymos (payment created from the order id it carries)', async () => {
      const order = await d.createOrder();
      const { eventId, body } = bodies.paymos('invoice.paid', uniqueId('inv'), { orderId: order.id });
      await d.send('paymos-a', 'paymos', body);
      await d.processed(eventId);
      expect((await d.getOrder(order.id)).status).toBe('paid');
    });

    it('factuarea (account endpoint declaring the merchant)', async () => {
      const order = await d.createOrder('1210.00');
      const { eventId, body } = bodies.factuarea('invoice.paid', `inv-${uniqueId('fa')}`, {
        orderId: order.id,
        total: '1210.00',
        accountId: 'fa-merchant-1',
      });
      await d.send('factuarea-account', 'factuarea', body, { eventId });
      expect((await d.processed(eventId)).outcome).toBe('applied');
      expect((await d.getOrder(order.id)).status).toBe('paid');
    });

    it('stripe (registered PaymentIntent, lower-case currency, minor units)', async () => {
      const order = await d.createOrder();
      const pi = uniqueId('pi');
      await d.registerPayment(order.id, 'stripe', pi);
      const { eventId, body } = bodies.stripe('payment_intent.succeeded', pi);
      await d.send('stripe-main', 'stripe', body);
      expect((await d.processed(eventId)).outcome).toBe('applied');
      expect((await d.getOrder(order.id)).status).toBe('paid');
    });

    it('standard (Standard Webhooks, native format)', async () => {
      const order = await d.createOrder();
      const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
      await d.send('standard-main', 'standard', body, { eventId });
      expect((await d.processed(eventId)).outcome).toBe('applied');
      expect((await d.getOrder(order.id)).status).toBe('paid');
    });
  });

  it.each([
    ['JPY', '5000', 5000],
    ['EUR', '49.90', 4990],
    ['BHD', '1.250', 1250],
  ])('money round-trips exactly: %s %s', async (currency, amount, minor) => {
    const order = await d.createOrder(amount, currency);
    expect(order.amount).toBe(amount);
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id, amount: minor, currency });
    await d.send('standard-main', 'standard', body, { eventId });
    expect((await d.processed(eventId)).outcome).toBe('applied');
    const view = await d.getOrder(order.id);
    expect(view).toMatchObject({ status: 'paid', amount, currency });
    expect(view.payments[0]).toMatchObject({ amount, currency, refundedAmount: currency === 'JPY' ? '0' : currency === 'BHD' ? '0.000' : '0.00' });
    const [{ amount_minor }] = await t.dataSource.query(`SELECT amount_minor FROM orders WHERE id = $1`, [order.id]);
    expect(amount_minor).toBe(String(minor));
  });

  it('a webhook that beats the registration is retried unmatchedAfterAttempts times, parked as unmatched, and processed at once on registration', async () => {
    const order = await d.createOrder();
    const pi = uniqueId('pi');
    const { eventId, body } = bodies.stripe('payment_intent.succeeded', pi); // no order id in metadata
    await d.send('stripe-main', 'stripe', body);
    const parked = await d.processed(eventId);
    expect(parked).toMatchObject({ status: 'unmatched', outcome: 'payment_not_found', attempts: 2 });
    // The earlier attempts' error is cleared: parking is how it ended, not a failure.
    expect(parked.lastError).toBeNull();

    await d.registerPayment(order.id, 'stripe', pi);
    await eventually(async () => (await d.getOrder(order.id)).status === 'paid', 10_000, 'the parked delivery');
    const [row] = await t.dataSource.query(`SELECT status, outcome FROM webhook_inbox WHERE event_id = $1`, [eventId]);
    expect(row).toEqual({ status: 'processed', outcome: 'applied' });
    expect(await fulfillmentsOf(order.id)).toBe(1);
  });

  it('a refund that arrives before its capture is rejected, then applied once the capture lands', async () => {
    const order = await d.createOrder();
    const payment = uniqueId('pay');
    const refund = bodies.standard('payment.refunded', payment, { orderId: order.id, refunded: 2000 });
    await d.send('standard-main', 'standard', refund.body, { eventId: refund.eventId });
    expect(await d.processed(refund.eventId)).toMatchObject({ status: 'rejected', outcome: 'illegal_transition' });

    const paid = bodies.standard('payment.succeeded', payment, { orderId: order.id });
    await d.send('standard-main', 'standard', paid.body, { eventId: paid.eventId });
    await d.processed(paid.eventId);
    await eventually(
      async () => (await d.getOrder(order.id)).payments[0]?.status === 'partially_refunded',
      10_000,
      'the reopened refund',
    ).catch(async (err) => {
      console.log(await t.dataSource.query(`SELECT event_type, status, outcome, attempts, last_error FROM webhook_inbox`));
      throw err;
    });
    const view = await d.getOrder(order.id);
    expect(view.payments[0]).toMatchObject({ status: 'partially_refunded', refundedAmount: '20.00' });
    expect(view.status).toBe('paid');
  });

  it('paid and fully refunded in one processing transaction: the fulfillment is written stopped, never to ship', async () => {
    await withoutWorkers(async (noWorkers, dn) => {
      const order = await dn.createOrder();
      const payment = uniqueId('pay');
      const ids: string[] = [];
      for (const [type, refunded] of [['payment.succeeded', undefined], ['payment.refunded', 4990]] as const) {
        const e = bodies.standard(type, payment, { orderId: order.id, refunded });
        await dn.send('standard-main', 'standard', e.body, { eventId: e.eventId });
        ids.push((await noWorkers.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [e.eventId]))[0].id);
      }
      const processing = noWorkers.get(DeliveryProcessingService);
      // Submitted in one event-loop turn: one batch, one transaction, the payment's events in order.
      const results = await Promise.all(ids.map((inboxId) => processing.submit({ inboxId, finalAttempt: false, parkUnmatched: false })));
      expect(results).toEqual([
        { status: 'processed', outcome: 'applied' },
        { status: 'processed', outcome: 'applied' },
      ]);
      // One transaction wrote both rows.
      expect(await noWorkers.dataSource.query(`SELECT DISTINCT xmin::text FROM webhook_inbox WHERE id = ANY($1::uuid[])`, [ids])).toHaveLength(1);
      expect((await dn.getOrder(order.id)).status).toBe('refunded');
      const fulfillments = await noWorkers.dataSource.query(`SELECT status, stop_reason FROM fulfillments WHERE order_id = $1`, [order.id]);
      expect(fulfillments).toEqual([{ status: 'requested', stop_reason: 'order refunded' }]);
    });
  });

  it('a full refund refunds the order; money for a canceled order is recorded and not fulfilled', async () => {
    const order = await d.createOrder();
    const payment = uniqueId('pay');
    for (const [type, refunded] of [['payment.succeeded', undefined], ['payment.refunded', 4990]] as const) {
      const e = bodies.standard(type, payment, { orderId: order.id, refunded });
      await d.send('standard-main', 'standard', e.body, { eventId: e.eventId });
      expect((await d.processed(e.eventId)).outcome).toBe('applied');
    }
    expect(await d.getOrder(order.id)).toMatchObject({ status: 'refunded' });

    const canceled = await d.createOrder();
    expect((await d.http().post(`/orders/${canceled.id}/cancel`).set({ Authorization: 'Bearer test-admin-token' })).status).toBe(200);
    const late = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: canceled.id });
    await d.send('standard-main', 'standard', late.body, { eventId: late.eventId });
    expect((await d.processed(late.eventId)).outcome).toBe('applied');
    const view = await d.getOrder(canceled.id);
    expect(view.status).toBe('canceled');
    expect(view.payments.map((p: { status: string }) => p.status)).toEqual(['succeeded']);
    expect(await fulfillmentsOf(canceled.id)).toBe(0);
  });
});
