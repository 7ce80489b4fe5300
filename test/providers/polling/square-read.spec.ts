import { ConfigurationError, validateEndpoints } from '../../../src/config/validate';
import { ProviderApiError, RATE_LIMITED, type PaymentReading, type PollTarget, type ProviderEndpoint, type ReadContext } from '../../../src/providers/provider';
import { squareCommands } from '../../../src/providers/square.commands';
import { squareProvider } from '../../../src/providers/square.provider';
import { ProviderApiStub } from '../../support/provider-api-stub';
import { addSquareRoutes, squarePaymentId, type SquareStub, type SquareStubPayment } from '../../support/provider-stubs/square';

/** Polling's read of a Square payment (GetPayment) through the real `square` SDK, against a local stub of its API. */
const TOKEN = 'EAAAl2Qf7yG0sFy4B3Zi1kgI2ZLQ4pmnOMA1DHxqJtTPZMN5H9l';
const MERCHANT = 'MLSQSTUB01';

let stub: ProviderApiStub;
let square: SquareStub;
let paymentId: string;
const reader = squareProvider.readPayment!;
const endpoint = (extra: Partial<ProviderEndpoint> = {}): ProviderEndpoint => ({
  id: 'sq',
  merchantAccountId: MERCHANT,
  apiKey: TOKEN,
  apiBaseUrl: stub.baseUrl,
  settings: { notificationUrl: 'https://shop.example/webhooks/sq' },
  ...extra,
});
const target = (): PollTarget => ({ providerPaymentId: paymentId, merchantAccountId: MERCHANT, amount: { minor: 4990n, decimal: '49.90', currency: 'EUR' }, captureIds: [] });
const context = (extra: Partial<ReadContext> = {}): ReadContext => ({ endpoint: endpoint(), timeoutMs: 5_000, ...extra });
const read = (extra: Partial<ReadContext> = {}) => reader.read(target(), context(extra));
/** What processing makes of a reading: the adapter's own normalize of the body as the inbox stores it (JSON). */
const normalized = (reading: PaymentReading) => {
  if (!reading.found || reading.event === null) throw new Error('no event');
  const stored = JSON.parse(JSON.stringify(reading.event.body)) as Record<string, unknown>;
  return squareProvider.normalize(stored, reading.event.eventType, endpoint());
};
/** The error a read throws, checked to be a ProviderApiError whose message never holds the token. */
async function failure(extra: Partial<ReadContext> = {}): Promise<ProviderApiError> {
  const err = await read(extra).then(
    () => {
      throw new Error('the read answered');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderApiError);
  expect((err as Error).message).not.toContain(TOKEN);
  expect(JSON.stringify(err)).not.toContain(TOKEN);
  return err as ProviderApiError;
}

beforeEach(async () => {
  stub = await new ProviderApiStub().start();
  square = addSquareRoutes(stub);
  paymentId = squarePaymentId();
});
afterEach(() => stub.stop());

const add = (fields: Partial<Omit<SquareStubPayment, 'id'>>) => square.addPayment(paymentId, { amount: 4990, currency: 'EUR', referenceId: 'ord_1042', ...fields });

describe('square read: each status, and what the adapter makes of it', () => {
  it.each([
    ['APPROVED', 'authorized'],
    ['PENDING', 'processing'],
    ['COMPLETED', 'succeeded'],
    ['CANCELED', 'canceled'],
    ['FAILED', 'failed'],
  ] as const)('%s: the payment.updated body; normalize → %s of the payment, its amount, currency and reference', async (status, kind) => {
    add({ status });
    const reading = await read();
    expect(reading).toEqual({ found: true, status, refunded: '0', event: { eventType: 'payment.updated', body: expect.any(Object) } });
    expect(normalized(reading)).toEqual({
      kind,
      resourceId: paymentId,
      orderId: null,
      orderReference: 'ord_1042',
      amount: { form: 'minor', value: 4990 },
      currency: 'EUR',
      refundedAmount: null,
      declaredAccount: MERCHANT,
      occurredAt: expect.any(Date),
    });
  });

  it('the body is shaped as the notification: data.object.payment in snake_case, minor units as numbers, no card details', async () => {
    add({ status: 'COMPLETED' });
    const reading = await read();
    if (!reading.found || !reading.event) throw new Error('no event');
    const body = reading.event.body as any;
    const payment = body.data.object.payment;
    expect(body).toEqual({ merchant_id: MERCHANT, type: 'payment.updated', created_at: payment.updated_at, data: { type: 'payment', id: paymentId, object: { payment } } });
    expect(payment).toEqual({
      id: paymentId,
      status: 'COMPLETED',
      amount_money: { amount: 4990, currency: 'EUR' },
      total_money: { amount: 4990, currency: 'EUR' },
      approved_money: { amount: 4990, currency: 'EUR' },
      reference_id: 'ord_1042',
      location_id: 'L88917AVBK2S5',
      created_at: '2026-12-07T10:00:00.000Z',
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
    });
    expect(JSON.stringify(body)).not.toMatch(/card|fingerprint|last_4/);
    expect(stub.requests.map((r) => [r.method, r.path, r.status])).toEqual([['GET', `/v2/payments/${paymentId}`, 200]]);
    expect(stub.requests[0].headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it.each([
    ['partly', 1200],
    ['fully', 4990],
  ])('COMPLETED and %s refunded: refunded is refunded_money.amount; the event is the capture (normalize → succeeded), without refunded_money', async (_how, amount) => {
    add({ status: 'COMPLETED', refunded: amount, refundIds: ['r1'] });
    const reading = await read();
    expect(reading).toMatchObject({ found: true, status: 'COMPLETED', refunded: String(amount), event: { eventType: 'payment.updated' } });
    if (!reading.found || !reading.event) throw new Error('no event');
    expect((reading.event.body as any).data.object.payment.refunded_money).toBeUndefined();
    // A payment the module holds as open cannot take a refund before its capture: the poll records the capture.
    expect(normalized(reading)).toMatchObject({ kind: 'succeeded', resourceId: paymentId, amount: { form: 'minor', value: 4990 }, currency: 'EUR', refundedAmount: null });
  });

  it('a status the adapter does not act on: recorded as the status read, no event', async () => {
    add({ status: 'VOIDED' as SquareStubPayment['status'] });
    expect(await read()).toEqual({ found: true, status: 'VOIDED', refunded: '0', event: null });
  });

  it('Square does not know the payment (404 NOT_FOUND): found false', async () => {
    expect(await read()).toEqual({ found: false });
    expect(stub.requests.map((r) => [r.path, r.status])).toEqual([[`/v2/payments/${paymentId}`, 404]]);
  });
});

describe('square read: failures', () => {
  beforeEach(() => add({ status: 'APPROVED' }));
  const onceTo = (r: { method: string }) => r.method === 'GET';

  it('429 with Retry-After: a ProviderApiError with retryAfterMs; the SDK does not retry it', async () => {
    stub.failNext({ status: 429, retryAfter: '7', body: { errors: [{ category: 'RATE_LIMIT_ERROR', code: 'RATE_LIMITED', detail: 'Too many requests' }] } }, onceTo);
    const err = await failure();
    expect(err.retryAfterMs).toBe(7000);
    expect(err.code).toBe(RATE_LIMITED);
    expect(err.message).toBe(`Square answered 429 to GetPayment ${paymentId}: RATE_LIMITED: Too many requests`);
    expect(stub.requests).toHaveLength(1);
  });

  it('500: a ProviderApiError without retryAfterMs, one request', async () => {
    stub.failNext({ status: 500, body: { errors: [{ category: 'API_ERROR', code: 'INTERNAL_SERVER_ERROR', detail: 'An internal error has occurred' }] } }, onceTo);
    const err = await failure();
    expect(err.retryAfterMs).toBeNull();
    expect(err.code).toBe('provider_api_unavailable');
    expect(err.message).toBe(`Square answered 500 to GetPayment ${paymentId}: INTERNAL_SERVER_ERROR: An internal error has occurred`);
    expect(stub.requests).toHaveLength(1);
  });

  it("a 503 without Square's body", async () => {
    stub.failNext({ status: 503, body: {} }, onceTo);
    expect((await failure()).message).toBe(`Square answered 503 to GetPayment ${paymentId}: Square answered no reason`);
  });

  it("a 404 that is not Square's NOT_FOUND (a wrong base URL, a proxy): a ProviderApiError, not found false", async () => {
    stub.failNext({ status: 404, body: { message: 'no route' } }, onceTo);
    expect((await failure()).message).toBe(`Square answered 404 to GetPayment ${paymentId}: Square answered no reason`);
  });

  it('401 that echoes the token: a ProviderApiError whose message holds no token', async () => {
    stub.failNext({ status: 401, body: { errors: [{ category: 'AUTHENTICATION_ERROR', code: 'UNAUTHORIZED', detail: `Token ${TOKEN} is revoked` }] } }, onceTo);
    expect((await failure()).message).toBe(`Square answered 401 to GetPayment ${paymentId}: UNAUTHORIZED: Token [redacted] is revoked`);
  });

  it('a dropped connection: a ProviderApiError (no answer)', async () => {
    stub.failNext({ drop: true }, onceTo);
    const err = await failure();
    expect(err.message).toBe(`Square gave no answer to GetPayment ${paymentId}: fetch failed (UND_ERR_SOCKET)`);
    expect(err.retryAfterMs).toBeNull();
  });

  it('no answer within timeoutMs: a ProviderApiError', async () => {
    const held = stub.holdNext('before', onceTo);
    const err = failure({ timeoutMs: 300 });
    await held.arrived;
    expect((await err).message).toBe(`Square gave no answer to GetPayment ${paymentId}: Square did not answer in time`);
    held.release();
  });

  it('an answer about another payment: a ProviderApiError', async () => {
    const other = squarePaymentId();
    square.payments.set(other, { ...square.payments.get(paymentId)!, id: other });
    square.payments.set(paymentId, square.payments.get(other)!);
    expect((await failure()).message).toBe(`Square answered GetPayment ${paymentId} with another payment`);
  });
});

describe('square read: the adapter', () => {
  it('ready: the commands\' check (an access token); an endpoint without one throws before any call', async () => {
    expect(reader.ready(endpoint())).toBe(true);
    expect(reader.ready(endpoint({ apiKey: undefined }))).toBe(false);
    expect(reader.ready(endpoint({ apiKey: '' }))).toBe(false);
    for (const e of [endpoint(), endpoint({ apiKey: undefined }), endpoint({ apiKey: '' })]) expect(reader.ready(e)).toBe(squareCommands.ready(e));
    const err = await failure({ endpoint: endpoint({ apiKey: undefined }) });
    expect(err).toMatchObject({ code: 'endpoint_not_configured', message: 'endpoint "sq" has no Square access token (apiKey)' });
    expect(stub.requests).toEqual([]);
  });
});

describe('square read: an endpoint that polls', () => {
  const definition = (over: Record<string, unknown>) => ({
    id: 'sq',
    provider: 'square',
    secrets: ['sq-signature-key-0123456789'],
    merchantAccountId: MERCHANT,
    notificationUrl: 'https://shop.example/webhooks/sq',
    pollAfterSeconds: 300,
    ...over,
  });

  it('takes pollAfterSeconds with an access token, and refuses it without one', () => {
    expect(validateEndpoints('WEBHOOK_ENDPOINTS', [definition({ apiKey: TOKEN })])[0]).toMatchObject({ pollAfterSeconds: 300, apiKey: TOKEN });
    expect(() => validateEndpoints('WEBHOOK_ENDPOINTS', [definition({})])).toThrow(
      new ConfigurationError('WEBHOOK_ENDPOINTS', 'endpoint "sq": "pollAfterSeconds" needs the endpoint\'s API credentials ("apiKey")'),
    );
  });
});
