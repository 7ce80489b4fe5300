import { keyMark, paddleCommands } from '../../../src/providers/paddle.commands';
import { paddleProvider } from '../../../src/providers/paddle.provider';
import type { CommandAmount, CommandContext, CommandTarget, PaymentCommand, ProviderEndpoint } from '../../../src/providers/provider';
import { ProviderApiStub, type StubRequest } from '../../support/provider-api-stub';
import { addPaddleRoutes, paddleAdjustmentWebhook, paddleId, type PaddleStub } from '../../support/provider-stubs/paddle';

/**
 * Paddle's refunds (adjustments) through the real @paddle/paddle-node-sdk, against a local stub of
 * its API. Paddle's API takes no idempotency key: the key is carried in the reason and looked for first.
 */
const API_KEY = 'pdl_sdbx_apikey_01jq3kcbfsn9b7mnhv3p4pt0v2_Yj7gHzxXw0DcYb1ZpN4vVf_AQ3';
/** The published transaction.completed: 65215 USD, line items of 32662, 10887, … */
const WHOLE = 65215n;
const ADJ_ID = /^adj_01[a-z0-9]{24}$/;

const money = (minor: bigint, decimal: string): CommandAmount => ({ minor, decimal, currency: 'USD' });
const refund = (minor = 1200n, reason: string | null = 'damaged'): PaymentCommand => ({ type: 'refund', refundId: 'r1', amount: money(minor, 'x'), reason });

let stub: ProviderApiStub;
let paddle: PaddleStub;
let transactionId: string;
const target = (): CommandTarget => ({ providerPaymentId: transactionId, merchantAccountId: 'pdl', amount: money(WHOLE, '652.15'), captureIds: [] });
const endpoint = (extra: Partial<ProviderEndpoint> = {}): ProviderEndpoint => ({ id: 'pdl', merchantAccountId: 'pdl', apiKey: API_KEY, apiBaseUrl: stub.baseUrl, settings: {}, ...extra });
const context = (idempotencyKey: string, extra: Partial<CommandContext> = {}): CommandContext => ({ endpoint: endpoint(), idempotencyKey, timeoutMs: 5_000, ...extra });
const creates = (r: StubRequest) => r.method === 'POST' && r.path === '/adjustments';
const lists = (r: StubRequest) => r.method === 'GET' && r.path === '/adjustments';
const calls = () => stub.requests.map((r) => `${r.method} ${r.path} ${r.status}`);

beforeEach(async () => {
  stub = await new ProviderApiStub().start();
  paddle = addPaddleRoutes(stub);
  transactionId = paddleId('txn');
  paddle.addTransaction(transactionId);
});
afterEach(() => stub.stop());

