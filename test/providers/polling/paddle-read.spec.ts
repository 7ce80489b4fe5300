import { ConfigurationError, validateEndpoints } from '../../../src/config/validate';
import { paddleCommands } from '../../../src/providers/paddle.commands';
import { paddleProvider } from '../../../src/providers/paddle.provider';
import { ProviderApiError, RATE_LIMITED, type PaymentReading, type PollTarget, type ProviderEndpoint, type ReadContext } from '../../../src/providers/provider';
import { ProviderApiStub, type StubRequest } from '../../support/provider-api-stub';
import { addPaddleRoutes, paddleId, type PaddleStub } from '../../support/provider-stubs/paddle';

/**
 * Polling's read of a Paddle transaction ("Get a transaction") through the real
 * @paddle/paddle-node-sdk, against a local stub of its API. The stub's transaction is Paddle's
 * published transaction.completed (65215 USD), its status set by each test.
 */
const API_KEY = 'pdl_sdbx_apikey_01jq3kcbfsn9b7mnhv3p4pt0v2_Yj7gHzxXw0DcYb1ZpN4vVf_AQ3';
const ORDER_ID = '0196f3b2-7c4e-7a10-9d2e-5b8c4a1f0e21';

let stub: ProviderApiStub;
let paddle: PaddleStub;
let transactionId: string;
let transaction: Record<string, any>;
const reader = paddleProvider.readPayment!;
const endpoint = (extra: Partial<ProviderEndpoint> = {}): ProviderEndpoint => ({ id: 'pdl', merchantAccountId: 'pdl', apiKey: API_KEY, apiBaseUrl: stub.baseUrl, settings: {}, ...extra });
const target = (): PollTarget => ({ providerPaymentId: transactionId, merchantAccountId: 'pdl', amount: { minor: 65215n, decimal: '652.15', currency: 'USD' }, captureIds: [] });
const context = (extra: Partial<ReadContext> = {}): ReadContext => ({ endpoint: endpoint(), timeoutMs: 5_000, ...extra });
const read = (extra: Partial<ReadContext> = {}) => reader.read(target(), context(extra));
const gets = (r: StubRequest) => r.method === 'GET' && r.path.startsWith('/transactions/');
/** What processing makes of a reading: the adapter's own normalize of the body as the inbox stores it (JSON). */
const normalized = (reading: PaymentReading) => {
  if (!reading.found || reading.event === null) throw new Error('no event');
  const stored = JSON.parse(JSON.stringify(reading.event.body)) as Record<string, unknown>;
  return paddleProvider.normalize(stored, reading.event.eventType, endpoint());
};
/** The error a read throws, checked to be a ProviderApiError whose message never holds the key. */
async function failure(extra: Partial<ReadContext> = {}): Promise<ProviderApiError> {
  const err = await read(extra).then(
    () => {
      throw new Error('the read answered');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProviderApiError);
  expect((err as Error).message).not.toContain(API_KEY);
  expect(JSON.stringify(err)).not.toContain(API_KEY);
  return err as ProviderApiError;
}
const paddleError = (code: string, type: 'request_error' | 'api_error', detail: string) => ({
  error: { type, code, detail, documentation_url: `https://developer.paddle.com/v1/errors/shared/${code}` },
  meta: { request_id: 'stub' },
});

beforeEach(async () => {
  stub = await new ProviderApiStub().start();
  paddle = addPaddleRoutes(stub);
  transactionId = paddleId('txn');
  transaction = paddle.addTransaction(transactionId);
  transaction.custom_data = { order_id: ORDER_ID, cartRef: 'keeps-its-case' };
});
afterEach(() => stub.stop());

describe('paddle read: each status, and what the adapter makes of it', () => {
  it.each([
    ['paid', 'transaction.paid', 'succeeded'],
    ['completed', 'transaction.completed', 'succeeded'],
    ['canceled', 'transaction.canceled', 'canceled'],
  ] as const)('%s: the %s body; normalize → %s of the transaction, its grand total, currency and order', async (status, eventType, kind) => {
    transaction.status = status;
    const reading = await read();
    expect(reading).toEqual({ found: true, status, refunded: '0', event: { eventType, body: expect.any(Object) } });
    expect(normalized(reading)).toEqual({
      kind,
      resourceId: transactionId,
      orderId: ORDER_ID,
      amount: { form: 'minor', value: '65215' },
      currency: 'USD',
      refundedAmount: null,
      refund: null,
      declaredAccount: null,
      occurredAt: new Date('2023-08-22T07:15:44.296Z'),
    });
  });

  it.each([
    ['draft', 'transaction.created'],
    ['ready', 'transaction.ready'],
    ['billed', 'transaction.billed'],
    ['past_due', 'transaction.past_due'],
  ])('%s: nothing the service acts on (as %s is not): the status read, no event', async (status, eventType) => {
    transaction.status = status;
    expect(await read()).toEqual({ found: true, status, refunded: '0', event: null });
    // The notification it stands for is one the adapter ignores too.
    expect(paddleProvider.normalize({ event_type: eventType, data: { ...transaction } }, eventType)).toBeNull();
  });

  it('the body is shaped as the notification: data in snake_case, custom_data as stored, totals as strings; no line items, payments or customer', async () => {
    transaction.status = 'completed';
    const reading = await read();
    if (!reading.found || !reading.event) throw new Error('no event');
    expect(reading.event.body).toEqual({
      event_type: 'transaction.completed',
      occurred_at: transaction.updated_at,
      data: {
        id: transactionId,
        status: 'completed',
        currency_code: 'USD',
        custom_data: { order_id: ORDER_ID, cartRef: 'keeps-its-case' },
        origin: transaction.origin,
        collection_mode: transaction.collection_mode,
        customer_id: transaction.customer_id,
        subscription_id: transaction.subscription_id,
        invoice_number: transaction.invoice_number,
        details: {
          totals: { subtotal: '59900', discount: '0', tax: '5315', total: '65215', credit: '0', balance: '0', grand_total: '65215', currency_code: 'USD' },
        },
        created_at: transaction.created_at,
        updated_at: transaction.updated_at,
        billed_at: transaction.billed_at,
      },
    });
    expect(JSON.stringify(reading.event.body)).not.toMatch(/line_items|payments|card|billing_details/);
    expect(stub.requests.map((r) => [r.method, r.path, r.status])).toEqual([['GET', `/transactions/${transactionId}`, 200]]);
    expect(stub.requests[0].headers.authorization).toBe(`bearer ${API_KEY}`);
  });

  it('a transaction without custom_data: no order id, the payment is found by its transaction id', async () => {
    transaction.status = 'paid';
    transaction.custom_data = null;
    expect(normalized(await read())).toMatchObject({ kind: 'succeeded', resourceId: transactionId, orderId: null });
  });

  it('refunds are adjustments: a refunded transaction still reads completed, refunded 0 (its refunds come by adjustment.* notifications)', async () => {
    transaction.status = 'completed';
    await paddleCommands.send({ type: 'refund', refundId: 'r1', amount: { minor: 65215n, decimal: '652.15', currency: 'USD' }, reason: null }, { ...target(), captureIds: [] }, { endpoint: endpoint(), idempotencyKey: 'k1', timeoutMs: 5_000 });
    paddle.adjustments[0].status = 'approved';
    const reading = await read();
    expect(reading).toMatchObject({ found: true, status: 'completed', refunded: '0', event: { eventType: 'transaction.completed' } });
    expect(normalized(reading)).toMatchObject({ kind: 'succeeded', refundedAmount: null, refund: null });
  });

  it('Paddle does not know the transaction (404 not_found): found false', async () => {
    paddle.transactions.delete(transactionId);
    expect(await read()).toEqual({ found: false });
    expect(stub.requests.map((r) => [r.path, r.status])).toEqual([[`/transactions/${transactionId}`, 404]]);
  });
});

describe('paddle read: failures', () => {
  beforeEach(() => {
    transaction.status = 'ready';
  });

  it('429 with Retry-After: a ProviderApiError with retryAfterMs; the SDK does not retry it', async () => {
    stub.failNext({ status: 429, retryAfter: '7', body: paddleError('too_many_requests', 'request_error', 'Too many requests') }, gets);
    const err = await failure();
    expect(err.retryAfterMs).toBe(7000);
    expect(err.code).toBe(RATE_LIMITED);
    expect(err.message).toBe(`Paddle answered 429 to "Get a transaction" ${transactionId}: too_many_requests: Too many requests`);
    expect(stub.requests).toHaveLength(1);
  });

  it('500: a ProviderApiError without retryAfterMs, one request', async () => {
    stub.failNext({ status: 500, body: paddleError('internal_error', 'api_error', 'An internal error occurred') }, gets);
    const err = await failure();
    expect(err.retryAfterMs).toBeNull();
    expect(err.code).toBe('provider_api_unavailable');
    expect(err.message).toBe(`Paddle answered 500 to "Get a transaction" ${transactionId}: internal_error: An internal error occurred`);
    expect(stub.requests).toHaveLength(1);
  });

  it("an answer that is not Paddle's (a proxy's 502): a ProviderApiError, no answer", async () => {
    stub.failNext({ status: 502, body: { message: 'Bad gateway' } }, gets);
    const err = await failure();
    expect(err.message).toMatch(new RegExp(`^Paddle gave no answer to "Get a transaction" ${transactionId}: `));
    expect(err.retryAfterMs).toBeNull();
  });

  it('a key refused, its detail echoing the key: a ProviderApiError whose message holds no key', async () => {
    stub.failNext({ status: 403, body: paddleError('authentication_malformed', 'request_error', `API key ${API_KEY} is malformed`) }, gets);
    expect((await failure()).message).toBe(`Paddle answered 403 to "Get a transaction" ${transactionId}: authentication_malformed: API key [redacted] is malformed`);
  });

  it('a dropped connection: a ProviderApiError (no answer)', async () => {
    stub.failNext({ drop: true }, gets);
    expect((await failure()).message).toBe(`Paddle gave no answer to "Get a transaction" ${transactionId}: fetch failed (UND_ERR_SOCKET)`);
  });

  it('no answer within timeoutMs: a ProviderApiError', async () => {
    const held = stub.holdNext('before', gets);
    const err = failure({ timeoutMs: 300 });
    await held.arrived;
    expect((await err).message).toBe(`Paddle did not answer "Get a transaction" ${transactionId} in time`);
    held.release();
  });

  it('an answer about another transaction: a ProviderApiError', async () => {
    paddle.transactions.set(transactionId, { ...transaction, id: paddleId('txn') });
    expect((await failure()).message).toBe(`Paddle answered "Get a transaction" ${transactionId} with another transaction`);
  });
});

describe('paddle read: the adapter', () => {
  it("ready: the commands' check (an API key); an endpoint without one throws before any call", async () => {
    for (const e of [endpoint(), endpoint({ apiKey: undefined }), endpoint({ apiKey: '' })]) expect(reader.ready(e)).toBe(paddleCommands.ready(e));
    expect(reader.ready(endpoint())).toBe(true);
    expect(reader.ready(endpoint({ apiKey: undefined }))).toBe(false);
    const err = await failure({ endpoint: endpoint({ apiKey: undefined }) });
    expect(err).toMatchObject({ code: 'endpoint_not_configured', message: 'endpoint "pdl" has no Paddle API key (apiKey)' });
    expect(stub.requests).toEqual([]);
  });
});

describe('paddle read: an endpoint that polls', () => {
  const definition = (over: Record<string, unknown>) => ({ id: 'pdl', provider: 'paddle', secrets: ['pdl_ntfset_01hv8x2acma2gz1my1h0example'], merchantAccountId: 'pdl', pollAfterSeconds: 300, ...over });

  it('takes pollAfterSeconds with an API key, and refuses it without one', () => {
    expect(validateEndpoints('WEBHOOK_ENDPOINTS', [definition({ apiKey: API_KEY })])[0]).toMatchObject({ pollAfterSeconds: 300, apiKey: API_KEY });
    expect(() => validateEndpoints('WEBHOOK_ENDPOINTS', [definition({})])).toThrow(
      new ConfigurationError('WEBHOOK_ENDPOINTS', 'endpoint "pdl": "pollAfterSeconds" needs the endpoint\'s API credentials ("apiKey")'),
    );
  });
});
