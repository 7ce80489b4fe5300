import { squareCommands } from '../../../src/providers/square.commands';
import { squareProvider } from '../../../src/providers/square.provider';
import type { CommandAmount, CommandContext, CommandTarget, PaymentCommand, ProviderEndpoint } from '../../../src/providers/provider';
import { ProviderApiStub, type StubRequest } from '../../support/provider-api-stub';
import { addSquareRoutes, squarePaymentId, squareRefundWebhooks, type SquareStub } from '../../support/provider-stubs/square';

/** Square's payment commands through the real `square` SDK, against a local stub of its API. */
const TOKEN = 'EAAAl2Qf7yG0sFy4B3Zi1kgI2ZLQ4pmnOMA1DHxqJtTPZMN5H9l';
const MERCHANT = 'MLSQSTUB01';
const REFUND_ID = /^[A-Za-z0-9]{29}_[A-Za-z0-9]{43}$/;

const money = (minor: bigint, decimal: string): CommandAmount => ({ minor, decimal, currency: 'EUR' });
const refund = (refundId = '0196f3b2-7c4e-7a10-9d2e-5b8c4a1f0e21', minor = 1200n): PaymentCommand => ({ type: 'refund', refundId, amount: money(minor, '12.00'), reason: 'damaged' });

let stub: ProviderApiStub;
let square: SquareStub;
let paymentId: string;
const target = (): CommandTarget => ({ providerPaymentId: paymentId, merchantAccountId: MERCHANT, amount: money(4990n, '49.90'), captureIds: [] });
const endpoint = (extra: Partial<ProviderEndpoint> = {}): ProviderEndpoint => ({ id: 'sq', merchantAccountId: MERCHANT, apiKey: TOKEN, apiBaseUrl: stub.baseUrl, settings: {}, ...extra });
const context = (idempotencyKey: string, extra: Partial<CommandContext> = {}): CommandContext => ({ endpoint: endpoint(), idempotencyKey, timeoutMs: 5_000, ...extra });
const keysSent = () => stub.requests.map((r) => r.json?.idempotency_key);
const toRefunds = (r: StubRequest) => r.path === '/v2/refunds';

beforeEach(async () => {
  stub = await new ProviderApiStub().start();
  square = addSquareRoutes(stub);
  paymentId = squarePaymentId();
  square.addPayment(paymentId, { status: 'COMPLETED', amount: 4990, currency: 'EUR' });
});
afterEach(() => stub.stop());

