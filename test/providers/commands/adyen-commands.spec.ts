import { adyenCommands, adyenFailure, createAdyenCommands } from '../../../src/providers/adyen.commands';
import { adyenProvider } from '../../../src/providers/adyen.provider';
import type { CommandContext, CommandTarget, PaymentCommand, ProviderEndpoint } from '../../../src/providers/provider';
import { ProviderApiStub } from '../../support/provider-api-stub';
import { ADYEN_STUB_KEY, addAdyenRoutes, AdyenStub, AdyenStubPayment, adyenRefundNotification } from '../../support/provider-stubs/adyen';

/**
 * Adyen's payment commands through the official `@adyen/api-library` (its Checkout API's
 * ModificationsApi) against a local stand-in of the Checkout API over HTTPS (CONTRACT §3.1,
 * docs/commands.md#adyen): where the key goes, what each answer becomes, and that a retry under
 * the same key makes one refund.
 */
describe('adyen commands through the official library', () => {
  let stub: ProviderApiStub;
  let adyen: AdyenStub;
  const HMAC_KEY = 'A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F90';
  const REFUND_ID = '0190a8e4-aaaa-7e3f-8a4b-5c6d7e8f9a01';

  beforeEach(async () => {
    stub = await new ProviderApiStub({ tls: true }).start();
    adyen = addAdyenRoutes(stub);
  });
  afterEach(() => stub.stop());

  const endpoint = (over: Partial<ProviderEndpoint> = {}): ProviderEndpoint => ({
    id: 'adyen-main',
    merchantAccountId: 'ShopEU',
    apiKey: ADYEN_STUB_KEY,
    apiBaseUrl: stub.baseUrl,
    settings: {},
    ...over,
  });
  const amount = (minor: number) => ({ minor: BigInt(minor), decimal: (minor / 100).toFixed(2), currency: 'EUR' });
  const target = (p: AdyenStubPayment): CommandTarget => ({ providerPaymentId: p.pspReference, merchantAccountId: p.merchantAccount, amount: amount(p.value), captureIds: [] });
  const context = (key: string, over: Partial<CommandContext> = {}): CommandContext => ({ endpoint: endpoint(), idempotencyKey: key, timeoutMs: 5_000, ...over });
  const refund = (minor: number, refundId = REFUND_ID): PaymentCommand => ({ type: 'refund', refundId, amount: amount(minor), reason: 'damaged in transit' });
  const pspOf = (answer: Awaited<ReturnType<typeof adyenCommands.send>>) => (answer.ok ? answer.providerRefundId! : '');

  it("is the adyen adapter's commands member, and takes refunds, captures and voids", () => {
    expect(adyenProvider.commands).toBe(adyenCommands);
    expect(adyenCommands.types).toEqual(['refund', 'capture', 'void']);
  });

  it('ready: only an endpoint with an apiKey; without one a command is refused, never sent', async () => {
    expect(adyenCommands.ready(endpoint())).toBe(true);
    const bare = endpoint({ apiKey: undefined });
    expect(adyenCommands.ready(bare)).toBe(false);
    const p = adyen.addPayment();
    await expect(adyenCommands.send(refund(700), target(p), context(REFUND_ID, { endpoint: bare }))).resolves.toEqual({
      ok: false,
      retryable: false,
      reason: 'endpoint "adyen-main" has no Adyen apiKey',
    });
    expect(stub.requests).toHaveLength(0);
  });

  it('a refund: refundCapturedPayment at the endpoint\'s apiBaseUrl, the key as Idempotency-Key, the merchant account, the amount in minor units; pending under its pspReference', async () => {
    const p = adyen.addPayment({ value: 4990 });
    const answer = await adyenCommands.send(refund(700), target(p), context(REFUND_ID));
    const [made] = [...adyen.modifications.values()];
    expect(made.pspReference).toMatch(/^[A-Z0-9]{16}$/);
    expect(answer).toEqual({ ok: true, providerRefundId: made.pspReference, status: 'pending' });
    expect(stub.requests).toHaveLength(1);
    const [request] = stub.requests;
    expect(request).toMatchObject({ method: 'POST', path: `/v72/payments/${p.pspReference}/refunds`, key: REFUND_ID, status: 201 });
    expect(request.headers['idempotency-key']).toBe(REFUND_ID);
    expect(request.headers['x-api-key']).toBe(ADYEN_STUB_KEY);
    expect(request.json).toEqual({ merchantAccount: 'ShopEU', amount: { value: 700, currency: 'EUR' }, reference: REFUND_ID });
    expect(stub.effects).toEqual([
      { kind: 'refund', key: REFUND_ID, detail: { pspReference: made.pspReference, payment: p.pspReference, merchantAccount: 'ShopEU', reference: REFUND_ID, value: 700, currency: 'EUR' } },
    ]);
  });

  it('the same key again (a worker that crashed after the call): the first pspReference answered, one effect', async () => {
    const p = adyen.addPayment();
    const first = await adyenCommands.send(refund(700), target(p), context(REFUND_ID));
    const again = await adyenCommands.send(refund(700), target(p), context(REFUND_ID));
    expect(again).toEqual(first);
    expect(pspOf(first)).toMatch(/^[A-Z0-9]{16}$/);
    expect(stub.requests.map((r) => [r.key, r.status])).toEqual([[REFUND_ID, 201], [REFUND_ID, 201]]);
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('the key still in flight (409): retryable, may have happened; the first one makes the refund', async () => {
    const p = adyen.addPayment();
    const held = stub.holdNext('before');
    const first = adyenCommands.send(refund(700), target(p), context(REFUND_ID));
    await held.arrived;
    const second = await adyenCommands.send(refund(700), target(p), context(REFUND_ID));
    expect(second).toEqual({ ok: false, retryable: true, reason: '409: HTTP Exception: 409. Conflict', mayHaveHappened: true });
    held.release();
    await expect(first).resolves.toMatchObject({ ok: true, status: 'pending' });
    expect(stub.requests.map((r) => [r.key, r.status])).toEqual([[REFUND_ID, 409], [REFUND_ID, 201]]);
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('429 with Retry-After: retryable not before it says, nothing happened; the retry under the same key makes it', async () => {
    const p = adyen.addPayment();
    stub.failNext({ status: 429, retryAfter: '12' });
    const limited = await adyenCommands.send(refund(700), target(p), context(REFUND_ID));
    expect(limited).toEqual({ ok: false, retryable: true, reason: '429: HTTP Exception: 429. Too Many Requests', retryAfterMs: 12_000, mayHaveHappened: false });
    expect(stub.effectsOf('refund')).toBe(0);
    await expect(adyenCommands.send(refund(700), target(p), context(REFUND_ID))).resolves.toMatchObject({ ok: true });
    expect(stub.requests.map((r) => [r.key, r.status])).toEqual([[REFUND_ID, 429], [REFUND_ID, 201]]);
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it("5xx: retryable, may have happened, with Adyen's message", async () => {
    const p = adyen.addPayment();
    stub.failNext({ status: 500, body: { status: 500, errorCode: '905', message: 'Internal error', errorType: 'internal' } });
    await expect(adyenCommands.send(refund(700), target(p), context(REFUND_ID))).resolves.toEqual({
      ok: false,
      retryable: true,
      reason: '500: Internal error (errorCode 905)',
      mayHaveHappened: true,
    });
  });

  it("a 4xx refusal: not retryable, with Adyen's message and error code", async () => {
    const p = adyen.addPayment({ merchantAccount: 'ShopUS' });
    await expect(adyenCommands.send(refund(700), { ...target(p), merchantAccountId: 'ShopEU' }, context(REFUND_ID))).resolves.toEqual({
      ok: false,
      retryable: false,
      reason: '403: Invalid Merchant Account (errorCode 901)',
    });
    await expect(adyenCommands.send(refund(700), { ...target(p), amount: amount(700), merchantAccountId: 'ShopUS' }, context('other', {}))).resolves.toMatchObject({ ok: true });
    await expect(
      adyenCommands.send({ ...refund(700), amount: { ...amount(700), currency: 'USD' } } as PaymentCommand, target(p), context('in-usd')),
    ).resolves.toEqual({ ok: false, retryable: false, reason: '422: Invalid amount specified (errorCode 137)' });
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('a dropped connection: retryable, may have happened; the retry under the same key makes one refund', async () => {
    const p = adyen.addPayment();
    stub.failNext({ drop: true });
    const dropped = await adyenCommands.send(refund(700), target(p), context(REFUND_ID));
    expect(dropped).toEqual({ ok: false, retryable: true, reason: 'socket hang up', mayHaveHappened: true });
    await expect(adyenCommands.send(refund(700), target(p), context(REFUND_ID))).resolves.toMatchObject({ ok: true });
    expect(stub.requests.map((r) => [r.key, r.status])).toEqual([[REFUND_ID, 0], [REFUND_ID, 201]]);
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('no answer within timeoutMs: retryable, may have happened (the library retries nothing itself)', async () => {
    const p = adyen.addPayment();
    const held = stub.holdNext('before');
    const answer = await adyenCommands.send(refund(700), target(p), context(REFUND_ID, { timeoutMs: 300 }));
    expect(answer).toEqual({ ok: false, retryable: true, reason: 'socket hang up', mayHaveHappened: true });
    await held.arrived;
    expect(stub.requests).toHaveLength(0); // only the held request: no second attempt of the library's
    held.release();
  });

  it('a capture: captureAuthorisedPayment with the amount, the key as Idempotency-Key', async () => {
    const p = adyen.addPayment({ status: 'authorised', value: 4990 });
    const key = '0190a8e4-pppp-7e3f-8a4b-5c6d7e8f9a01:capture';
    await expect(adyenCommands.send({ type: 'capture', amount: amount(4000) }, target(p), context(key))).resolves.toEqual({ ok: true });
    expect(stub.requests).toHaveLength(1);
    expect(stub.requests[0]).toMatchObject({ path: `/v72/payments/${p.pspReference}/captures`, key, status: 201 });
    expect(stub.requests[0].json).toEqual({ merchantAccount: 'ShopEU', amount: { value: 4000, currency: 'EUR' }, reference: key });
    expect(stub.effects).toEqual([{ kind: 'capture', key, detail: { pspReference: expect.stringMatching(/^[A-Z0-9]{16}$/), payment: p.pspReference, merchantAccount: 'ShopEU', reference: key, value: 4000, currency: 'EUR' } }]);
  });

  it('a void: cancelAuthorisedPaymentByPspReference, the key as Idempotency-Key', async () => {
    const p = adyen.addPayment({ status: 'authorised' });
    const key = '0190a8e4-pppp-7e3f-8a4b-5c6d7e8f9a01:void';
    await expect(adyenCommands.send({ type: 'void' }, target(p), context(key))).resolves.toEqual({ ok: true });
    expect(stub.requests[0]).toMatchObject({ path: `/v72/payments/${p.pspReference}/cancels`, key, status: 201 });
    expect(stub.requests[0].json).toEqual({ merchantAccount: 'ShopEU', reference: key });
    expect(stub.effectsOf('void')).toBe(1);
  });

  it('the API key never reaches a reason, even when the answer quotes it', async () => {
    const p = adyen.addPayment();
    stub.failNext({ status: 401, body: { status: 401, errorCode: '000', message: `Unauthorized key ${ADYEN_STUB_KEY}`, errorType: 'security' } });
    await expect(adyenCommands.send(refund(700), target(p), context(REFUND_ID))).resolves.toEqual({
      ok: false,
      retryable: false,
      reason: '401: Unauthorized key [redacted] (errorCode 000)',
    });
    // A key the stub does not take: refused, and the key is not in the reason.
    const wrong = 'AQEwrongkey0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000-wrong';
    const refused = await adyenCommands.send(refund(700), target(p), context('wrong-key', { endpoint: endpoint({ apiKey: wrong }) }));
    expect(refused).toEqual({ ok: false, retryable: false, reason: '401: HTTP Status Response - Unauthorized (errorCode 000)' });
    // No answer, a message that quotes the key: redacted too.
    expect(adyenFailure(new Error(`connect ECONNREFUSED with ${ADYEN_STUB_KEY}`), ADYEN_STUB_KEY)).toEqual({
      ok: false,
      retryable: true,
      reason: 'connect ECONNREFUSED with [redacted]',
      mayHaveHappened: true,
    });
  });

  it('the library missing: a command is refused naming the package to install', async () => {
    const missing = createAdyenCommands(() => {
      throw Object.assign(new Error("Cannot find module '@adyen/api-library'"), { code: 'MODULE_NOT_FOUND' });
    });
    const p = adyen.addPayment();
    await expect(missing.send(refund(700), target(p), context(REFUND_ID))).resolves.toEqual({
      ok: false,
      retryable: false,
      reason: 'adyen payment commands need the optional package @adyen/api-library, which is not installed: npm install @adyen/api-library',
    });
    expect(stub.requests).toHaveLength(0);
  });

  it("the stub's notification confirms the refund by its pspReference, or fails it with Adyen's reason, through the adapter", async () => {
    const p = adyen.addPayment({ value: 4990 });
    const ok = pspOf(await adyenCommands.send(refund(700), target(p), context(REFUND_ID)));
    const tooMuch = pspOf(await adyenCommands.send(refund(9000, 'r-2'), target(p), context('r-2')));
    const read = (psp: string, opts: { eventCode?: 'REFUND' | 'REFUND_FAILED' } = {}) => {
      const { item } = adyenRefundNotification(adyen, psp, { hmacKey: HMAC_KEY, ...opts });
      return adyenProvider.normalize(item, item.eventCode as string);
    };
    expect(read(ok)).toMatchObject({ kind: 'refunded', resourceId: p.pspReference, refund: { id: ok, amount: { form: 'minor', value: 700 } }, refundOutcomes: [{ id: ok, status: 'succeeded' }] });
    expect(read(tooMuch)).toMatchObject({ kind: 'refund_outcome', resourceId: p.pspReference, refundOutcomes: [{ id: tooMuch, status: 'failed', reason: 'Insufficient balance on payment' }] });
    expect(read(ok, { eventCode: 'REFUND_FAILED' })).toMatchObject({ kind: 'refund_outcome', refundOutcomes: [{ id: ok, status: 'failed', reason: 'Refund Failed' }] });
  });
});
