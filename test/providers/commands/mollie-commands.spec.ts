import { createMollieCommands, mollieCommands } from '../../../src/providers/mollie.commands';
import { mollieProvider, paymentEvent } from '../../../src/providers/mollie.provider';
import type { CommandContext, CommandTarget, PaymentCommand, ProviderEndpoint } from '../../../src/providers/provider';
import { ProviderApiStub } from '../../support/provider-api-stub';
import { addMollieApi, MollieApi, mollieHint, mollieRefundSettled } from '../../support/provider-stubs/mollie';

/*
 * Mollie's payment commands through the real @mollie/api-client, against a local stub of the
 * Payments API over HTTPS (CONTRACT §3.1): where the key goes, what a repeat does, and how every
 * kind of answer is read.
 */
describe('mollie commands (through @mollie/api-client)', () => {
  let stub: ProviderApiStub;
  let api: MollieApi;
  let endpoint: ProviderEndpoint;

  beforeEach(async () => {
    stub = await new ProviderApiStub({ tls: true }).start();
    api = addMollieApi(stub);
    endpoint = { id: 'mollie-main', merchantAccountId: 'pfl_StubProf01', apiKey: api.apiKey, apiBaseUrl: stub.baseUrl, settings: {} };
  });
  afterEach(() => stub.stop());

  const eur = (decimal: string) => ({ minor: BigInt(decimal.replace('.', '')), decimal, currency: 'EUR' });
  const target = (providerPaymentId: string): CommandTarget => ({ providerPaymentId, merchantAccountId: 'pfl_StubProf01', amount: eur('49.90'), captureIds: [] });
  const context = (idempotencyKey: string, over: Partial<CommandContext> = {}): CommandContext => ({ endpoint, idempotencyKey, timeoutMs: 5_000, ...over });
  const refund = (decimal: string, reason: string | null = 'Damaged on arrival'): PaymentCommand => ({ type: 'refund', refundId: 'rf-1', amount: eur(decimal), reason });
  const writes = () => stub.requests.filter((r) => r.method !== 'GET');

  it('takes refunds, captures and voids; ready only with an API key', () => {
    expect(mollieCommands.types).toEqual(['refund', 'capture', 'void']);
    expect(mollieCommands.ready(endpoint)).toBe(true);
    expect(mollieCommands.ready({ ...endpoint, apiKey: undefined })).toBe(false);
    expect(mollieCommands.ready({ ...endpoint, apiKey: '' })).toBe(false);
    expect(mollieProvider.commands).toBe(mollieCommands);
  });

  it('a refund: paymentRefunds.create with the key as Idempotency-Key, the amount as Mollie writes it, the reason as description', async () => {
    const paymentId = api.addPayment();
    const answer = await mollieCommands.send(refund('10.00'), target(paymentId), context('0190a1b2-refund-1'));
    const [made] = [...api.refunds.values()];
    expect(answer).toEqual({ ok: true, providerRefundId: made.id, status: 'pending' });
    expect(made.id).toMatch(/^re_[A-Za-z0-9]{10}$/);
    expect(writes()).toHaveLength(1);
    expect(writes()[0]).toMatchObject({ method: 'POST', path: `/v2/payments/${paymentId}/refunds`, key: '0190a1b2-refund-1', status: 201 });
    expect(writes()[0].headers['idempotency-key']).toBe('0190a1b2-refund-1');
    expect(writes()[0].headers.authorization).toBe(`Bearer ${api.apiKey}`);
    expect(writes()[0].json).toEqual({ amount: { currency: 'EUR', value: '10.00' }, description: 'Damaged on arrival' });
    expect(stub.effects).toEqual([
      { kind: 'refund', key: '0190a1b2-refund-1', detail: { paymentId, refundId: made.id, amount: '10.00', currency: 'EUR', description: 'Damaged on arrival' } },
    ]);
  });

  it('a refund without a reason sends no description', async () => {
    const paymentId = api.addPayment();
    await mollieCommands.send(refund('1.00', null), target(paymentId), context('k-no-reason'));
    expect(writes()[0].json).toEqual({ amount: { currency: 'EUR', value: '1.00' } });
  });

  it('a repeat of the key (a worker that crashed after the call) answers the first refund again: one effect', async () => {
    const paymentId = api.addPayment();
    const first = await mollieCommands.send(refund('10.00'), target(paymentId), context('k-repeat'));
    const again = await mollieCommands.send(refund('10.00'), target(paymentId), context('k-repeat'));
    expect(again).toEqual(first);
    expect(first).toMatchObject({ ok: true, providerRefundId: expect.stringMatching(/^re_/) });
    expect(stub.effectsOf('refund')).toBe(1);
    expect(writes().map((r) => [r.key, r.status])).toEqual([
      ['k-repeat', 201],
      ['k-repeat', 201],
    ]);
  });

  it('a refund Mollie already reports refunded is succeeded', async () => {
    const paymentId = api.addPayment();
    api.newRefundStatus = 'refunded';
    const answer = await mollieCommands.send(refund('5.00'), target(paymentId), context('k-done'));
    expect(answer).toEqual({ ok: true, providerRefundId: [...api.refunds.keys()][0], status: 'succeeded' });
  });

  it('a capture: paymentCaptures.create with the key and the amount; a void: payments.cancel with the key', async () => {
    const authorized = api.addPayment({ status: 'authorized' });
    expect(await mollieCommands.send({ type: 'capture', amount: eur('49.90') }, target(authorized), context(`${authorized}:capture`))).toEqual({ ok: true });
    const other = api.addPayment({ status: 'authorized' });
    expect(await mollieCommands.send({ type: 'void' }, target(other), context(`${other}:void`))).toEqual({ ok: true });
    expect(writes().map((r) => [r.method, r.path, r.key, r.status])).toEqual([
      ['POST', `/v2/payments/${authorized}/captures`, `${authorized}:capture`, 201],
      ['DELETE', `/v2/payments/${other}`, `${other}:void`, 200],
    ]);
    expect(writes()[0].json).toEqual({ amount: { currency: 'EUR', value: '49.90' } });
    expect(stub.effects.map((e) => [e.kind, e.key])).toEqual([
      ['capture', `${authorized}:capture`],
      ['void', `${other}:void`],
    ]);
  });

  it('the same key still in flight at Mollie: 409, retryable, may have happened', async () => {
    const paymentId = api.addPayment();
    const held = stub.holdNext('before');
    const first = mollieCommands.send(refund('10.00'), target(paymentId), context('k-inflight'));
    await held.arrived;
    const second = await mollieCommands.send(refund('10.00'), target(paymentId), context('k-inflight'));
    expect(second).toEqual({ ok: false, retryable: true, reason: '409: Received an error without a message', mayHaveHappened: true });
    held.release();
    expect(await first).toMatchObject({ ok: true, status: 'pending' });
    expect(stub.effectsOf('refund')).toBe(1);
    expect(writes().map((r) => [r.key, r.status])).toEqual([
      ['k-inflight', 409],
      ['k-inflight', 201],
    ]);
  });

  it('429 with Retry-After: retryable after that long, read from the answer the client hides', async () => {
    const paymentId = api.addPayment();
    stub.failNext({ status: 429, retryAfter: '30', body: { status: 429, title: 'Too Many Requests', detail: 'You have exceeded the rate limit' } });
    const answer = await mollieCommands.send(refund('10.00'), target(paymentId), context('k-429'));
    expect(answer).toEqual({ ok: false, retryable: true, reason: '429: You have exceeded the rate limit', retryAfterMs: 30_000, mayHaveHappened: false });
    // The same key on the outbox's next attempt: the refund is made once.
    expect(await mollieCommands.send(refund('10.00'), target(paymentId), context('k-429'))).toMatchObject({ ok: true });
    expect(writes().map((r) => [r.key, r.status])).toEqual([
      ['k-429', 429],
      ['k-429', 201],
    ]);
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('a 5xx: retryable at once, and the client\'s own retry is never sent (the outbox retries, with the same key)', async () => {
    const paymentId = api.addPayment();
    stub.failNext({ status: 503, retryAfter: '1', body: { status: 503, title: 'Service Unavailable', detail: 'Please try again later' } });
    const started = Date.now();
    const answer = await mollieCommands.send(refund('10.00'), target(paymentId), context('k-503'));
    expect(answer).toEqual({ ok: false, retryable: true, reason: '503: Mollie answered 503', retryAfterMs: 1_000, mayHaveHappened: true });
    // Without the watch the client pauses (the Retry-After, else 2 s) and sends the request again.
    expect(Date.now() - started).toBeLessThan(900);
    const deadline = Date.now() + 2_500;
    while (Date.now() < deadline && stub.requests.length === 1) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(writes().map((r) => [r.key, r.status])).toEqual([['k-503', 503]]);
    expect(await mollieCommands.send(refund('10.00'), target(paymentId), context('k-503'))).toMatchObject({ ok: true });
    expect(writes().map((r) => [r.key, r.status])).toEqual([
      ['k-503', 503],
      ['k-503', 201],
    ]);
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('a refusal (4xx): not retryable, with Mollie\'s reason and field', async () => {
    const paymentId = api.addPayment({ value: '20.00' });
    const answer = await mollieCommands.send(refund('25.00'), target(paymentId), context('k-too-much'));
    expect(answer).toEqual({ ok: false, retryable: false, reason: '422: The amount requested for refund exceeds the amount remaining (field amount)' });
    expect(stub.effectsOf('refund')).toBe(0);
    expect(await mollieCommands.send({ type: 'void' }, target('tr_NoSuchOne1'), context('k-unknown'))).toEqual({
      ok: false,
      retryable: false,
      reason: '404: No payment exists with token tr_NoSuchOne1.',
    });
  });

  it('a dropped connection: retryable, may have happened', async () => {
    const paymentId = api.addPayment();
    stub.failNext({ drop: true });
    const answer = await mollieCommands.send(refund('10.00'), target(paymentId), context('k-drop'));
    expect(answer).toMatchObject({ ok: false, retryable: true, mayHaveHappened: true });
    expect(answer).not.toHaveProperty('retryAfterMs');
    expect((answer as { reason: string }).reason).toMatch(/^request to https:\/\/127\.0\.0\.1:\d+\/v2\/payments\/tr_\w+\/refunds failed, reason: socket hang up$/);
    expect(stub.effectsOf('refund')).toBe(0);
  });

  it('no answer within the timeout: retryable, may have happened; the request is ended', async () => {
    const paymentId = api.addPayment();
    const held = stub.holdNext('after');
    const answer = await mollieCommands.send(refund('10.00'), target(paymentId), context('k-slow', { timeoutMs: 300 }));
    expect(answer).toEqual({ ok: false, retryable: true, reason: 'Mollie did not answer within 300 ms', mayHaveHappened: true });
    await held.arrived;
    held.release();
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('the API key is in no reason, whatever Mollie answers', async () => {
    const paymentId = api.addPayment();
    const reasons: string[] = [];
    const wrongKey = { ...endpoint, id: 'mollie-wrong', apiKey: 'test_wrongKeyAb12Cd34Ef56Gh78' };
    reasons.push(((await mollieCommands.send(refund('1.00'), target(paymentId), { endpoint: wrongKey, idempotencyKey: 'k-401', timeoutMs: 5_000 })) as { reason: string }).reason);
    stub.failNext({ status: 500, body: { status: 500, title: 'Internal Server Error', detail: `key ${api.apiKey} broke` } });
    reasons.push(((await mollieCommands.send(refund('1.00'), target(paymentId), context('k-500'))) as { reason: string }).reason);
    stub.failNext({ status: 400, body: { status: 400, title: 'Bad Request', detail: `Invalid key ${api.apiKey}` } });
    reasons.push(((await mollieCommands.send(refund('1.00'), target(paymentId), context('k-400'))) as { reason: string }).reason);
    expect(reasons).toEqual(['401: Missing authentication, or failed to authenticate', '500: Mollie answered 500', '400: Invalid key [redacted]']);
    for (const reason of reasons) expect(reason).not.toContain(api.apiKey);
  });

  it('an endpoint without an API key is not ready, and a send answers so without a call', async () => {
    const bare = { ...endpoint, apiKey: undefined };
    expect(mollieCommands.ready(bare)).toBe(false);
    expect(await mollieCommands.send(refund('1.00'), target('tr_x'), { endpoint: bare, idempotencyKey: 'k', timeoutMs: 1_000 })).toEqual({
      ok: false,
      retryable: false,
      reason: 'endpoint "mollie-main" has no Mollie API key',
    });
    expect(stub.requests).toEqual([]);
  });

  it('the stub\'s payment after a refund settled is what the adapter reads as that refund\'s confirmation (or failure)', async () => {
    const paymentId = api.addPayment({ orderId: 'ord-1' });
    const answer = await mollieCommands.send(refund('10.00'), target(paymentId), context('k-confirm'));
    const refundId = (answer as { providerRefundId: string }).providerRefundId;
    expect(mollieHint(paymentId)).toBe(`id=${paymentId}`);
    const read = () => {
      const event = paymentEvent(paymentId, api.payment(paymentId));
      return mollieProvider.normalize(JSON.parse(event.body), event.eventType);
    };
    expect(read()).toMatchObject({ kind: 'refunded', refundedAmount: { form: 'decimal', value: '10.00' } });
    expect(read()).not.toHaveProperty('refundOutcomes');
    mollieRefundSettled(api, refundId, 'refunded');
    expect(read()?.refundOutcomes).toEqual([{ id: refundId, status: 'succeeded' }]);
    mollieRefundSettled(api, refundId, 'failed');
    expect(read()?.refundOutcomes).toEqual([{ id: refundId, status: 'failed', reason: 'Mollie refund failed' }]);
  });

  it('without @mollie/api-client installed: refused, naming the package, without a call', async () => {
    const missing = createMollieCommands(() => null);
    expect(await missing.send(refund('1.00'), target('tr_x'), context('k-missing'))).toEqual({
      ok: false,
      retryable: false,
      reason: 'the @mollie/api-client package is not installed: npm install @mollie/api-client',
    });
    expect(stub.requests).toEqual([]);
  });
});