describe('square commands: what is sent', () => {
  it('a refund: RefundPayment with the key as idempotency_key, the amount in minor units, the reason; the refund id back, PENDING', async () => {
    const answer = await squareCommands.send(refund('key-1'), target(), context('key-1'));
    expect(answer).toEqual({ ok: true, providerRefundId: square.refunds[0].id, status: 'pending' });
    expect(square.refunds[0].id).toMatch(REFUND_ID);
    expect(stub.requests.map((r) => [r.method, r.path, r.status])).toEqual([['POST', '/v2/refunds', 200]]);
    const [sent] = stub.requests;
    expect(sent.json).toEqual({ idempotency_key: 'key-1', payment_id: paymentId, amount_money: { amount: 1200, currency: 'EUR' }, reason: 'damaged' });
    expect(sent.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(stub.effects).toEqual([{ kind: 'refund', key: 'key-1', detail: { ...square.refunds[0] } }]);
  });

  it('a refund Square answers COMPLETED at once: succeeded', async () => {
    square.refundStatus = 'COMPLETED';
    expect(await squareCommands.send(refund('key-2'), target(), context('key-2'))).toEqual({ ok: true, providerRefundId: square.refunds[0].id, status: 'succeeded' });
  });

  it('a refund Square answers REJECTED at once: refused, not retryable', async () => {
    square.refundStatus = 'REJECTED';
    expect(await squareCommands.send(refund('key-3'), target(), context('key-3'))).toEqual({ ok: false, retryable: false, reason: `Square answered the refund ${square.refunds[0].id} REJECTED` });
  });

  it('the same key again (a worker that crashed after the call): the first refund id, one refund at Square', async () => {
    const first = await squareCommands.send(refund('key-4'), target(), context('key-4'));
    const again = await squareCommands.send(refund('key-4'), target(), context('key-4'));
    expect(again).toEqual(first);
    expect(first).toMatchObject({ ok: true, providerRefundId: square.refunds[0].id });
    expect(stub.effectsOf('refund')).toBe(1);
    expect(keysSent()).toEqual(['key-4', 'key-4']);
  });

  it('a capture: CompletePayment of an APPROVED payment; again (no key in Square\'s API): the payment as it is, one capture', async () => {
    square.addPayment(paymentId, { status: 'APPROVED' });
    const capture: PaymentCommand = { type: 'capture', amount: money(4990n, '49.90') };
    expect(await squareCommands.send(capture, target(), context(`${paymentId}:capture`))).toEqual({ ok: true });
    expect(await squareCommands.send(capture, target(), context(`${paymentId}:capture`))).toEqual({ ok: true });
    expect(stub.requests.map((r) => [r.path, r.status, r.text])).toEqual([
      [`/v2/payments/${paymentId}/complete`, 200, '{}'],
      [`/v2/payments/${paymentId}/complete`, 200, '{}'],
    ]);
    expect(stub.effects).toEqual([{ kind: 'capture', key: null, detail: { paymentId } }]);
    expect(square.payments.get(paymentId)?.status).toBe('COMPLETED');
  });

  it('a capture of part of the payment: refused before any call (Square completes the whole amount)', async () => {
    square.addPayment(paymentId, { status: 'APPROVED' });
    expect(await squareCommands.send({ type: 'capture', amount: money(3000n, '30.00') }, target(), context(`${paymentId}:capture`))).toEqual({
      ok: false,
      retryable: false,
      reason: "Square completes a payment's whole amount (49.90 EUR), not 30.00",
    });
    expect(stub.requests).toEqual([]);
  });

  it('a void: CancelPayment of an APPROVED payment; again: the payment as it is, one void', async () => {
    square.addPayment(paymentId, { status: 'APPROVED' });
    expect(await squareCommands.send({ type: 'void' }, target(), context(`${paymentId}:void`))).toEqual({ ok: true });
    expect(await squareCommands.send({ type: 'void' }, target(), context(`${paymentId}:void`))).toEqual({ ok: true });
    expect(stub.requests.map((r) => [r.path, r.status])).toEqual([
      [`/v2/payments/${paymentId}/cancel`, 200],
      [`/v2/payments/${paymentId}/cancel`, 200],
    ]);
    expect(stub.effects).toEqual([{ kind: 'void', key: null, detail: { paymentId } }]);
  });

  it('a void of a payment already completed: refused with Square\'s error', async () => {
    expect(await squareCommands.send({ type: 'void' }, target(), context(`${paymentId}:void`))).toEqual({
      ok: false,
      retryable: false,
      reason: `400: BAD_REQUEST: Payment ${paymentId} is COMPLETED and cannot be canceled.`,
    });
  });
});

describe('square commands: how each failure is answered', () => {
  it('the same key still in flight: 409, retryable, may have happened; then the first refund', async () => {
    const held = stub.holdNext('before');
    const first = squareCommands.send(refund('key-5'), target(), context('key-5'));
    await held.arrived;
    expect(await squareCommands.send(refund('key-5'), target(), context('key-5'))).toEqual({ ok: false, retryable: true, mayHaveHappened: true, reason: '409: Square refused the command' });
    held.release();
    const done = await first;
    expect(await squareCommands.send(refund('key-5'), target(), context('key-5'))).toEqual(done);
    expect(stub.effectsOf('refund')).toBe(1);
    expect(keysSent()).toEqual(['key-5', 'key-5', 'key-5']);
  });

  it('429 with Retry-After: retryable, not before retryAfterMs; the SDK does not retry it itself', async () => {
    stub.failNext({ status: 429, retryAfter: '7', body: { errors: [{ category: 'RATE_LIMIT_ERROR', code: 'RATE_LIMITED', detail: 'Too many requests' }] } });
    expect(await squareCommands.send(refund('key-6'), target(), context('key-6'))).toEqual({
      ok: false,
      retryable: true,
      retryAfterMs: 7000,
      mayHaveHappened: false,
      reason: '429: RATE_LIMITED: Too many requests',
    });
    expect(stub.requests).toHaveLength(1);
    expect(await squareCommands.send(refund('key-6'), target(), context('key-6'))).toMatchObject({ ok: true, providerRefundId: square.refunds[0].id });
    expect(keysSent()).toEqual(['key-6', 'key-6']);
  });

  it('a 5xx: retryable and may have happened, one request (no retry in the SDK); the same key next time', async () => {
    stub.failNext({ status: 503, body: { errors: [{ category: 'API_ERROR', code: 'SERVICE_UNAVAILABLE', detail: 'Service unavailable' }] } });
    expect(await squareCommands.send(refund('key-7'), target(), context('key-7'))).toEqual({ ok: false, retryable: true, mayHaveHappened: true, reason: '503: SERVICE_UNAVAILABLE: Service unavailable' });
    expect(stub.requests).toHaveLength(1);
    stub.failNext({ status: 500, body: {} }, toRefunds);
    expect(await squareCommands.send(refund('key-7'), target(), context('key-7'))).toEqual({ ok: false, retryable: true, mayHaveHappened: true, reason: '500: Square refused the command' });
    expect(keysSent()).toEqual(['key-7', 'key-7']);
  });

  it("a refusal: not retryable, with Square's error code and detail", async () => {
    expect(await squareCommands.send(refund('key-8', 9000n), target(), context('key-8'))).toEqual({
      ok: false,
      retryable: false,
      reason: '400: REFUND_AMOUNT_INVALID: The requested refund amount exceeds the amount available to refund.',
    });
    expect(stub.effects).toEqual([]);
  });

  it('a dropped connection: retryable, may have happened', async () => {
    stub.failNext({ drop: true });
    expect(await squareCommands.send(refund('key-9'), target(), context('key-9'))).toEqual({ ok: false, retryable: true, mayHaveHappened: true, reason: 'fetch failed (UND_ERR_SOCKET)' });
    expect(stub.requests).toHaveLength(1);
  });

  it('no answer within timeoutMs: retryable, may have happened', async () => {
    const held = stub.holdNext('after');
    const answer = squareCommands.send(refund('key-10'), target(), context('key-10', { timeoutMs: 300 }));
    await held.arrived;
    expect(await answer).toEqual({ ok: false, retryable: true, mayHaveHappened: true, reason: 'Square did not answer in time' });
    held.release();
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('the access token never appears in a reason, even when the API echoes it', async () => {
    stub.failNext({ status: 401, body: { errors: [{ category: 'AUTHENTICATION_ERROR', code: 'UNAUTHORIZED', detail: `Token ${TOKEN} is revoked` }] } });
    const answer = await squareCommands.send(refund('key-11'), target(), context('key-11'));
    expect(answer).toEqual({ ok: false, retryable: false, reason: '401: UNAUTHORIZED: Token [redacted] is revoked' });
    expect(JSON.stringify(answer)).not.toContain(TOKEN);
  });

  it('an endpoint without an access token is not ready, and sends nothing', async () => {
    expect(squareCommands.ready(endpoint())).toBe(true);
    expect(squareCommands.ready(endpoint({ apiKey: undefined }))).toBe(false);
    expect(await squareCommands.send(refund('key-12'), target(), { ...context('key-12'), endpoint: endpoint({ apiKey: undefined }) })).toEqual({
      ok: false,
      retryable: false,
      reason: 'endpoint "sq" has no Square access token (apiKey)',
    });
    expect(stub.requests).toEqual([]);
  });

  it('the adapter carries the commands: refunds, captures, voids', () => {
    expect(squareProvider.commands).toBe(squareCommands);
    expect(squareCommands.types).toEqual(['refund', 'capture', 'void']);
  });
});

describe('square: the notifications that confirm a refund made through the stub', () => {
  it('refund.updated COMPLETED confirms the refund by the id it was answered with; payment.updated moves the payment', async () => {
    const answer = await squareCommands.send(refund('key-13'), target(), context('key-13'));
    const { refundUpdated, paymentUpdated } = squareRefundWebhooks(square, square.refunds[0], MERCHANT);
    const r = JSON.parse(refundUpdated);
    expect(squareProvider.normalize(r, r.type)).toMatchObject({
      kind: 'refund_outcome',
      resourceId: paymentId,
      refundOutcomes: [{ id: answer.ok ? answer.providerRefundId : 'none', status: 'succeeded' }],
    });
    const p = JSON.parse(paymentUpdated);
    expect(squareProvider.normalize(p, p.type)).toMatchObject({ kind: 'refunded', resourceId: paymentId, refundedAmount: { form: 'minor', value: 1200 } });
  });
});

describe('square commands: the optional peer', () => {
  it('the module loads without square; a command then answers, not retryable, with the install line, and sends nothing', async () => {
    const factory = jest.fn(() => {
      throw Object.assign(new Error("Cannot find module 'square' from 'src/providers/square.commands.ts'"), { code: 'MODULE_NOT_FOUND' });
    });
    let commands!: typeof squareCommands;
    jest.isolateModules(() => {
      jest.doMock('square', factory);
      commands = (require('../../../src/providers/square.commands') as typeof import('../../../src/providers/square.commands')).squareCommands;
    });
    expect(factory).not.toHaveBeenCalled();
    expect(await commands.send(refund('key-x'), target(), context('key-x'))).toEqual({ ok: false, retryable: false, reason: 'endpoint "sq" needs the square package 40 or later: npm install square' });
    expect(factory).toHaveBeenCalledTimes(1);
    expect(stub.requests).toEqual([]);
  });
});
