import { checkoutCommands } from '../../../src/providers/checkout.commands';
import { checkoutProvider } from '../../../src/providers/checkout.provider';
import type { CommandAmount, CommandContext, CommandTarget, PaymentCommand, ProviderEndpoint } from '../../../src/providers/provider';
import { ProviderApiStub } from '../../support/provider-api-stub';
import { addCheckoutRoutes, checkoutRefundedWebhook, type CheckoutStubAction } from '../../support/provider-stubs/checkout';

/** Checkout.com's payment commands through the real checkout-sdk-node, against a local stub of its API. */
const SECRET_KEY = 'sk_sbox_m73dzbpy7cf3gfd46xr4yj5xo4e';
const PAYMENT = 'pay_mbabizu24mvu3mela5njyhpit4';
const ACTION_ID = /^act_[a-z2-7]{26}$/;

const money = (minor: bigint, decimal: string): CommandAmount => ({ minor, decimal, currency: 'EUR' });
const target: CommandTarget = { providerPaymentId: PAYMENT, merchantAccountId: 'shop', amount: money(4990n, '49.90'), captureIds: [] };
const refund = (refundId = 'ref_0196f3b2-7c4e'): PaymentCommand => ({ type: 'refund', refundId, amount: money(1200n, '12.00'), reason: 'damaged' });

let stub: ProviderApiStub;
let actions: CheckoutStubAction[];
const endpoint = (extra: Partial<ProviderEndpoint> = {}): ProviderEndpoint => ({ id: 'cko', merchantAccountId: 'shop', apiKey: SECRET_KEY, apiBaseUrl: stub.baseUrl, settings: {}, ...extra });
const context = (idempotencyKey: string, extra: Partial<CommandContext> = {}): CommandContext => ({ endpoint: endpoint(), idempotencyKey, timeoutMs: 5_000, ...extra });
const keysSent = () => stub.requests.map((r) => r.headers['cko-idempotency-key']);

beforeEach(async () => {
  stub = await new ProviderApiStub().start();
  actions = addCheckoutRoutes(stub);
});
afterEach(() => stub.stop());

describe('checkout commands: what is sent', () => {
  it('a refund: POST /payments/{id}/refunds with the key as Cko-Idempotency-Key, the amount in minor units, the refund id as reference; the action id back', async () => {
    const answer = await checkoutCommands.send(refund(), target, context('ref_0196f3b2-7c4e'));
    expect(answer).toEqual({ ok: true, providerRefundId: actions[0].actionId, status: 'pending' });
    expect(actions[0].actionId).toMatch(ACTION_ID);
    expect(stub.requests.map((r) => [r.method, r.path, r.status])).toEqual([['POST', `/payments/${PAYMENT}/refunds`, 202]]);
    const [sent] = stub.requests;
    expect(sent.headers['cko-idempotency-key']).toBe('ref_0196f3b2-7c4e');
    expect(sent.headers.authorization).toBe(`Bearer ${SECRET_KEY}`);
    expect(sent.json).toEqual({ amount: 1200, reference: 'ref_0196f3b2-7c4e' });
    expect(stub.effects).toEqual([{ kind: 'refund', key: 'ref_0196f3b2-7c4e', detail: { ...actions[0] } }]);
  });

  it('the same key again (a worker that crashed after the call): the first action id, one refund at Checkout.com', async () => {
    const first = await checkoutCommands.send(refund(), target, context('ref_1'));
    const again = await checkoutCommands.send(refund(), target, context('ref_1'));
    expect(again).toEqual(first);
    expect(first).toEqual({ ok: true, providerRefundId: actions[0].actionId, status: 'pending' });
    expect(stub.effectsOf('refund')).toBe(1);
    expect(keysSent()).toEqual(['ref_1', 'ref_1']);
  });

  it('a capture of part of the payment: POST /payments/{id}/captures { amount }, accepted', async () => {
    const answer = await checkoutCommands.send({ type: 'capture', amount: money(3000n, '30.00') }, target, context(`${PAYMENT}:capture`));
    expect(answer).toEqual({ ok: true });
    expect(stub.requests.map((r) => [r.path, r.headers['cko-idempotency-key'], r.json])).toEqual([[`/payments/${PAYMENT}/captures`, `${PAYMENT}:capture`, { amount: 3000 }]]);
    expect(stub.effectsOf('capture')).toBe(1);
  });

  it('a void: POST /payments/{id}/voids, accepted', async () => {
    const answer = await checkoutCommands.send({ type: 'void' }, target, context(`${PAYMENT}:void`));
    expect(answer).toEqual({ ok: true });
    expect(stub.requests.map((r) => [r.path, r.headers['cko-idempotency-key'], r.json])).toEqual([[`/payments/${PAYMENT}/voids`, `${PAYMENT}:void`, {}]]);
    expect(stub.effectsOf('void')).toBe(1);
  });
});

