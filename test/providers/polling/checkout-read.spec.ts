import { checkoutCommands } from '../../../src/providers/checkout.commands';
import { checkoutProvider } from '../../../src/providers/checkout.provider';
import { checkoutReader } from '../../../src/providers/checkout.reader';
import { PaymentReading, PollTarget, ProviderApiError, ProviderEndpoint } from '../../../src/providers/provider';
import { ProviderApiStub } from '../../support/provider-api-stub';
import { addCheckoutPayments, checkoutPayment, CheckoutStubPayment } from '../../support/provider-stubs/checkout';

/*
 * Polling a Checkout.com payment through the real checkout-sdk-node (`payments.get`), against a
 * local stub of "Get payment details": what each status reads as, and that the adapter's own
 * normalize maps the reading's event as it maps the webhook of the same fact.
 */
const SECRET_KEY = 'sk_sbox_m73dzbpy7cf3gfd46xr4yj5xo4e';

let stub: ProviderApiStub;
let payments: Map<string, CheckoutStubPayment>;
const endpoint = (extra: Partial<ProviderEndpoint> = {}): ProviderEndpoint => ({ id: 'cko', merchantAccountId: 'shop', apiKey: SECRET_KEY, apiBaseUrl: stub.baseUrl, settings: {}, ...extra });
const target = (paymentId: string): PollTarget => ({ providerPaymentId: paymentId, merchantAccountId: 'shop', amount: { minor: 4990n, decimal: '49.90', currency: 'EUR' }, captureIds: [] });
const read = (paymentId: string, timeoutMs = 5_000, over: Partial<ProviderEndpoint> = {}) => checkoutReader.read(target(paymentId), { endpoint: endpoint(over), timeoutMs });
const add = (payment: CheckoutStubPayment): string => {
  payments.set(payment.id, payment);
  return payment.id;
};
const normalized = (reading: PaymentReading) => {
  if (!reading.found || reading.event === null) throw new Error('no event to normalize');
  return checkoutProvider.normalize(reading.event.body, reading.event.eventType, endpoint());
};
const failure = async (promise: Promise<unknown>): Promise<ProviderApiError> => {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderApiError);
  return err as ProviderApiError;
};

beforeEach(async () => {
  stub = await new ProviderApiStub().start();
  payments = addCheckoutPayments(stub);
});
afterEach(() => stub.stop());

describe('checkout reads: each status, through normalize', () => {
  it('is the adapter readPayment, ready only with a secret key (as the commands)', () => {
    expect(checkoutProvider.readPayment).toBe(checkoutReader);
    expect(checkoutReader.ready(endpoint())).toBe(true);
    for (const apiKey of [undefined, '']) {
      expect(checkoutReader.ready(endpoint({ apiKey }))).toBe(false);
      expect(checkoutCommands.ready(endpoint({ apiKey }))).toBe(false);
    }
  });

  it('Captured: payment_captured with the captured amount, the reference and metadata.order_id; GET /payments/{id} with the key', async () => {
    const id = add(checkoutPayment('Captured', { metadata: { order_id: '0196f3b2-order' } }));
    const reading = await read(id);
    expect(reading).toEqual({
      found: true,
      status: 'Captured',
      refunded: '0',
      event: { eventType: 'payment_captured', body: { type: 'payment_captured', data: { id, amount: 4990, currency: 'EUR', reference: 'ORD-5023-4E89', metadata: { order_id: '0196f3b2-order' } } } },
    });
    expect(normalized(reading)).toEqual({
      kind: 'succeeded',
      resourceId: id,
      orderId: '0196f3b2-order',
      orderReference: 'ORD-5023-4E89',
      amount: { form: 'minor', value: 4990 },
      currency: 'EUR',
      refundedAmount: null,
      refund: null,
      declaredAccount: null,
      occurredAt: null,
    });
    expect(stub.requests.map((r) => [r.method, r.path, r.status])).toEqual([['GET', `/payments/${id}`, 200]]);
    expect(stub.requests[0].headers.authorization).toBe(`Bearer ${SECRET_KEY}`);
  });

  it.each([
    ['Pending', 'payment_pending', 'processing', 4990],
    ['Authorized', 'payment_approved', 'authorized', 4990],
    ['Paid', 'payment_captured', 'succeeded', 4990],
    ['Voided', 'payment_voided', 'canceled', 4990],
    ['Declined', 'payment_declined', 'failed', 4990],
    ['Canceled', 'payment_canceled', 'canceled', 4990],
    ['Expired', 'payment_expired', 'expired', 4990],
  ])('%s: %s, normalized %s with the payment amount', async (status, eventType, kind, amount) => {
    const id = add(checkoutPayment(status, { reference: null }));
    const reading = await read(id);
    expect(reading).toMatchObject({ found: true, status, refunded: '0', event: { eventType } });
    expect(normalized(reading)).toMatchObject({ kind, resourceId: id, orderId: null, orderReference: null, amount: { form: 'minor', value: amount }, currency: 'EUR' });
  });

  it('Partially Captured: payment_captured of what was captured (total_captured), as its webhook states it', async () => {
    const id = add(checkoutPayment('Partially Captured', { totalCaptured: 3000 }));
    const reading = await read(id);
    expect(reading).toMatchObject({ found: true, status: 'Partially Captured', refunded: '0', event: { eventType: 'payment_captured' } });
    expect(normalized(reading)).toMatchObject({ kind: 'succeeded', resourceId: id, amount: { form: 'minor', value: 3000 } });
  });

  it('Refunded, Partially Refunded: the capture (succeeded) for normalize; refunded = balances.total_refunded', async () => {
    const whole = add(checkoutPayment('Refunded'));
    const wholeReading = await read(whole);
    expect(wholeReading).toMatchObject({ found: true, status: 'Refunded', refunded: '4990', event: { eventType: 'payment_captured' } });
    expect(normalized(wholeReading)).toMatchObject({ kind: 'succeeded', resourceId: whole, amount: { form: 'minor', value: 4990 }, refund: null });

    const part = add(checkoutPayment('Partially Refunded', { totalRefunded: 1200 }));
    const partReading = await read(part);
    expect(partReading).toMatchObject({ found: true, status: 'Partially Refunded', refunded: '1200', event: { eventType: 'payment_captured' } });
    expect(normalized(partReading)).toMatchObject({ kind: 'succeeded', resourceId: part, amount: { form: 'minor', value: 4990 } });
  });

  it('Card Verified, Retry Scheduled, a status unknown: no event', async () => {
    for (const status of ['Card Verified', 'Retry Scheduled', 'Something New']) {
      const id = add(checkoutPayment(status, { amount: 0 }));
      expect(await read(id)).toEqual({ found: true, status, refunded: '0', event: null });
    }
  });
});

