import { DeliveryProcessingService } from '../../src/webhooks/delivery-processing.service';
import { signedHeaders } from '../../src/testing/sign';
import { AUTH, createTestApp, secretOf, TestApp, truncateAll } from '../support/app';
import { countRows, createOrder, http, ISO_INSTANT, MISSING_ID, registerPayment, UUID } from './api-helpers';

describe('POST /orders/{id}/payments and GET /payments/{id} (CONTRACT §3)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  const register = (orderId: string, body: object) => http(t).post(`/orders/${orderId}/payments`).set(AUTH).send(body);

  it('201 a pending payment expecting the order amount and currency (stripe: account from its one endpoint)', async () => {
    const order = await createOrder(t);
    const res = await register(order.id, { provider: 'stripe', providerPaymentId: 'pi_3QxAbc' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      orderId: order.id,
      provider: 'stripe',
      providerPaymentId: 'pi_3QxAbc',
      merchantAccountId: 'acct_1',
      status: 'pending',
      amount: '49.90',
      currency: 'EUR',
      refundedAmount: '0.00',
      createdAt: expect.stringMatching(ISO_INSTANT),
      updatedAt: expect.stringMatching(ISO_INSTANT),
    });
    const rows = await t.dataSource.query(
      `SELECT id, order_id AS "orderId", merchant_account_id AS account, amount_minor::text AS minor, refunded_minor::text AS refunded
         FROM payments`,
    );
    expect(rows).toEqual([{ id: res.body.id, orderId: order.id, account: 'acct_1', minor: '4990', refunded: '0' }]);
  });

  it.each([
    ['JPY', '5000', '5000', '0'],
    ['BHD', '1.250', '1.250', '0.000'],
  ])('%s: amount "%s" and refundedAmount in the exponent', async (currency, orderAmount, amount, refunded) => {
    const order = await createOrder(t, { currency, amount: orderAmount });
    const res = await register(order.id, { provider: 'standard', providerPaymentId: `pay_${currency}` });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ amount, currency, refundedAmount: refunded, merchantAccountId: 'acc_1' });
  });

  it('the same registration again: 200 with the same payment, no second row', async () => {
    const order = await createOrder(t);
    const first = await register(order.id, { provider: 'stripe', providerPaymentId: 'pi_again' });
    expect(first.status).toBe(201);
    const again = await register(order.id, { provider: 'stripe', providerPaymentId: 'pi_again' });
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    const explicit = await register(order.id, { provider: 'stripe', providerPaymentId: 'pi_again', merchantAccountId: 'acct_1' });
    expect(explicit.status).toBe(200);
    expect(explicit.body).toEqual(first.body);
    expect(await countRows(t, 'payments')).toBe(1);
  });

  it('the same provider payment for another order: 409 payment_already_registered', async () => {
    const a = await createOrder(t);
    const b = await createOrder(t);
    await registerPayment(t, a.id, { provider: 'stripe', providerPaymentId: 'pi_shared' });
    const res = await register(b.id, { provider: 'stripe', providerPaymentId: 'pi_shared' });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: 'payment_already_registered' });
    expect(await countRows(t, 'payments')).toBe(1);
    expect(await countRows(t, 'payments', 'order_id = $1', [b.id])).toBe(0);
  });

  it('two orders registering one provider payment at once: one 201, one 409', async () => {
    const a = await createOrder(t);
    const b = await createOrder(t);
    const answers = await Promise.all([
      register(a.id, { provider: 'stripe', providerPaymentId: 'pi_race' }),
      register(b.id, { provider: 'stripe', providerPaymentId: 'pi_race' }),
    ]);
    expect(answers.map((r) => r.status).sort()).toEqual([201, 409]);
    expect(answers.find((r) => r.status === 409)!.body).toEqual({ error: 'payment_already_registered' });
    expect(await countRows(t, 'payments')).toBe(1);
  });

  it('one provider payment id under two providers is two payments', async () => {
    const order = await createOrder(t);
    await registerPayment(t, order.id, { provider: 'stripe', providerPaymentId: 'p_same' });
    const res = await register(order.id, { provider: 'standard', providerPaymentId: 'p_same' });
    expect(res.status).toBe(201);
    expect(await countRows(t, 'payments')).toBe(2);
  });

  it.each([
    ['stripe', 'acct_1'],
    ['standard', 'acc_1'],
    ['paymos', 'acc_1'], // two endpoints, one merchant account
    ['factuarea', 'fa-merchant-1'], // two endpoints, one merchant account
  ])('%s with merchantAccountId omitted: the account its endpoints name (%s)', async (provider, account) => {
    const order = await createOrder(t);
    const res = await register(order.id, { provider, providerPaymentId: `${provider}_1` });
    expect(res.status).toBe(201);
    expect(res.body.merchantAccountId).toBe(account);
  });

  it.each([
    [
      'a merchantAccountId no endpoint has',
      { provider: 'stripe', providerPaymentId: 'pi_1', merchantAccountId: 'acct_9' },
      [{ field: 'merchantAccountId', message: 'no stripe endpoint has merchant account "acct_9"' }],
    ],
    [
      "another provider's merchant account",
      { provider: 'stripe', providerPaymentId: 'pi_1', merchantAccountId: 'acc_1' },
      [{ field: 'merchantAccountId', message: 'no stripe endpoint has merchant account "acc_1"' }],
    ],
    [
      'an unknown provider',
      { provider: 'worldpay', providerPaymentId: 'PAY-1' },
      [{ field: 'provider', message: 'provider must be one of paymos, factuarea, stripe, standard, adyen, mollie, paypal, checkout, square, paddle' }],
    ],
    [
      // One message per field: the most basic rule it breaks (the type).
      'a missing providerPaymentId',
      { provider: 'stripe' },
      [{ field: 'providerPaymentId', message: 'providerPaymentId must be a string' }],
    ],
    [
      'an empty providerPaymentId',
      { provider: 'stripe', providerPaymentId: '' },
      [{ field: 'providerPaymentId', message: 'providerPaymentId should not be empty' }],
    ],
    [
      'an empty body: one message for each field',
      {},
      [
        { field: 'provider', message: 'provider must be one of paymos, factuarea, stripe, standard, adyen, mollie, paypal, checkout, square, paddle' },
        { field: 'providerPaymentId', message: 'providerPaymentId must be a string' },
      ],
    ],
    [
      'an unknown field',
      { provider: 'stripe', providerPaymentId: 'pi_1', amount: '49.90' },
      [{ field: 'amount', message: 'property amount should not exist' }],
    ],
  ])('%s: 400 validation_failed, nothing written', async (_name, body, details) => {
    const order = await createOrder(t);
    const res = await register(order.id, body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'validation_failed', details });
    expect(await countRows(t, 'payments')).toBe(0);
  });

  it('an unknown order: 404 not_found', async () => {
    const res = await register(MISSING_ID, { provider: 'stripe', providerPaymentId: 'pi_1' });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'not_found' });
    expect(await countRows(t, 'payments')).toBe(0);
  });

  it('an order id that is not a UUID: 404 not_found', async () => {
    const res = await register('order-1', { provider: 'stripe', providerPaymentId: 'pi_1' });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'not_found' });
  });

  it('GET /payments/{id}: 200 the payment; GET /orders/{id} lists it', async () => {
    const order = await createOrder(t);
    const payment = await registerPayment(t, order.id, { provider: 'stripe', providerPaymentId: 'pi_get' });
    const res = await http(t).get(`/payments/${payment.id}`).set(AUTH);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(payment);
    const orderRead = await http(t).get(`/orders/${order.id}`).set(AUTH);
    expect(orderRead.body.payments).toEqual([payment]);
  });

  it('GET /payments/{id}: unknown or not a uuid: 404', async () => {
    const missing = await http(t).get(`/payments/${MISSING_ID}`).set(AUTH);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: 'not_found' });
    const bad = await http(t).get('/payments/pi_1').set(AUTH);
    expect(bad.status).toBe(404);
    expect(bad.body).toEqual({ error: 'not_found' });
  });
});

