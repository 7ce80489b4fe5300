import { createPaypalCommands, paypalCommands } from '../../../src/providers/paypal.commands';
import { paypalProvider } from '../../../src/providers/paypal.provider';
import type { CommandContext, CommandTarget, PaymentCommand, ProviderEndpoint } from '../../../src/providers/provider';
import { ProviderApiStub } from '../../support/provider-api-stub';
import { addPaypalApi, PaypalApi, paypalRefundWebhook } from '../../support/provider-stubs/paypal';

/*
 * PayPal's payment commands through the real @paypal/paypal-server-sdk, against a local stub of
 * its REST API over HTTPS (CONTRACT §3.1): the OAuth token, where the key goes, what a repeat does,
 * and how every kind of answer is read.
 */
describe('paypal commands (through @paypal/paypal-server-sdk)', () => {
  let stub: ProviderApiStub;
  let paypal: PaypalApi;
  let endpoint: ProviderEndpoint;
  let seq = 0;

  beforeEach(async () => {
    stub = await new ProviderApiStub({ tls: true }).start();
    paypal = addPaypalApi(stub);
    // A fresh endpoint id per test: the SDK client (and its token) is kept per endpoint.
    endpoint = { id: `paypal-main-${++seq}`, merchantAccountId: '7KNGBPH2U58GQ', apiBaseUrl: stub.baseUrl, settings: { webhookId: 'WH1', clientId: paypal.clientId, clientSecret: paypal.clientSecret } };
  });
  afterEach(() => stub.stop());

  const eur = (decimal: string) => ({ minor: BigInt(decimal.replace('.', '')), decimal, currency: 'EUR' });
  const target = (orderId: string, captureIds: string[] = []): CommandTarget => ({ providerPaymentId: orderId, merchantAccountId: '7KNGBPH2U58GQ', amount: eur('49.90'), captureIds });
  const context = (idempotencyKey: string, over: Partial<CommandContext> = {}): CommandContext => ({ endpoint, idempotencyKey, timeoutMs: 5_000, ...over });
  const refund = (decimal: string, reason: string | null = 'Damaged on arrival'): PaymentCommand => ({ type: 'refund', refundId: 'rf-1', amount: eur(decimal), reason });
  const writes = () => stub.requests.filter((r) => r.method === 'POST' && r.path !== '/v1/oauth2/token');
  const tokenRequests = () => stub.requests.filter((r) => r.path === '/v1/oauth2/token');

  it('takes refunds, captures and voids; ready only with both OAuth client credentials', () => {
    expect(paypalCommands.types).toEqual(['refund', 'capture', 'void']);
    expect(paypalCommands.ready(endpoint)).toBe(true);
    expect(paypalCommands.ready({ ...endpoint, settings: { webhookId: 'WH1', clientId: paypal.clientId } })).toBe(false);
    expect(paypalCommands.ready({ ...endpoint, settings: { webhookId: 'WH1', clientSecret: paypal.clientSecret } })).toBe(false);
    expect(paypalCommands.ready({ ...endpoint, settings: { webhookId: 'WH1', clientId: '', clientSecret: paypal.clientSecret } })).toBe(false);
    expect(paypalProvider.commands).toBe(paypalCommands);
  });

  it('a refund: refundCapturedPayment of the latest capture, the key as PayPal-Request-Id, after an OAuth token', async () => {
    const { orderId, captureId } = paypal.addOrder();
    const answer = await paypalCommands.send(refund('10.00'), target(orderId, ['0LD123456789ABCDE', captureId!]), context('0190a1b2-refund-1'));
    const [made] = [...paypal.refunds.values()];
    expect(answer).toEqual({ ok: true, providerRefundId: made.id, status: 'succeeded' });
    expect(made.id).toMatch(/^[A-Z0-9]{17}$/);
    expect(tokenRequests()).toHaveLength(1);
    expect(tokenRequests()[0].headers.authorization).toBe(`Basic ${Buffer.from(`${paypal.clientId}:${paypal.clientSecret}`).toString('base64')}`);
    expect(writes()).toHaveLength(1);
    expect(writes()[0]).toMatchObject({ path: `/v2/payments/captures/${captureId}/refund`, key: '0190a1b2-refund-1', status: 201 });
    expect(writes()[0].headers['paypal-request-id']).toBe('0190a1b2-refund-1');
    expect(writes()[0].headers.authorization).toBe(`Bearer ${paypal.tokens[0]}`);
    expect(writes()[0].json).toEqual({ amount: { currency_code: 'EUR', value: '10.00' }, note_to_payer: 'Damaged on arrival' });
    expect(stub.effects).toEqual([
      { kind: 'refund', key: '0190a1b2-refund-1', detail: { captureId, refundId: made.id, amount: '10.00', currency: 'EUR', noteToPayer: 'Damaged on arrival' } },
    ]);
  });

  it('a refund PayPal answers PENDING is accepted, not yet succeeded; one it answers FAILED is refused', async () => {
    const { orderId, captureId } = paypal.addOrder();
    paypal.newRefundStatus = 'PENDING';
    const pending = await paypalCommands.send(refund('1.00', null), target(orderId, [captureId!]), context('k-pending'));
    expect(pending).toEqual({ ok: true, providerRefundId: [...paypal.refunds.keys()][0], status: 'pending' });
    expect(writes()[0].json).toEqual({ amount: { currency_code: 'EUR', value: '1.00' } });
    paypal.newRefundStatus = 'FAILED';
    const failed = await paypalCommands.send(refund('1.00', null), target(orderId, [captureId!]), context('k-failed'));
    expect(failed).toEqual({ ok: false, retryable: false, reason: `PayPal answered refund ${[...paypal.refunds.keys()][1]} FAILED (ECHECK)` });
  });

  it('a repeat of the key answers the first refund again: one effect, and the token is reused', async () => {
    const { orderId, captureId } = paypal.addOrder();
    const first = await paypalCommands.send(refund('10.00'), target(orderId, [captureId!]), context('k-repeat'));
    const again = await paypalCommands.send(refund('10.00'), target(orderId, [captureId!]), context('k-repeat'));
    expect(again).toEqual(first);
    expect(first).toMatchObject({ ok: true, providerRefundId: expect.stringMatching(/^[A-Z0-9]{17}$/) });
    expect(stub.effectsOf('refund')).toBe(1);
    expect(writes().map((r) => [r.key, r.status])).toEqual([
      ['k-repeat', 201],
      ['k-repeat', 201],
    ]);
    expect(tokenRequests()).toHaveLength(1);
  });

  it('a refund of a payment with no capture recorded: refused without a call', async () => {
    const { orderId } = paypal.addOrder({ state: 'authorized' });
    expect(await paypalCommands.send(refund('10.00'), target(orderId, []), context('k-nocapture'))).toEqual({
      ok: false,
      retryable: false,
      reason: `no capture is recorded for PayPal order ${orderId}: a PayPal refund names the capture`,
    });
    expect(stub.requests).toEqual([]);
  });

  it('a capture: the order\'s authorization read with getOrder, then captureAuthorizedPayment with the key; a void: voidPayment with the key', async () => {
    const one = paypal.addOrder({ state: 'authorized' });
    expect(await paypalCommands.send({ type: 'capture', amount: eur('20.00') }, target(one.orderId), context(`${one.orderId}:capture`))).toEqual({ ok: true });
    const two = paypal.addOrder({ state: 'authorized' });
    expect(await paypalCommands.send({ type: 'void' }, target(two.orderId), context(`${two.orderId}:void`))).toEqual({ ok: true });
    expect(stub.requests.filter((r) => r.path !== '/v1/oauth2/token').map((r) => [r.method, r.path, r.key, r.status])).toEqual([
      ['GET', `/v2/checkout/orders/${one.orderId}`, null, 200],
      ['POST', `/v2/payments/authorizations/${one.authorizationId}/capture`, `${one.orderId}:capture`, 201],
      ['GET', `/v2/checkout/orders/${two.orderId}`, null, 200],
      ['POST', `/v2/payments/authorizations/${two.authorizationId}/void`, `${two.orderId}:void`, 204],
    ]);
    expect(writes()[0].json).toEqual({ amount: { currency_code: 'EUR', value: '20.00' }, final_capture: true });
    expect(stub.effects.map((e) => [e.kind, e.key])).toEqual([
      ['capture', `${one.orderId}:capture`],
      ['void', `${two.orderId}:void`],
    ]);
  });

  it('a capture repeated after the first went through reaches the same authorization and answers the first capture again', async () => {
    const { orderId } = paypal.addOrder({ state: 'authorized' });
    const key = `${orderId}:capture`;
    expect(await paypalCommands.send({ type: 'capture', amount: eur('49.90') }, target(orderId), context(key))).toEqual({ ok: true });
    expect(await paypalCommands.send({ type: 'capture', amount: eur('49.90') }, target(orderId), context(key))).toEqual({ ok: true });
    expect(stub.effectsOf('capture')).toBe(1);
  });

  it('an approved order of intent CAPTURE is captured whole with captureOrder; part of it, or a void, is refused', async () => {
    const approved = paypal.addOrder({ state: 'approved', intent: 'CAPTURE' });
    expect(await paypalCommands.send({ type: 'capture', amount: eur('10.00') }, target(approved.orderId), context('k-part'))).toEqual({
      ok: false,
      retryable: false,
      reason: 'PayPal captures an approved order of intent CAPTURE whole: 10.00 of 49.90 cannot be captured',
    });
    expect(await paypalCommands.send({ type: 'void' }, target(approved.orderId), context('k-void'))).toEqual({
      ok: false,
      retryable: false,
      reason: `PayPal order ${approved.orderId} has no authorization to void (an order approved and never authorized or captured is not voided: it expires)`,
    });
    expect(await paypalCommands.send({ type: 'capture', amount: eur('49.90') }, target(approved.orderId), context('k-whole'))).toEqual({ ok: true });
    expect(writes().map((r) => [r.path, r.key, r.status])).toEqual([[`/v2/checkout/orders/${approved.orderId}/capture`, 'k-whole', 201]]);
    const authorizeIntent = paypal.addOrder({ state: 'approved', intent: 'AUTHORIZE' });
    expect(await paypalCommands.send({ type: 'capture', amount: eur('49.90') }, target(authorizeIntent.orderId), context('k-auth'))).toEqual({
      ok: false,
      retryable: false,
      reason: `PayPal order ${authorizeIntent.orderId} has no authorization to capture (intent AUTHORIZE, status APPROVED)`,
    });
  });

  it('the same key still in flight at PayPal: 409, retryable, may have happened', async () => {
    const { orderId, captureId } = paypal.addOrder();
    const held = stub.holdNext('before');
    const first = paypalCommands.send(refund('10.00'), target(orderId, [captureId!]), context('k-inflight'));
    await held.arrived;
    const second = await paypalCommands.send(refund('10.00'), target(orderId, [captureId!]), context('k-inflight'));
    expect(second).toEqual({ ok: false, retryable: true, reason: '409: a request with this idempotency key is in progress', mayHaveHappened: true });
    held.release();
    expect(await first).toMatchObject({ ok: true, status: 'succeeded' });
    expect(stub.effectsOf('refund')).toBe(1);
    expect(writes().map((r) => [r.key, r.status])).toEqual([
      ['k-inflight', 409],
      ['k-inflight', 201],
    ]);
  });

  it('429 with Retry-After: retryable after that long; the SDK does not retry it itself', async () => {
    const { orderId, captureId } = paypal.addOrder();
    stub.failNext({ status: 429, retryAfter: '30', body: { name: 'RATE_LIMIT_REACHED', message: 'Too many requests. Blocked due to rate limiting.' } });
    const answer = await paypalCommands.send(refund('10.00'), target(orderId, [captureId!]), context('k-429'));
    expect(answer).toEqual({ ok: false, retryable: true, reason: '429: RATE_LIMIT_REACHED: Too many requests. Blocked due to rate limiting.', retryAfterMs: 30_000, mayHaveHappened: false });
    expect(await paypalCommands.send(refund('10.00'), target(orderId, [captureId!]), context('k-429'))).toMatchObject({ ok: true });
    expect(writes().map((r) => [r.key, r.status])).toEqual([
      ['k-429', 429],
      ['k-429', 201],
    ]);
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('a 5xx: retryable, may have happened, one request (the SDK\'s retries are off)', async () => {
    const { orderId, captureId } = paypal.addOrder();
    stub.failNext({ status: 503, body: { name: 'SERVICE_UNAVAILABLE', message: 'Service Unavailable.' } });
    const answer = await paypalCommands.send(refund('10.00'), target(orderId, [captureId!]), context('k-503'));
    expect(answer).toEqual({ ok: false, retryable: true, reason: '503: SERVICE_UNAVAILABLE: Service Unavailable.', mayHaveHappened: true });
    expect(writes().map((r) => [r.key, r.status])).toEqual([['k-503', 503]]);
    expect(stub.effectsOf('refund')).toBe(0);
  });

  it('a refusal (4xx): not retryable, with PayPal\'s name, issue and description', async () => {
    const { orderId, captureId } = paypal.addOrder({ value: '20.00' });
    expect(await paypalCommands.send(refund('25.00'), target(orderId, [captureId!]), context('k-too-much'))).toEqual({
      ok: false,
      retryable: false,
      reason: '422: UNPROCESSABLE_ENTITY: REFUND_AMOUNT_EXCEEDED: The refund amount must be less than or equal to the capture amount that has not yet been refunded.',
    });
    expect(await paypalCommands.send({ type: 'void' }, target('5O190127TN364715T'), context('k-unknown'))).toEqual({
      ok: false,
      retryable: false,
      reason: '404: RESOURCE_NOT_FOUND: INVALID_RESOURCE_ID: Specified resource ID does not exist. Please check the resource ID and try again.',
    });
    expect(stub.effects).toEqual([]);
  });

  it('a dropped connection: retryable, may have happened', async () => {
    const { orderId, captureId } = paypal.addOrder();
    stub.failNext({ drop: true });
    const answer = await paypalCommands.send(refund('10.00'), target(orderId, [captureId!]), context('k-drop'));
    expect(answer).toEqual({ ok: false, retryable: true, reason: 'socket hang up', mayHaveHappened: true });
    expect(stub.effectsOf('refund')).toBe(0);
  });

  it('no answer within the timeout: retryable, may have happened', async () => {
    const { orderId, captureId } = paypal.addOrder();
    const held = stub.holdNext('after');
    const answer = await paypalCommands.send(refund('10.00'), target(orderId, [captureId!]), context('k-slow', { timeoutMs: 300 }));
    expect(answer).toEqual({ ok: false, retryable: true, reason: 'timeout of 300ms exceeded', mayHaveHappened: true });
    await held.arrived;
    held.release();
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('client credentials PayPal refuses: not retryable, invalid_client, and the secret is in no reason', async () => {
    const { orderId, captureId } = paypal.addOrder();
    const wrong = { ...endpoint, id: 'paypal-wrong', settings: { ...endpoint.settings, clientSecret: 'EKwrongSecret8Qz2Lx5Vn1Bm7Hc4Jt9Rp3Wd6Yk0' } };
    const answer = await paypalCommands.send(refund('1.00'), target(orderId, [captureId!]), { endpoint: wrong, idempotencyKey: 'k-401', timeoutMs: 5_000 });
    expect(answer).toEqual({ ok: false, retryable: false, reason: '401: invalid_client: Client Authentication failed' });
    stub.failNext({ status: 400, body: { name: 'INVALID_REQUEST', message: `secret ${paypal.clientSecret} is wrong` } });
    const echoed = await paypalCommands.send(refund('1.00'), target(orderId, [captureId!]), context('k-400'));
    expect(echoed).toEqual({ ok: false, retryable: false, reason: '400: INVALID_REQUEST: secret [redacted] is wrong' });
    expect(stub.effects).toEqual([]);
  });

  it('an endpoint without client credentials is not ready, and a send answers so without a call', async () => {
    const bare = { ...endpoint, settings: { webhookId: 'WH1' } };
    expect(paypalCommands.ready(bare)).toBe(false);
    expect(await paypalCommands.send(refund('1.00'), target('5O190127TN364715T', ['X']), { endpoint: bare, idempotencyKey: 'k', timeoutMs: 1_000 })).toEqual({
      ok: false,
      retryable: false,
      reason: `endpoint "${bare.id}" has no PayPal clientId and clientSecret`,
    });
    expect(stub.requests).toEqual([]);
  });

  it('the stub\'s webhook for a refund is what the adapter reads as that refund\'s confirmation', async () => {
    const { orderId, captureId } = paypal.addOrder();
    const answer = await paypalCommands.send(refund('10.00'), target(orderId, [captureId!]), context('k-webhook'));
    const refundId = (answer as { providerRefundId: string }).providerRefundId;
    const body = paypalRefundWebhook(paypal, refundId);
    expect(paypalProvider.normalize(body, 'PAYMENT.CAPTURE.REFUNDED')).toMatchObject({
      kind: 'refunded',
      resourceId: captureId,
      resourceKind: 'capture',
      refund: { id: refundId, amount: { form: 'decimal', value: '10.00' } },
      refundOutcomes: [{ id: refundId, status: 'succeeded' }],
    });
  });

  it('without @paypal/paypal-server-sdk installed: refused, naming the package, without a call', async () => {
    const missing = createPaypalCommands(() => null);
    expect(missing.installed()).toBe(false);
    expect(paypalCommands.installed()).toBe(true);
    expect(await missing.send(refund('1.00'), target('5O190127TN364715T', ['X']), context('k-missing'))).toEqual({
      ok: false,
      retryable: false,
      reason: 'the @paypal/paypal-server-sdk package is not installed: npm install @paypal/paypal-server-sdk',
    });
    expect(stub.requests).toEqual([]);
  });
});
