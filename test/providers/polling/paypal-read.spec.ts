import { paypalCommands } from '../../../src/providers/paypal.commands';
import { paypalProvider } from '../../../src/providers/paypal.provider';
import { createPaypalClients } from '../../../src/providers/paypal-client';
import { createPaypalReader, paypalReader, sumDecimals } from '../../../src/providers/paypal.reader';
import { PaymentReading, PollTarget, ProviderApiError, ProviderEndpoint } from '../../../src/providers/provider';
import { ProviderApiStub } from '../../support/provider-api-stub';
import { addPaypalApi, PaypalApi } from '../../support/provider-stubs/paypal';

/*
 * Polling a PayPal payment (the PayPal order) through the real @paypal/paypal-server-sdk, against a
 * local stub of "Show order details" over HTTPS: what each state of the order reads as, and that the
 * adapter's own normalize maps the reading's event as it maps the webhook of the same fact.
 */
describe('paypal reads (OrdersController.getOrder)', () => {
  let stub: ProviderApiStub;
  let paypal: PaypalApi;
  let endpoint: ProviderEndpoint;
  let seq = 0;

  beforeEach(async () => {
    stub = await new ProviderApiStub({ tls: true }).start();
    paypal = addPaypalApi(stub);
    // A fresh endpoint id per test: the SDK client (and its token) is kept per endpoint.
    endpoint = { id: `paypal-poll-${++seq}`, merchantAccountId: '7KNGBPH2U58GQ', apiBaseUrl: stub.baseUrl, settings: { webhookId: 'WH1', clientId: paypal.clientId, clientSecret: paypal.clientSecret } };
  });
  afterEach(() => stub.stop());

  const target = (orderId: string, captureIds: string[] = []): PollTarget => ({
    providerPaymentId: orderId,
    merchantAccountId: '7KNGBPH2U58GQ',
    amount: { minor: 4990n, decimal: '49.90', currency: 'EUR' },
    captureIds,
  });
  const read = (orderId: string, timeoutMs = 5_000) => paypalReader.read(target(orderId), { endpoint, timeoutMs });
  const normalized = (reading: PaymentReading) => {
    if (!reading.found || reading.event === null) throw new Error('no event to normalize');
    return paypalProvider.normalize(reading.event.body, reading.event.eventType, endpoint);
  };
  const reads = () => stub.requests.filter((r) => r.method === 'GET');
  const failure = async (promise: Promise<unknown>): Promise<ProviderApiError> => {
    const err = await promise.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ProviderApiError);
    return err as ProviderApiError;
  };

  it('is the adapter readPayment, ready only with both OAuth client credentials (as the commands)', () => {
    expect(paypalProvider.readPayment).toBe(paypalReader);
    expect(paypalReader.ready(endpoint)).toBe(true);
    for (const settings of [{ webhookId: 'WH1' }, { webhookId: 'WH1', clientId: paypal.clientId }, { webhookId: 'WH1', clientSecret: paypal.clientSecret }, { webhookId: 'WH1', clientId: '', clientSecret: paypal.clientSecret }]) {
      const other = { ...endpoint, settings };
      expect(paypalReader.ready(other)).toBe(false);
      expect(paypalReader.ready(other)).toBe(paypalCommands.ready(other));
    }
  });

  it('a completed capture: PAYMENT.CAPTURE.COMPLETED of the order, succeeded with the capture, its amount and the custom_id', async () => {
    const { orderId, captureId } = paypal.addOrder({ customId: 'ORD-1001' });
    const reading = await read(orderId);
    expect(reading).toMatchObject({ found: true, status: 'COMPLETED', refunded: '0', event: { eventType: 'PAYMENT.CAPTURE.COMPLETED' } });
    expect(reading).toHaveProperty('event.body.resource.id', captureId);
    expect(reading).toHaveProperty('event.body.resource.supplementary_data.related_ids.order_id', orderId);
    expect(normalized(reading)).toEqual({
      kind: 'succeeded',
      resourceId: orderId,
      orderId: null,
      orderReference: 'ORD-1001',
      amount: { form: 'decimal', value: '49.90' },
      currency: 'EUR',
      refundedAmount: null,
      captureId,
      declaredAccount: null,
      occurredAt: new Date('2026-12-01T10:00:05Z'),
    });
    // One token, one read of the order, as the stub saw them.
    expect(stub.requests.map((r) => [r.method, r.path, r.status])).toEqual([
      ['POST', '/v1/oauth2/token', 200],
      ['GET', `/v2/checkout/orders/${orderId}`, 200],
    ]);
    expect(reads()[0].headers.authorization).toBe(`Bearer ${paypal.tokens[0]}`);
  });

  it('a capture refunded in part, then whole: status PARTIALLY_REFUNDED/REFUNDED, refunded as PayPal spells it; still the capture (succeeded) for normalize', async () => {
    const { orderId, captureId } = paypal.addOrder({ customId: 'ORD-1002' });
    await paypalCommands.send({ type: 'refund', refundId: 'rf-1', amount: { minor: 1000n, decimal: '10.00', currency: 'EUR' }, reason: null }, { ...target(orderId, [captureId!]), amount: target(orderId).amount }, { endpoint, idempotencyKey: 'rf-1', timeoutMs: 5_000 });
    const partly = await read(orderId);
    expect(partly).toMatchObject({ found: true, status: 'PARTIALLY_REFUNDED', refunded: '10.00', event: { eventType: 'PAYMENT.CAPTURE.COMPLETED' } });
    expect(normalized(partly)).toMatchObject({ kind: 'succeeded', resourceId: orderId, captureId, amount: { form: 'decimal', value: '49.90' }, currency: 'EUR', orderReference: 'ORD-1002' });

    await paypalCommands.send({ type: 'refund', refundId: 'rf-2', amount: { minor: 3990n, decimal: '39.90', currency: 'EUR' }, reason: null }, target(orderId, [captureId!]), { endpoint, idempotencyKey: 'rf-2', timeoutMs: 5_000 });
    const whole = await read(orderId);
    expect(whole).toMatchObject({ found: true, status: 'REFUNDED', refunded: '49.90', event: { eventType: 'PAYMENT.CAPTURE.COMPLETED' } });
    expect(normalized(whole)).toMatchObject({ kind: 'succeeded', resourceId: orderId, captureId });
  });

  it('a pending capture is processing; a declined or failed one is failed', async () => {
    const { orderId, captureId } = paypal.addOrder();
    paypal.order(orderId).captures[0].status = 'PENDING';
    const pending = await read(orderId);
    expect(pending).toMatchObject({ found: true, status: 'PENDING', refunded: '0', event: { eventType: 'PAYMENT.CAPTURE.PENDING' } });
    expect(normalized(pending)).toMatchObject({ kind: 'processing', resourceId: orderId, captureId, amount: { form: 'decimal', value: '49.90' } });

    paypal.order(orderId).captures[0].status = 'DECLINED';
    const declined = await read(orderId);
    expect(declined).toMatchObject({ found: true, status: 'DECLINED', refunded: '0', event: { eventType: 'PAYMENT.CAPTURE.DECLINED' } });
    expect(normalized(declined)).toMatchObject({ kind: 'failed', resourceId: orderId, captureId });

    paypal.order(orderId).captures[0].status = 'FAILED';
    const failed = await read(orderId);
    expect(failed).toMatchObject({ found: true, status: 'FAILED', event: { eventType: 'PAYMENT.CAPTURE.DECLINED' } });
    expect(normalized(failed)).toMatchObject({ kind: 'failed', resourceId: orderId });
  });

  it('an authorization (intent AUTHORIZE): CREATED is authorized, VOIDED (the order VOIDED) canceled, others nothing', async () => {
    const { orderId, authorizationId } = paypal.addOrder({ state: 'authorized', customId: 'ORD-1003' });
    const created = await read(orderId);
    expect(created).toMatchObject({ found: true, status: 'CREATED', refunded: '0', event: { eventType: 'PAYMENT.AUTHORIZATION.CREATED' } });
    expect(created).toHaveProperty('event.body.resource.id', authorizationId);
    expect(normalized(created)).toEqual({
      kind: 'authorized',
      resourceId: orderId,
      orderId: null,
      orderReference: 'ORD-1003',
      amount: { form: 'decimal', value: '49.90' },
      currency: 'EUR',
      refundedAmount: null,
      captureId: null,
      declaredAccount: null,
      occurredAt: new Date('2026-12-01T10:00:05Z'),
    });

    await paypalCommands.send({ type: 'void' }, target(orderId), { endpoint, idempotencyKey: `${orderId}:void`, timeoutMs: 5_000 });
    paypal.order(orderId).status = 'VOIDED';
    const voided = await read(orderId);
    expect(voided).toMatchObject({ found: true, status: 'VOIDED', refunded: '0', event: { eventType: 'PAYMENT.AUTHORIZATION.VOIDED' } });
    expect(normalized(voided)).toMatchObject({ kind: 'canceled', resourceId: orderId, orderReference: 'ORD-1003', amount: { form: 'decimal', value: '49.90' } });

    for (const status of ['DENIED', 'EXPIRED', 'PENDING']) {
      paypal.order(orderId).authorizations[0].status = status;
      expect(await read(orderId)).toEqual({ found: true, status, refunded: '0', event: null });
    }
  });

  it('an authorization captured: the capture decides (succeeded), not the authorization', async () => {
    const { orderId } = paypal.addOrder({ state: 'authorized' });
    await paypalCommands.send({ type: 'capture', amount: { minor: 4990n, decimal: '49.90', currency: 'EUR' } }, target(orderId), { endpoint, idempotencyKey: `${orderId}:capture`, timeoutMs: 5_000 });
    const captureId = paypal.order(orderId).captures[0].id;
    const reading = await read(orderId);
    expect(reading).toMatchObject({ found: true, status: 'COMPLETED', refunded: '0', event: { eventType: 'PAYMENT.CAPTURE.COMPLETED' } });
    expect(normalized(reading)).toMatchObject({ kind: 'succeeded', resourceId: orderId, captureId, amount: { form: 'decimal', value: '49.90' } });
  });

  it('an order approved and not captured: CHECKOUT.ORDER.APPROVED, authorized with the purchase unit amount and custom_id', async () => {
    const { orderId } = paypal.addOrder({ state: 'approved', customId: 'ORD-1004', value: '12.34', currency: 'USD' });
    const reading = await read(orderId);
    expect(reading).toMatchObject({ found: true, status: 'APPROVED', refunded: '0', event: { eventType: 'CHECKOUT.ORDER.APPROVED' } });
    expect(reading).toHaveProperty('event.body.resource.id', orderId);
    expect(normalized(reading)).toEqual({
      kind: 'authorized',
      resourceId: orderId,
      orderId: null,
      orderReference: 'ORD-1004',
      amount: { form: 'decimal', value: '12.34' },
      currency: 'USD',
      refundedAmount: null,
      captureId: null,
      declaredAccount: null,
      occurredAt: new Date('2026-12-01T10:00:05Z'),
    });
  });

  it('an order the buyer has not approved (CREATED, PAYER_ACTION_REQUIRED) reads with no event', async () => {
    const { orderId } = paypal.addOrder({ state: 'created' });
    expect(await read(orderId)).toEqual({ found: true, status: 'CREATED', refunded: '0', event: null });
    paypal.order(orderId).status = 'PAYER_ACTION_REQUIRED';
    expect(await read(orderId)).toEqual({ found: true, status: 'PAYER_ACTION_REQUIRED', refunded: '0', event: null });
  });

  it('an order PayPal does not know: found false (404 RESOURCE_NOT_FOUND)', async () => {
    expect(await read('5O190127TN364715T')).toEqual({ found: false });
    expect(reads().map((r) => r.status)).toEqual([404]);
  });

  it('429 with Retry-After: a ProviderApiError with retryAfterMs; the SDK does not retry', async () => {
    const { orderId } = paypal.addOrder();
    stub.failNext({ status: 429, retryAfter: '7', body: { name: 'RATE_LIMIT_REACHED', message: 'Too many requests. Blocked due to rate limiting.' } }, (r) => r.method === 'GET');
    const err = await failure(read(orderId));
    expect(err.retryAfterMs).toBe(7_000);
    expect(err.message).toBe(`PayPal order ${orderId} could not be read: 429: RATE_LIMIT_REACHED: Too many requests. Blocked due to rate limiting.`);
    expect(reads().map((r) => r.status)).toEqual([429]);
  });

  it('500, a dropped connection, no answer in time: ProviderApiError without retryAfterMs, one request each', async () => {
    const { orderId } = paypal.addOrder();
    stub.failNext({ status: 500, body: { name: 'INTERNAL_SERVER_ERROR', message: 'An internal server error occurred.' } }, (r) => r.method === 'GET');
    const five = await failure(read(orderId));
    expect(five.message).toBe(`PayPal order ${orderId} could not be read: 500: INTERNAL_SERVER_ERROR: An internal server error occurred.`);
    expect(five.retryAfterMs).toBeNull();

    stub.failNext({ drop: true }, (r) => r.method === 'GET');
    const dropped = await failure(read(orderId));
    expect(dropped.message).toBe(`PayPal order ${orderId} could not be read: socket hang up`);
    expect(dropped.retryAfterMs).toBeNull();

    const held = stub.holdNext('before', (r) => r.method === 'GET');
    const slow = await failure(read(orderId, 300));
    expect(slow.message).toBe(`PayPal order ${orderId} could not be read: timeout of 300ms exceeded`);
    expect(slow.retryAfterMs).toBeNull();
    expect((await held.arrived).path).toBe(`/v2/checkout/orders/${orderId}`);
    held.release();
    expect(reads()).toHaveLength(2);
  });

  it('credentials PayPal refuses (401 invalid_client): a ProviderApiError; no message ever holds a credential', async () => {
    const { orderId } = paypal.addOrder();
    const wrong = { ...endpoint, settings: { ...endpoint.settings, clientSecret: 'EKwrongSecretZz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1' } };
    const refused = await failure(paypalReader.read(target(orderId), { endpoint: wrong, timeoutMs: 5_000 }));
    expect(refused.message).toMatch(/401/);
    expect(refused.message).toContain('invalid_client');
    expect(refused.message).not.toContain('EKwrongSecret');

    // An answer that echoes the credentials (as a misbehaving proxy might) is shown without them.
    stub.failNext({ status: 503, body: { name: 'SERVICE_UNAVAILABLE', message: `down for ${paypal.clientId}:${paypal.clientSecret}` } }, (r) => r.method === 'GET');
    const echoed = await failure(read(orderId));
    expect(echoed.message).toBe(`PayPal order ${orderId} could not be read: 503: SERVICE_UNAVAILABLE: down for [redacted]:[redacted]`);
    for (const err of [refused, echoed]) {
      expect(err.message).not.toContain(paypal.clientSecret);
      expect(err.message).not.toContain(paypal.clientId);
      expect(err.message).not.toContain(Buffer.from(`${paypal.clientId}:${paypal.clientSecret}`).toString('base64'));
    }
  });

  it('an endpoint without credentials is refused before any call', async () => {
    const err = await failure(paypalReader.read(target('5O190127TN364715T'), { endpoint: { ...endpoint, settings: { webhookId: 'WH1' } }, timeoutMs: 5_000 }));
    expect(err.message).toBe(`endpoint "${endpoint.id}" has no PayPal clientId and clientSecret`);
    expect(stub.requests).toHaveLength(0);
  });

  it('without the SDK installed: a ProviderApiError naming the package, no call', async () => {
    const missing = createPaypalReader(createPaypalClients(() => null));
    expect(missing.ready(endpoint)).toBe(true);
    const err = await failure(missing.read(target('5O190127TN364715T'), { endpoint, timeoutMs: 5_000 }));
    expect(err.message).toBe('the @paypal/paypal-server-sdk package is not installed: npm install @paypal/paypal-server-sdk');
    expect(stub.requests).toHaveLength(0);
  });

  it('sums refunds as PayPal spells amounts', () => {
    expect(sumDecimals([])).toBe('0');
    expect(sumDecimals(['10.00', '5.50'])).toBe('15.50');
    expect(sumDecimals(['0.10', '0.20'])).toBe('0.30');
    expect(sumDecimals(['100', '1'])).toBe('101');
    expect(sumDecimals(['1.5', '0.25'])).toBe('1.75');
    expect(sumDecimals(['x', '2.00'])).toBe('2.00');
  });
});