describe('a webhook for an unregistered payment carrying the order id (CONTRACT §3)', () => {
  let t: TestApp;
  let processing: DeliveryProcessingService;
  beforeAll(async () => {
    t = await createTestApp();
    processing = t.get(DeliveryProcessingService);
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  /** Sends a signed Standard Webhooks event to standard-main and returns its inbox row id. */
  async function deliver(eventId: string, type: string, data: Record<string, unknown>): Promise<string> {
    const body = JSON.stringify({ type, timestamp: new Date().toISOString(), data });
    const res = await http(t)
      .post('/webhooks/standard-main')
      .set(signedHeaders('standard', secretOf('standard-main'), body, { eventId }))
      .send(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId });
    const rows = await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [eventId]);
    expect(rows).toHaveLength(1);
    return rows[0].id;
  }

  const succeeded = (orderId: string, paymentId: string) => ({
    payment_id: paymentId,
    order_id: orderId,
    amount: 4990,
    currency: 'EUR',
    account_id: 'acc_1',
  });

  it('creates the payment: the order is paid, one succeeded payment, fulfillment requested', async () => {
    const order = await createOrder(t);
    const inboxId = await deliver('msg_new_pay_1', 'payment.succeeded', succeeded(order.id, 'pay_new_1'));
    expect(await processing.process(inboxId, false)).toEqual({ status: 'processed', outcome: 'applied' });

    const res = await http(t).get(`/orders/${order.id}`).set(AUTH);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ...order,
      status: 'paid',
      payments: [
        {
          id: expect.stringMatching(UUID),
          orderId: order.id,
          provider: 'standard',
          providerPaymentId: 'pay_new_1',
          merchantAccountId: 'acc_1',
          status: 'succeeded',
          amount: '49.90',
          currency: 'EUR',
          refundedAmount: '0.00',
          createdAt: expect.stringMatching(ISO_INSTANT),
          updatedAt: expect.stringMatching(ISO_INSTANT),
        },
      ],
      fulfillment: { id: expect.stringMatching(UUID), status: 'requested', carrier: 'default', shipmentId: null },
      updatedAt: expect.stringMatching(ISO_INSTANT),
    });
    expect(await countRows(t, 'fulfillments')).toBe(1);
    expect(await countRows(t, 'outbox_message')).toBe(1);

    const payment = await http(t).get(`/payments/${res.body.payments[0].id}`).set(AUTH);
    expect(payment.status).toBe(200);
    expect(payment.body).toEqual(res.body.payments[0]);

    const listed = await http(t).get('/payments?provider=standard&providerPaymentId=pay_new_1').set(AUTH);
    expect(listed.body).toEqual({ items: [res.body.payments[0]], nextCursor: null });
  });

  it('registering the same provider payment afterwards answers 200 with the succeeded payment', async () => {
    const order = await createOrder(t);
    const inboxId = await deliver('msg_new_pay_2', 'payment.succeeded', succeeded(order.id, 'pay_new_2'));
    await processing.process(inboxId, false);
    const res = await http(t)
      .post(`/orders/${order.id}/payments`)
      .set(AUTH)
      .send({ provider: 'standard', providerPaymentId: 'pay_new_2' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ orderId: order.id, providerPaymentId: 'pay_new_2', status: 'succeeded' });
    expect(await countRows(t, 'payments')).toBe(1);
  });

  it('mark-paid first, then the paid webhook: the order is fulfilled once', async () => {
    const order = await createOrder(t);
    const marked = await http(t).post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'bank transfer' });
    expect(marked.status).toBe(200);
    const inboxId = await deliver('msg_new_pay_3', 'payment.succeeded', succeeded(order.id, 'pay_new_3'));
    expect(await processing.process(inboxId, false)).toEqual({ status: 'processed', outcome: 'applied' });

    const res = await http(t).get(`/orders/${order.id}`).set(AUTH);
    expect(res.body.status).toBe('paid');
    expect(res.body.fulfillment).toEqual(marked.body.fulfillment);
    expect(res.body.payments.map((p: { status: string }) => p.status)).toEqual(['succeeded']);
    expect(await countRows(t, 'fulfillments')).toBe(1);
    expect(await countRows(t, 'outbox_message')).toBe(1);
  });

  it('the webhook first, then mark-paid: 200 unchanged, still one fulfillment', async () => {
    const order = await createOrder(t);
    const inboxId = await deliver('msg_new_pay_4', 'payment.succeeded', succeeded(order.id, 'pay_new_4'));
    await processing.process(inboxId, false);
    const before = await http(t).get(`/orders/${order.id}`).set(AUTH);
    const marked = await http(t).post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'double check' });
    expect(marked.status).toBe(200);
    expect(marked.body).toEqual(before.body);
    expect(await countRows(t, 'fulfillments')).toBe(1);
    expect(await countRows(t, 'outbox_message')).toBe(1);
  });

  it('an order id that matches no order: no payment is created', async () => {
    const inboxId = await deliver('msg_new_pay_5', 'payment.succeeded', succeeded(MISSING_ID, 'pay_new_5'));
    expect(await processing.process(inboxId, true)).toEqual({ status: 'unmatched', outcome: 'payment_not_found' });
    expect(await countRows(t, 'payments')).toBe(0);
  });
});