describe('checkout reads: failures', () => {
  const id = 'pay_mbabizu24mvu3mela5njyhpit4';

  it('a payment Checkout.com does not know: found false (404)', async () => {
    expect(await read(id)).toEqual({ found: false });
    expect(stub.requests.map((r) => r.status)).toEqual([404]);
  });

  it('429 with Retry-After: a ProviderApiError with retryAfterMs (read from the answer: the SDK drops its headers)', async () => {
    add(checkoutPayment('Authorized', { id }));
    stub.failNext({ status: 429, retryAfter: '7', body: { request_id: 'req_1', error_type: 'too_many_requests' } }, (r) => r.method === 'GET');
    const err = await failure(read(id));
    expect(err.retryAfterMs).toBe(7_000);
    expect(err.message).toBe(`Checkout.com payment ${id} could not be read: 429: too_many_requests`);
    expect(stub.requests.map((r) => r.status)).toEqual([429]);
    // The next read is not slowed or confused by the watch of the first.
    expect(await read(id)).toMatchObject({ found: true, status: 'Authorized' });
  });

  it('500, a dropped connection, no answer in time: ProviderApiError without retryAfterMs', async () => {
    add(checkoutPayment('Authorized', { id }));
    stub.failNext({ status: 500, body: { request_id: 'req_2', error_type: 'internal_error' } }, (r) => r.method === 'GET');
    const five = await failure(read(id));
    expect(five.message).toBe(`Checkout.com payment ${id} could not be read: 500: internal_error`);
    expect(five.retryAfterMs).toBeNull();

    stub.failNext({ drop: true }, (r) => r.method === 'GET');
    const dropped = await failure(read(id));
    expect(dropped.message).toBe(`Checkout.com payment ${id} could not be read: request to ${stub.baseUrl}/payments/${id} failed, reason: socket hang up`);
    expect(dropped.retryAfterMs).toBeNull();

    const held = stub.holdNext('before', (r) => r.method === 'GET');
    const slow = await failure(read(id, 300));
    expect(slow.message).toBe(`Checkout.com payment ${id} could not be read: Checkout.com did not answer in time`);
    expect(slow.retryAfterMs).toBeNull();
    expect((await held.arrived).path).toBe(`/payments/${id}`);
    held.release();
  });

  it('a key refused (401), an answer that echoes the key: no message holds the key', async () => {
    add(checkoutPayment('Authorized', { id }));
    stub.failNext({ status: 401 }, (r) => r.method === 'GET');
    const refused = await failure(read(id));
    expect(refused.message).toMatch(new RegExp(`^Checkout.com payment ${id} could not be read: 401`));
    stub.failNext({ status: 422, body: { request_id: 'req_3', error_type: 'request_invalid', error_codes: [`key_invalid ${SECRET_KEY}`] } }, (r) => r.method === 'GET');
    const echoed = await failure(read(id));
    expect(echoed.message).toBe(`Checkout.com payment ${id} could not be read: 422: request_invalid: key_invalid [redacted]`);
    for (const err of [refused, echoed]) expect(err.message).not.toContain(SECRET_KEY);
  });

  it('an endpoint without a secret key is refused before any call', async () => {
    const err = await failure(read(id, 5_000, { apiKey: undefined }));
    expect(err.message).toBe('endpoint "cko" has no Checkout.com secret key (apiKey)');
    expect(stub.requests).toHaveLength(0);
  });
});