describe('paddle commands: what is sent', () => {
  it('the whole transaction: list its refunds, then one adjustment { action: refund, type: full }, the key at the end of the reason; its id back, pending approval', async () => {
    const answer = await paddleCommands.send(refund(WHOLE), target(), context('key-1'));
    expect(answer).toEqual({ ok: true, providerRefundId: paddle.adjustments[0].id, status: 'pending' });
    expect(paddle.adjustments[0].id).toMatch(ADJ_ID);
    expect(calls()).toEqual(['GET /adjustments 200', 'POST /adjustments 201']);
    expect(new URL(stub.requests[0].url, 'http://x').searchParams.get('transaction_id')).toBe(transactionId);
    expect(new URL(stub.requests[0].url, 'http://x').searchParams.get('action')).toBe('refund');
    expect(stub.requests[1].json).toEqual({ action: 'refund', transaction_id: transactionId, reason: 'damaged [pw:key-1]', type: 'full' });
    expect(stub.requests[1].headers.authorization).toBe(`bearer ${API_KEY}`);
    expect(stub.effects).toEqual([{ kind: 'refund', key: 'key-1', detail: { id: paddle.adjustments[0].id, transactionId, type: 'full', total: '65215' } }]);
  });

  it('a part of it: the transaction read, the amount spread over its line items in order; no reason given: "refund"', async () => {
    const answer = await paddleCommands.send(refund(40000n, null), target(), context('key-2'));
    expect(answer).toEqual({ ok: true, providerRefundId: paddle.adjustments[0].id, status: 'pending' });
    expect(calls()).toEqual(['GET /adjustments 200', `GET /transactions/${transactionId} 200`, 'POST /adjustments 201']);
    const [first, second] = paddle.transactions.get(transactionId)!.details.line_items;
    expect(stub.requests[2].json).toEqual({
      action: 'refund',
      transaction_id: transactionId,
      reason: 'refund [pw:key-2]',
      type: 'partial',
      items: [
        { item_id: first.id, type: 'partial', amount: '32662' },
        { item_id: second.id, type: 'partial', amount: '7338' },
      ],
    });
  });

  it('a second part: what earlier refunds took of each line item is left out; the whole after a part is partial too', async () => {
    await paddleCommands.send(refund(32000n), target(), context('key-3a'));
    await paddleCommands.send(refund(1000n), target(), context('key-3b'));
    const [first, second] = paddle.transactions.get(transactionId)!.details.line_items;
    expect(stub.requests.filter(creates).map((r) => r.json.items)).toEqual([
      [{ item_id: first.id, type: 'partial', amount: '32000' }],
      [
        { item_id: first.id, type: 'partial', amount: '662' },
        { item_id: second.id, type: 'partial', amount: '338' },
      ],
    ]);
    expect(await paddleCommands.send(refund(WHOLE), target(), context('key-3c'))).toEqual({
      ok: false,
      retryable: false,
      reason: "the transaction's line items have 32215 (minor units) left to refund, less than 65215",
    });
    expect(stub.effectsOf('refund')).toBe(2);
  });

  it('an adjustment approved at once: succeeded', async () => {
    paddle.newStatus = 'approved';
    expect(await paddleCommands.send(refund(WHOLE), target(), context('key-4'))).toEqual({ ok: true, providerRefundId: paddle.adjustments[0].id, status: 'succeeded' });
  });

  it('the same key again (a worker that crashed after the call): the adjustment already made for it, found by its reason; no second one', async () => {
    const first = await paddleCommands.send(refund(1200n), target(), context('key-5'));
    const again = await paddleCommands.send(refund(1200n), target(), context('key-5'));
    expect(again).toEqual(first);
    expect(stub.effectsOf('refund')).toBe(1);
    expect(calls()).toEqual(['GET /adjustments 200', `GET /transactions/${transactionId} 200`, 'POST /adjustments 201', 'GET /adjustments 200']);
    // Another key is another refund.
    await paddleCommands.send(refund(1200n), target(), context('key-5b'));
    expect(stub.effects.map((e) => e.key)).toEqual(['key-5', 'key-5b']);
  });

  it('the key is found on a later page of the transaction\'s refunds', async () => {
    for (let i = 0; i < 55; i++) await paddleCommands.send(refund(10n), target(), context(`bulk-${i}`));
    stub.requests.length = 0;
    const again = await paddleCommands.send(refund(10n), target(), context('bulk-54'));
    expect(again).toEqual({ ok: true, providerRefundId: paddle.adjustments[54].id, status: 'pending' });
    expect(calls()).toEqual(['GET /adjustments 200', 'GET /adjustments 200']);
    expect(stub.effectsOf('refund')).toBe(55);
  });

  it('an adjustment for the key that Paddle rejected: refused, not retryable, nothing made again', async () => {
    await paddleCommands.send(refund(1200n), target(), context('key-6'));
    paddle.adjustments[0].status = 'rejected';
    expect(await paddleCommands.send(refund(1200n), target(), context('key-6'))).toEqual({ ok: false, retryable: false, reason: `Paddle rejected the refund (adjustment ${paddle.adjustments[0].id})` });
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('captures and voids: Paddle has none (types: refund only); refused before any call', async () => {
    expect(paddleCommands.types).toEqual(['refund']);
    expect(await paddleCommands.send({ type: 'capture', amount: money(WHOLE, '652.15') }, target(), context('c'))).toEqual({
      ok: false,
      retryable: false,
      reason: 'Paddle has no capture: a transaction is paid when it completes',
    });
    expect(await paddleCommands.send({ type: 'void' }, target(), context('v'))).toEqual({ ok: false, retryable: false, reason: 'Paddle has no void: a transaction is paid when it completes' });
    expect(stub.requests).toEqual([]);
  });
});

describe('paddle commands: how each failure is answered', () => {
  const error = (type: string, code: string, detail: string) => ({ error: { type, code, detail, documentation_url: `https://developer.paddle.com/v1/errors/shared/${code}` }, meta: { request_id: 'r' } });

  it("409 (Paddle's conflict, another change of the same transaction in flight): retryable, may have happened; the next attempt reads the refunds first", async () => {
    stub.failNext({ status: 409, body: error('request_error', 'conflict', 'Your request conflicts with another change.') }, creates);
    expect(await paddleCommands.send(refund(WHOLE), target(), context('key-7'))).toEqual({
      ok: false,
      retryable: true,
      mayHaveHappened: true,
      reason: '409: conflict: Your request conflicts with another change.',
    });
    expect(await paddleCommands.send(refund(WHOLE), target(), context('key-7'))).toEqual({ ok: true, providerRefundId: paddle.adjustments[0].id, status: 'pending' });
    expect(stub.requests.filter(creates).map((r) => r.json.reason)).toEqual(['damaged [pw:key-7]', 'damaged [pw:key-7]']);
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('429 with Retry-After: retryable, not before retryAfterMs', async () => {
    stub.failNext({ status: 429, retryAfter: '9', body: error('request_error', 'too_many_requests', 'Too many requests.') }, lists);
    expect(await paddleCommands.send(refund(WHOLE), target(), context('key-8'))).toEqual({
      ok: false,
      retryable: true,
      retryAfterMs: 9000,
      mayHaveHappened: false,
      reason: '429: too_many_requests: Too many requests.',
    });
    expect(calls()).toEqual(['GET /adjustments 429']);
  });

  it('a 5xx: retryable, may have happened; a proxy page that is not JSON: no answer', async () => {
    stub.failNext({ status: 500, body: error('api_error', 'internal_error', 'An internal error occurred.') }, creates);
    expect(await paddleCommands.send(refund(WHOLE), target(), context('key-9'))).toEqual({ ok: false, retryable: true, mayHaveHappened: true, reason: '500: internal_error: An internal error occurred.' });
    stub.failNext({ status: 502, body: '<html>Bad gateway</html>' }, creates);
    // The SDK finds no `data` in that body and fails on it: no answer it can read.
    expect(await paddleCommands.send(refund(WHOLE), target(), context('key-9'))).toEqual({
      ok: false,
      retryable: true,
      mayHaveHappened: true,
      reason: "Cannot read properties of undefined (reading 'id')",
    });
    expect(stub.requests.filter(creates).map((r) => r.json.reason)).toEqual(['damaged [pw:key-9]', 'damaged [pw:key-9]']);
    expect(stub.effectsOf('refund')).toBe(0);
  });

  it("a refusal: not retryable, with Paddle's code and detail", async () => {
    stub.failNext({ status: 400, body: error('request_error', 'adjustment_transaction_missing_customer_id', "Cannot create adjustments for a transaction that doesn't have a Customer.") }, creates);
    expect(await paddleCommands.send(refund(WHOLE), target(), context('key-10'))).toEqual({
      ok: false,
      retryable: false,
      reason: "400: adjustment_transaction_missing_customer_id: Cannot create adjustments for a transaction that doesn't have a Customer.",
    });
    expect(stub.effects).toEqual([]);
  });

  it('a dropped connection: retryable, may have happened', async () => {
    stub.failNext({ drop: true }, creates);
    expect(await paddleCommands.send(refund(WHOLE), target(), context('key-11'))).toEqual({ ok: false, retryable: true, mayHaveHappened: true, reason: 'fetch failed (UND_ERR_SOCKET)' });
  });

  it('no answer within timeoutMs (the SDK has no timeout: the command is bounded here): retryable, may have happened; the next attempt finds the adjustment', async () => {
    const held = stub.holdNext('after', creates);
    const answer = paddleCommands.send(refund(WHOLE), target(), context('key-12', { timeoutMs: 300 }));
    await held.arrived;
    expect(await answer).toEqual({ ok: false, retryable: true, mayHaveHappened: true, reason: 'Paddle did not answer in time' });
    held.release();
    expect(await paddleCommands.send(refund(WHOLE), target(), context('key-12'))).toEqual({ ok: true, providerRefundId: paddle.adjustments[0].id, status: 'pending' });
    expect(stub.effectsOf('refund')).toBe(1);
  });

  it('the API key never appears in a reason, even when the API echoes it', async () => {
    stub.failNext({ status: 403, body: error('request_error', 'forbidden', `Key ${API_KEY} may not create adjustments`) }, lists);
    const answer = await paddleCommands.send(refund(WHOLE), target(), context('key-13'));
    expect(answer).toEqual({ ok: false, retryable: false, reason: '403: forbidden: Key [redacted] may not create adjustments' });
    expect(JSON.stringify(answer)).not.toContain(API_KEY);
  });

  it('an endpoint without an API key is not ready, and sends nothing', async () => {
    expect(paddleCommands.ready(endpoint())).toBe(true);
    expect(paddleCommands.ready(endpoint({ apiKey: undefined }))).toBe(false);
    expect(await paddleCommands.send(refund(), target(), { ...context('key-14'), endpoint: endpoint({ apiKey: undefined }) })).toEqual({
      ok: false,
      retryable: false,
      reason: 'endpoint "pdl" has no Paddle API key (apiKey)',
    });
    expect(stub.requests).toEqual([]);
  });

  it('the adapter carries the commands; the mark is [pw:<key>]', () => {
    expect(paddleProvider.commands).toBe(paddleCommands);
    expect(keyMark('abc')).toBe('[pw:abc]');
  });
});

describe('paddle: the notification that confirms a refund made through the stub', () => {
  it('adjustment.updated approved confirms the refund by its adjustment id and refunds its total; rejected fails it', async () => {
    const answer = await paddleCommands.send(refund(1200n), target(), context('key-15'));
    const id = answer.ok ? answer.providerRefundId : 'none';
    const approved = JSON.parse(paddleAdjustmentWebhook(paddle.adjustments[0]));
    expect(paddleProvider.normalize(approved, approved.event_type)).toMatchObject({
      kind: 'refunded',
      resourceId: transactionId,
      refund: { id, amount: { form: 'minor', value: '1200' } },
      refundOutcomes: [{ id, status: 'succeeded' }],
    });
    const rejected = JSON.parse(paddleAdjustmentWebhook(paddle.adjustments[0], 'rejected'));
    expect(paddleProvider.normalize(rejected, rejected.event_type)).toMatchObject({ kind: 'refund_outcome', refundOutcomes: [{ id, status: 'failed', reason: 'rejected by Paddle' }] });
  });
});

describe('paddle commands: the optional peer', () => {
  it('the module loads without @paddle/paddle-node-sdk; a command then answers, not retryable, with the install line, and sends nothing', async () => {
    const factory = jest.fn(() => {
      throw Object.assign(new Error("Cannot find module '@paddle/paddle-node-sdk' from 'src/providers/paddle.commands.ts'"), { code: 'MODULE_NOT_FOUND' });
    });
    let commands!: typeof paddleCommands;
    jest.isolateModules(() => {
      jest.doMock('@paddle/paddle-node-sdk', factory);
      commands = (require('../../../src/providers/paddle.commands') as typeof import('../../../src/providers/paddle.commands')).paddleCommands;
    });
    expect(factory).not.toHaveBeenCalled();
    expect(await commands.send(refund(WHOLE), target(), context('key-x'))).toEqual({ ok: false, retryable: false, reason: 'endpoint "pdl" needs the @paddle/paddle-node-sdk package: npm install @paddle/paddle-node-sdk' });
    expect(factory).toHaveBeenCalledTimes(1);
    expect(stub.requests).toEqual([]);
  });
});