describe('checkout commands: how each failure is answered', () => {
  it('the same key still in flight: 409, retryable, may have happened; the retry with the same key gets the first action', async () => {
    const held = stub.holdNext('before');
    const first = checkoutCommands.send(refund(), target, context('ref_2'));
    await held.arrived;
    const during = await checkoutCommands.send(refund(), target, context('ref_2'));
    expect(during).toEqual({ ok: false, retryable: true, mayHaveHappened: true, reason: '409: {"error":"a request with this idempotency key is in progress"}' });
    held.release();
    const done = await first;
    expect(await checkoutCommands.send(refund(), target, context('ref_2'))).toEqual(done);
    expect(stub.effectsOf('refund')).toBe(1);
    expect(keysSent()).toEqual(['ref_2', 'ref_2', 'ref_2']);
  });

  it('429 with Retry-After: retryable; the SDK drops the headers, so no retryAfterMs (the outbox backoff applies)', async () => {
    stub.failNext({ status: 429, retryAfter: '7', body: { request_id: 'req_1', error_type: 'too_many_requests' } });
    expect(await checkoutCommands.send(refund(), target, context('ref_3'))).toEqual({ ok: false, retryable: true, mayHaveHappened: false, reason: '429: too_many_requests' });
    expect(await checkoutCommands.send(refund(), target, context('ref_3'))).toEqual({ ok: true, providerRefundId: actions[0].actionId, status: 'pending' });
    expect(keysSent()).toEqual(['ref_3', 'ref_3']);
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('a 5xx: retryable and may have happened; the same key next time', async () => {
    stub.failNext({ status: 503, body: {} });
    expect(await checkoutCommands.send(refund(), target, context('ref_4'))).toEqual({ ok: false, retryable: true, mayHaveHappened: true, reason: '503: API Error' });
    stub.failNext({ status: 502 });
    expect(await checkoutCommands.send(refund(), target, context('ref_4'))).toEqual({ ok: false, retryable: true, mayHaveHappened: true, reason: '502: Bad gateway' });
    expect(keysSent()).toEqual(['ref_4', 'ref_4']);
    expect(stub.effectsOf('refund')).toBe(0);
  });

  it("a refusal (422): not retryable, with Checkout.com's error type and codes", async () => {
    stub.failNext({ status: 422, body: { request_id: 'req_2', error_type: 'request_invalid', error_codes: ['amount_exceeds_balance', 'reference_invalid'] } });
    expect(await checkoutCommands.send(refund(), target, context('ref_5'))).toEqual({ ok: false, retryable: false, reason: '422: request_invalid: amount_exceeds_balance, reference_invalid' });
    stub.failNext({ status: 403, body: { request_id: 'req_3', error_type: 'action_not_allowed', error_codes: ['refund_not_allowed'] } });
    expect(await checkoutCommands.send({ type: 'void' }, target, context(`${PAYMENT}:void`))).toEqual({ ok: false, retryable: false, reason: '403: action_not_allowed: refund_not_allowed' });
    expect(stub.effects).toEqual([]);
  });

  it('a dropped connection: retryable, may have happened', async () => {
    stub.failNext({ drop: true });
    expect(await checkoutCommands.send(refund(), target, context('ref_6'))).toEqual({
      ok: false,
      retryable: true,
      mayHaveHappened: true,
      reason: `request to ${stub.baseUrl}/payments/${PAYMENT}/refunds failed, reason: socket hang up`,
    });
  });

  it('no answer within timeoutMs: retryable, may have happened (the SDK calls it a 408; it is no answer)', async () => {
    const held = stub.holdNext('after');
    const answer = checkoutCommands.send(refund(), target, context('ref_7', { timeoutMs: 300 }));
    await held.arrived;
    expect(await answer).toEqual({ ok: false, retryable: true, mayHaveHappened: true, reason: 'Checkout.com did not answer in time' });
    held.release();
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('the secret key never appears in a reason, even when the API echoes it', async () => {
    stub.failNext({ status: 401, body: `invalid key ${SECRET_KEY}` });
    const answer = await checkoutCommands.send(refund(), target, context('ref_8'));
    expect(answer).toEqual({ ok: false, retryable: false, reason: '401: invalid key [redacted]' });
    expect(JSON.stringify(answer)).not.toContain(SECRET_KEY);
  });

  it('an endpoint without a secret key is not ready, and sends nothing', async () => {
    expect(checkoutCommands.ready(endpoint())).toBe(true);
    expect(checkoutCommands.ready(endpoint({ apiKey: undefined }))).toBe(false);
    expect(checkoutCommands.ready(endpoint({ apiKey: '' }))).toBe(false);
    expect(await checkoutCommands.send(refund(), target, { ...context('ref_9'), endpoint: endpoint({ apiKey: undefined }) })).toEqual({
      ok: false,
      retryable: false,
      reason: 'endpoint "cko" has no Checkout.com secret key (apiKey)',
    });
    expect(stub.requests).toEqual([]);
  });

  it('CKO_SECRET_KEY in the environment (which the SDK would use instead of the endpoint\'s key): refused, nothing sent', async () => {
    process.env.CKO_SECRET_KEY = 'sk_sbox_other';
    try {
      expect(await checkoutCommands.send(refund(), target, context('ref_10'))).toEqual({
        ok: false,
        retryable: false,
        reason: 'CKO_SECRET_KEY is set in the environment: checkout-sdk-node would use it instead of endpoint "cko"\'s apiKey',
      });
    } finally {
      delete process.env.CKO_SECRET_KEY;
    }
    expect(stub.requests).toEqual([]);
  });

  it('the adapter carries the commands: refunds, captures, voids', () => {
    expect(checkoutProvider.commands).toBe(checkoutCommands);
    expect(checkoutCommands.types).toEqual(['refund', 'capture', 'void']);
  });
});

describe('checkout: the webhook that confirms a refund made through the stub', () => {
  it('payment_refunded names the action id the refund was answered with: refundOutcomes succeeded', async () => {
    const answer = await checkoutCommands.send(refund(), target, context('ref_11'));
    const body = JSON.parse(checkoutRefundedWebhook(actions[0], { currency: 'EUR', orderId: 'order-1' }));
    expect(checkoutProvider.normalize(body, body.type)).toMatchObject({
      kind: 'refunded',
      resourceId: PAYMENT,
      orderId: 'order-1',
      refund: { id: actions[0].actionId, amount: { form: 'minor', value: 1200 } },
      refundOutcomes: [{ id: answer.ok ? answer.providerRefundId : 'none', status: 'succeeded' }],
    });
  });
});

describe('checkout commands: the optional peer', () => {
  it('the module loads without checkout-sdk-node; a command then answers, not retryable, with the install line, and sends nothing', async () => {
    const factory = jest.fn(() => {
      throw Object.assign(new Error("Cannot find module 'checkout-sdk-node' from 'src/providers/checkout.commands.ts'"), { code: 'MODULE_NOT_FOUND' });
    });
    let commands!: typeof checkoutCommands;
    jest.isolateModules(() => {
      jest.doMock('checkout-sdk-node', factory);
      commands = (require('../../../src/providers/checkout.commands') as typeof import('../../../src/providers/checkout.commands')).checkoutCommands;
    });
    expect(factory).not.toHaveBeenCalled();
    expect(await commands.send(refund(), target, context('ref_x'))).toEqual({ ok: false, retryable: false, reason: 'endpoint "cko" needs the checkout-sdk-node package: npm install checkout-sdk-node' });
    expect(factory).toHaveBeenCalledTimes(1);
    expect(stub.requests).toEqual([]);
  });
});
