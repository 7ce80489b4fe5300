import type { CommandContext, CommandTarget, PaymentCommand, ProviderEndpoint } from '../../../src/providers/provider';
import { stripeCommands } from '../../../src/providers/stripe.commands';
import { stripeProvider } from '../../../src/providers/stripe.provider';
import { ProviderApiStub } from '../../support/provider-api-stub';
import { addStripeRoutes, STRIPE_STUB_KEY, StripeStub, StripeStubPayment, stripeRefundWebhook } from '../../support/provider-stubs/stripe';

/**
 * Stripe's payment commands through the official `stripe` client against a local stand-in of
 * Stripe's API (CONTRACT §3.1, docs/commands.md#stripe): where the key goes, what each answer
 * becomes, and that a retry under the same key makes one refund.
 */
describe('stripe commands through the official client', () => {
  let stub: ProviderApiStub;
  let stripe: StripeStub;
  const PLATFORM = 'acct_1Platform000000000000';
  const CONNECTED = 'acct_1Connected00000000000';

  beforeEach(async () => {
    stub = await new ProviderApiStub().start();
    stripe = addStripeRoutes(stub);
  });
  afterEach(() => stub.stop());

  const endpoint = (over: Partial<ProviderEndpoint> = {}): ProviderEndpoint => ({
    id: 'stripe-main',
    merchantAccountId: PLATFORM,
    apiKey: STRIPE_STUB_KEY,
    apiBaseUrl: stub.baseUrl,
    settings: {},
    ...over,
  });
  const amount = (minor: number) => ({ minor: BigInt(minor), decimal: (minor / 100).toFixed(2), currency: 'EUR' });
  const target = (p: StripeStubPayment, account = PLATFORM): CommandTarget => ({
    providerPaymentId: p.id,
    merchantAccountId: account,
    amount: amount(p.amount),
    captureIds: [],
  });
  const context = (key: string, over: Partial<CommandContext> = {}): CommandContext => ({ endpoint: endpoint(), idempotencyKey: key, timeoutMs: 5_000, ...over });
  const refund = (minor: number, reason: string | null = 'damaged in transit', refundId = '0190a8e4-aaaa-7e3f-8a4b-5c6d7e8f9a01'): PaymentCommand => ({
    type: 'refund',
    refundId,
    amount: amount(minor),
    reason,
  });

  it('is the stripe adapter\'s commands member, and takes refunds, captures and voids', () => {
    expect(stripeProvider.commands).toBe(stripeCommands);
    expect(stripeCommands.types).toEqual(['refund', 'capture', 'void']);
  });

  it('ready: only an endpoint with an apiKey; without one a command is refused, never sent', async () => {
    expect(stripeCommands.ready(endpoint())).toBe(true);
    const bare = endpoint({ apiKey: undefined });
    expect(stripeCommands.ready(bare)).toBe(false);
    const p = stripe.addPayment();
    await expect(stripeCommands.send(refund(700), target(p), context('r-1', { endpoint: bare }))).resolves.toEqual({
      ok: false,
      retryable: false,
      reason: 'endpoint "stripe-main" has no Stripe apiKey',
    });
    expect(stub.requests).toHaveLength(0);
  });

  it('a refund: refunds.create with the key as Idempotency-Key, the amount in minor units, the reason in metadata', async () => {
    const p = stripe.addPayment({ amount: 4990 });
    const answer = await stripeCommands.send(refund(700), target(p), context('0190a8e4-aaaa-7e3f-8a4b-5c6d7e8f9a01'));
    const [made] = [...stripe.refunds.values()];
    expect(made.id).toMatch(/^re_[A-Za-z0-9]{20,}$/);
    expect(answer).toEqual({ ok: true, providerRefundId: made.id, status: 'succeeded' });
    expect(stub.requests).toHaveLength(1);
    const [request] = stub.requests;
    expect(request).toMatchObject({ method: 'POST', path: '/v1/refunds', key: '0190a8e4-aaaa-7e3f-8a4b-5c6d7e8f9a01', status: 200 });
    expect(request.headers['idempotency-key']).toBe('0190a8e4-aaaa-7e3f-8a4b-5c6d7e8f9a01');
    expect(request.headers.authorization).toBe(`Bearer ${STRIPE_STUB_KEY}`);
    expect(request.headers['stripe-account']).toBeUndefined();
    expect(Object.fromEntries(new URLSearchParams(request.text))).toEqual({ payment_intent: p.id, amount: '700', 'metadata[reason]': 'damaged in transit' });
    expect(stub.effects).toEqual([{ kind: 'refund', key: '0190a8e4-aaaa-7e3f-8a4b-5c6d7e8f9a01', detail: { id: made.id, paymentIntent: p.id, amount: 700, account: null, metadata: { reason: 'damaged in transit' } } }]);
  });

  it('a refund without a reason sends no metadata', async () => {
    const p = stripe.addPayment();
    await stripeCommands.send(refund(100, null), target(p), context('r-2'));
    expect(Object.fromEntries(new URLSearchParams(stub.requests[0].text))).toEqual({ payment_intent: p.id, amount: '100' });
  });

  it('a refund Stripe answers pending is accepted pending; failed at once is refused for good with its failure_reason', async () => {
    const p = stripe.addPayment();
    stripe.refundStatus = 'pending';
    const pending = await stripeCommands.send(refund(100), target(p), context('r-pending'));
    const pendingId = [...stripe.refunds.keys()][0];
    expect(pending).toEqual({ ok: true, providerRefundId: pendingId, status: 'pending' });
    stripe.refundStatus = 'failed';
    const failed = await stripeCommands.send(refund(100), target(p), context('r-failed'));
    const failedId = [...stripe.refunds.keys()][1];
    expect(failed).toEqual({ ok: false, retryable: false, reason: `refund ${failedId} failed: expired_or_canceled_card` });
  });

  it('the same key again (a worker that crashed after the call): the first refund answered, one effect', async () => {
    const p = stripe.addPayment();
    const first = await stripeCommands.send(refund(700), target(p), context('r-same'));
    const again = await stripeCommands.send(refund(700), target(p), context('r-same'));
    expect(again).toEqual(first);
    expect(first).toMatchObject({ ok: true, status: 'succeeded' });
    expect(stub.requests.map((r) => [r.key, r.status])).toEqual([['r-same', 200], ['r-same', 200]]);
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('the key still in flight (409): retryable, may have happened; the first one makes the refund', async () => {
    const p = stripe.addPayment();
    const held = stub.holdNext('before');
    const first = stripeCommands.send(refund(700), target(p), context('r-flight'));
    await held.arrived;
    const second = await stripeCommands.send(refund(700), target(p), context('r-flight'));
    // The stub answers an in-flight key with a body of no Stripe message: the status says it all.
    expect(second).toEqual({ ok: false, retryable: true, reason: '409: the Stripe API failed', mayHaveHappened: true });
    held.release();
    await expect(first).resolves.toMatchObject({ ok: true, status: 'succeeded' });
    expect(stub.requests.map((r) => [r.key, r.status])).toEqual([['r-flight', 409], ['r-flight', 200]]);
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('429 with Retry-After: retryable not before it says, nothing happened; the retry under the same key makes it', async () => {
    const p = stripe.addPayment();
    stub.failNext({ status: 429, retryAfter: '7', body: { error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests hit the API too quickly.' } } });
    const limited = await stripeCommands.send(refund(700), target(p), context('r-429'));
    expect(limited).toEqual({ ok: false, retryable: true, reason: '429: Too many requests hit the API too quickly.', retryAfterMs: 7_000, mayHaveHappened: false });
    expect(stub.effectsOf('refund')).toBe(0);
    await expect(stripeCommands.send(refund(700), target(p), context('r-429'))).resolves.toMatchObject({ ok: true });
    expect(stub.requests.map((r) => [r.key, r.status])).toEqual([['r-429', 429], ['r-429', 200]]);
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('5xx: retryable, may have happened', async () => {
    const p = stripe.addPayment();
    stub.failNext({ status: 503, body: { error: { type: 'api_error', message: 'Stripe is temporarily unavailable.' } } });
    await expect(stripeCommands.send(refund(700), target(p), context('r-503'))).resolves.toEqual({
      ok: false,
      retryable: true,
      reason: '503: Stripe is temporarily unavailable.',
      mayHaveHappened: true,
    });
  });

  it("a 4xx refusal: not retryable, with Stripe's reason", async () => {
    const p = stripe.addPayment({ amount: 4990 });
    await expect(stripeCommands.send(refund(6000), target(p), context('r-400'))).resolves.toEqual({
      ok: false,
      retryable: false,
      reason: '400: Refund amount (EUR 60.00) is greater than unrefunded amount on charge (EUR 49.90)',
    });
    expect(stub.effectsOf('refund')).toBe(0);
  });

  it('a dropped connection: retryable, may have happened; the retry under the same key makes one refund', async () => {
    const p = stripe.addPayment();
    stub.failNext({ drop: true });
    const dropped = await stripeCommands.send(refund(700), target(p), context('r-drop'));
    expect(dropped).toEqual({
      ok: false,
      retryable: true,
      reason: 'An error occurred with our connection to Stripe.',
      mayHaveHappened: true,
    });
    await expect(stripeCommands.send(refund(700), target(p), context('r-drop'))).resolves.toMatchObject({ ok: true });
    expect(stub.requests.map((r) => [r.key, r.status])).toEqual([['r-drop', 0], ['r-drop', 200]]);
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it("no answer within the call's timeoutMs: retryable, may have happened (the client retries nothing itself)", async () => {
    const p = stripe.addPayment();
    // The endpoint's client is made by a call of a longer timeout: each call's own applies.
    const same = endpoint();
    await expect(stripeCommands.send(refund(100), target(p), context('r-fast', { endpoint: same, timeoutMs: 10_000 }))).resolves.toMatchObject({ ok: true });
    stub.requests.length = 0;
    const held = stub.holdNext('before');
    const answer = await stripeCommands.send(refund(700), target(p), context('r-slow', { endpoint: same, timeoutMs: 300 }));
    expect(answer).toEqual({ ok: false, retryable: true, reason: 'Request aborted due to timeout being reached (300ms)', mayHaveHappened: true });
    await held.arrived;
    expect(stub.requests).toHaveLength(0); // the held request only: never a second attempt of the client's
    held.release();
  });

  it('a capture: paymentIntents.capture with amount_to_capture, the key as Idempotency-Key', async () => {
    const p = stripe.addPayment({ status: 'requires_capture', amount: 4990 });
    const key = `0190a8e4-pppp-7e3f-8a4b-5c6d7e8f9a01:capture`;
    await expect(stripeCommands.send({ type: 'capture', amount: amount(4000) }, target(p), context(key))).resolves.toEqual({ ok: true });
    expect(stub.requests).toHaveLength(1);
    expect(stub.requests[0]).toMatchObject({ path: `/v1/payment_intents/${p.id}/capture`, key, status: 200 });
    expect(Object.fromEntries(new URLSearchParams(stub.requests[0].text))).toEqual({ amount_to_capture: '4000' });
    expect(stub.effects).toEqual([{ kind: 'capture', key, detail: { paymentIntent: p.id, amount: 4000, account: null } }]);
    // Captured already: Stripe refuses, for good.
    await expect(stripeCommands.send({ type: 'capture', amount: amount(4000) }, target(p), context('other:capture'))).resolves.toEqual({
      ok: false,
      retryable: false,
      reason:
        "400: This PaymentIntent's amount could not be captured because it has a status of succeeded. Only a PaymentIntent with one of the following statuses may be captured: requires_capture.",
    });
  });

  it('a void: paymentIntents.cancel with the key as Idempotency-Key', async () => {
    const p = stripe.addPayment({ status: 'requires_capture' });
    const key = '0190a8e4-pppp-7e3f-8a4b-5c6d7e8f9a01:void';
    await expect(stripeCommands.send({ type: 'void' }, target(p), context(key))).resolves.toEqual({ ok: true });
    expect(stub.requests[0]).toMatchObject({ path: `/v1/payment_intents/${p.id}/cancel`, key, status: 200 });
    expect(stub.effects).toEqual([{ kind: 'void', key, detail: { paymentIntent: p.id, account: null } }]);
  });

  it("on a Connect endpoint (many accounts): the payment's connected account as Stripe-Account", async () => {
    const p = stripe.addPayment({ account: CONNECTED });
    const connect = endpoint({ merchantAccountId: null });
    const answer = await stripeCommands.send(refund(700), target(p, CONNECTED), context('r-connect', { endpoint: connect }));
    expect(answer).toMatchObject({ ok: true, status: 'succeeded' });
    expect(stub.requests[0].headers['stripe-account']).toBe(CONNECTED);
    expect(stub.effects[0].detail).toMatchObject({ account: CONNECTED });
  });

  it('a key Stripe does not take: refused for good, with the key masked as Stripe masks it; a changed key is used at once', async () => {
    const p = stripe.addPayment();
    const wrong = 'sk_test_51WrongKey000000000000000000000000000wxyz';
    const same = endpoint({ apiKey: wrong });
    await expect(stripeCommands.send(refund(700), target(p), context('r-wrong', { endpoint: same }))).resolves.toEqual({
      ok: false,
      retryable: false,
      reason: '401: Invalid API Key provided: sk_test_****wxyz',
    });
    // The endpoint's client was made with the old key: a new one is made with the new key.
    same.apiKey = STRIPE_STUB_KEY;
    await expect(stripeCommands.send(refund(700), target(p), context('r-right', { endpoint: same }))).resolves.toMatchObject({ ok: true });
    expect(stub.requests.map((r) => [r.headers.authorization, r.status])).toEqual([[`Bearer ${wrong}`, 401], [`Bearer ${STRIPE_STUB_KEY}`, 200]]);
  });

  it('the API key never reaches a reason, even when the answer quotes it', async () => {
    const p = stripe.addPayment();
    stub.failNext({ status: 401, body: { error: { type: 'invalid_request_error', message: `Invalid API Key provided: ${STRIPE_STUB_KEY}` } } });
    const refused = await stripeCommands.send(refund(700), target(p), context('r-401'));
    expect(refused).toEqual({ ok: false, retryable: false, reason: '401: Invalid API Key provided: [redacted]' });
    stub.failNext({ status: 500, body: { error: { type: 'api_error', message: `upstream said ${STRIPE_STUB_KEY} twice: ${STRIPE_STUB_KEY}` } } });
    const failed = await stripeCommands.send(refund(700), target(p), context('r-500'));
    expect(failed).toEqual({ ok: false, retryable: true, reason: '500: upstream said [redacted] twice: [redacted]', mayHaveHappened: true });
  });

  it("the stub's webhook confirms the refund by its id, through the adapter's normalize", async () => {
    const p = stripe.addPayment({ amount: 4990 });
    const answer = await stripeCommands.send(refund(700), target(p), context('r-hook'));
    const refundId = answer.ok ? answer.providerRefundId! : '';
    const current = JSON.parse(stripeRefundWebhook(stripe, refundId).body);
    expect(stripeProvider.normalize(current, 'charge.refunded')).toMatchObject({ kind: 'refunded', resourceId: p.id, refundedAmount: { form: 'minor', value: 700 } });
    const updated = JSON.parse(stripeRefundWebhook(stripe, refundId, { type: 'refund.updated' }).body);
    expect(stripeProvider.normalize(updated, 'refund.updated')).toMatchObject({ kind: 'refund_outcome', resourceId: p.id, refundOutcomes: [{ id: refundId, status: 'succeeded' }] });
    const old = JSON.parse(stripeRefundWebhook(stripe, refundId, { apiVersion: '2020-08-27' }).body);
    expect(stripeProvider.normalize(old, 'charge.refunded')?.refundOutcomes).toEqual([{ id: refundId, status: 'succeeded' }]);
    const failed = JSON.parse(stripeRefundWebhook(stripe, refundId, { type: 'refund.failed' }).body);
    expect(stripeProvider.normalize(failed, 'refund.failed')?.refundOutcomes).toEqual([{ id: refundId, status: 'failed', reason: 'declined' }]);
  });
});
