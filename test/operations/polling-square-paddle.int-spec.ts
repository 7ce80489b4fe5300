import type { CarrierAdapter, ShipmentRequest, ShipmentResult } from '../../src/fulfillment/carriers/carrier';
import { PollingService } from '../../src/operations/polling/polling.service';
import { signedHeaders } from '../../src/testing/sign';
import { createTestApp, eventually, PLATFORMS, TestApp } from '../support/app';
import { driver } from '../support/domain';
import { ProviderApiStub } from '../support/provider-api-stub';
import { addPaddleRoutes, paddleId } from '../support/provider-stubs/paddle';
import { addSquareRoutes, squarePaymentId } from '../support/provider-stubs/square';

/**
 * Polling Square and Paddle (docs/operations.md#when-webhooks-stop), end to end on the real
 * PostgreSQL and Redis with the BullMQ workers, on both HTTP platforms, each provider's API a local
 * stub reached through its official SDK: a paid order whose notification never came is paid and
 * fulfilled by the poll, once, and the notification that comes late is `already_applied`.
 */
const AFTER = 30;
const SQUARE_TOKEN = 'EAAAl2Qf7yG0sFy4B3Zi1kgI2ZLQ4pmnOMA1DHxqJtTPZMN5H9l';
const SQUARE_MERCHANT = 'MLSQPOLL01';
const SQUARE_SIGNATURE_KEY = 'sq-polling-signature-key-0123456789';
const SQUARE_URL = 'https://shop.example/webhooks/square-poll';
const PADDLE_KEY = 'pdl_sdbx_apikey_01jq3kcbfsn9b7mnhv3p4pt0v2_Yj7gHzxXw0DcYb1ZpN4vVf_AQ3';
const PADDLE_SECRET = 'pdl_ntfset_01hv8x2acma2gz1my1h0polling_secret';
const PADDLE_ACCOUNT = 'pdl_poll';

/** Ships at once; counts each order's shipments. */
class Carrier implements CarrierAdapter {
  readonly name = 'default';
  readonly shipments = new Map<string, number>();
  async ship(request: ShipmentRequest): Promise<ShipmentResult> {
    this.shipments.set(request.orderId, (this.shipments.get(request.orderId) ?? 0) + 1);
    return { ok: true, shipmentId: `shp_${request.orderId}` };
  }
}

describe.each(PLATFORMS)('%s: polling Square and Paddle payments whose notification never came', (platform) => {
  const squareApi = new ProviderApiStub();
  const square = addSquareRoutes(squareApi);
  const paddleApi = new ProviderApiStub();
  const paddle = addPaddleRoutes(paddleApi);
  const carrier = new Carrier();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  const pollRows = (resourceId: string) =>
    t.dataSource.query(`SELECT event_id AS "eventId", event_type AS "eventType", status, outcome FROM webhook_inbox WHERE resource_id = $1 AND source = 'poll' ORDER BY received_at`, [
      resourceId,
    ]) as Promise<Array<{ eventId: string; eventType: string; status: string; outcome: string }>>;
  const lateOutcome = (resourceId: string) =>
    eventually(
      async () => {
        const rows = await t.dataSource.query(`SELECT status, outcome FROM webhook_inbox WHERE resource_id = $1 AND source = 'webhook' AND status <> 'received'`, [resourceId]);
        return rows.length > 0 ? rows[0] : undefined;
      },
      15_000,
      'the late notification processed',
    );

  beforeAll(async () => {
    await Promise.all([squareApi.start(), paddleApi.start()]);
    t = await createTestApp(
      {
        endpoints: [
          {
            id: 'square-poll',
            provider: 'square',
            secrets: [SQUARE_SIGNATURE_KEY],
            merchantAccountId: SQUARE_MERCHANT,
            notificationUrl: SQUARE_URL,
            apiKey: SQUARE_TOKEN,
            apiBaseUrl: squareApi.baseUrl,
            pollAfterSeconds: AFTER,
          },
          { id: 'paddle-poll', provider: 'paddle', secrets: [PADDLE_SECRET], merchantAccountId: PADDLE_ACCOUNT, apiKey: PADDLE_KEY, apiBaseUrl: paddleApi.baseUrl, pollAfterSeconds: AFTER },
        ],
        runWorkers: true,
        carriers: [],
        carrierAdapters: [carrier],
        tuning: { pollSweepMs: 100, inboxBackoffMs: 50, sweepIntervalMs: 200, sweepAfterMs: 100 },
      },
      { platform },
    );
    d = driver(t);
  });
  afterEach(() => t.clock.reset());
  afterAll(async () => {
    await t?.close();
    await Promise.all([squareApi.stop(), paddleApi.stop()]);
  });

  it('Square: a COMPLETED payment is paid and fulfilled by the poll, once; the late payment.updated is already_applied', async () => {
    const order = await d.createOrder('49.90', 'EUR');
    const paymentId = squarePaymentId();
    const payment = square.addPayment(paymentId, { status: 'COMPLETED', amount: 4990, currency: 'EUR', referenceId: order.id });
    await d.registerPayment(order.id, 'square', paymentId, SQUARE_MERCHANT);

    t.clock.setSeconds(t.clock.now() / 1000 + AFTER + 1);
    await eventually(async () => (await d.getOrder(order.id)).fulfillment?.status === 'dispatched', 15_000, 'the order fulfilled');
    // (The database is shared by both platforms' apps: a payment left open by one is asked about by the other too.)
    expect(squareApi.requests.filter((r) => r.path.endsWith(paymentId)).map((r) => [r.method, r.path, r.status])).toEqual([['GET', `/v2/payments/${paymentId}`, 200]]);
    expect(await pollRows(paymentId)).toEqual([{ eventId: `poll:${paymentId}:COMPLETED:0`, eventType: 'payment.updated', status: 'processed', outcome: 'applied' }]);
    expect((await d.getOrder(order.id)).payments).toEqual([expect.objectContaining({ status: 'succeeded' })]);
    t.clock.reset();

    const late = JSON.stringify({
      merchant_id: SQUARE_MERCHANT,
      type: 'payment.updated',
      event_id: `evt-${paymentId}`,
      created_at: new Date().toISOString(),
      data: {
        type: 'payment',
        id: paymentId,
        object: { payment: { id: paymentId, status: 'COMPLETED', amount_money: { amount: payment.amount, currency: 'EUR' }, reference_id: order.id } },
      },
    });
    const res = await d.http().post('/webhooks/square-poll').set(signedHeaders('square', SQUARE_SIGNATURE_KEY, late, { notificationUrl: SQUARE_URL })).send(late);
    expect(res.status).toBe(200);
    expect(await lateOutcome(paymentId)).toEqual({ status: 'processed', outcome: 'already_applied' });
    expect(carrier.shipments.get(order.id)).toBe(1);
  });

  it('Paddle: a completed transaction is paid and fulfilled by the poll, once; the late transaction.completed is already_applied', async () => {
    // Paddle's published transaction.completed: 652.15 USD.
    const order = await d.createOrder('652.15', 'USD');
    const transactionId = paddleId('txn');
    const transaction = paddle.addTransaction(transactionId);
    transaction.custom_data = { order_id: order.id };
    await d.registerPayment(order.id, 'paddle', transactionId, PADDLE_ACCOUNT);

    t.clock.setSeconds(t.clock.now() / 1000 + AFTER + 1);
    await eventually(async () => (await d.getOrder(order.id)).fulfillment?.status === 'dispatched', 15_000, 'the order fulfilled');
    expect(paddleApi.requests.filter((r) => r.path.endsWith(transactionId)).map((r) => [r.method, r.path, r.status])).toEqual([['GET', `/transactions/${transactionId}`, 200]]);
    expect(await pollRows(transactionId)).toEqual([
      { eventId: `poll:${transactionId}:completed:0`, eventType: 'transaction.completed', status: 'processed', outcome: 'applied' },
    ]);
    t.clock.reset();

    const late = JSON.stringify({
      event_id: paddleId('evt'),
      event_type: 'transaction.completed',
      occurred_at: new Date().toISOString(),
      notification_id: paddleId('ntf'),
      data: { ...transaction },
    });
    const res = await d.http().post('/webhooks/paddle-poll').set(signedHeaders('paddle', PADDLE_SECRET, late)).send(late);
    expect(res.status).toBe(200);
    expect(await lateOutcome(transactionId)).toEqual({ status: 'processed', outcome: 'already_applied' });
    expect(carrier.shipments.get(order.id)).toBe(1);
  });

  it('a status that says nothing (Paddle ready, Square APPROVED then) records nothing, or the authorization', async () => {
    const order = await d.createOrder('652.15', 'USD');
    const transactionId = paddleId('txn');
    paddle.addTransaction(transactionId).status = 'ready';
    await d.registerPayment(order.id, 'paddle', transactionId, PADDLE_ACCOUNT);
    t.clock.setSeconds(t.clock.now() / 1000 + AFTER + 1);
    await t.get(PollingService).run('paddle-poll');
    expect(paddleApi.requests.filter((r) => r.path === `/transactions/${transactionId}`)).toHaveLength(1);
    expect(await pollRows(transactionId)).toEqual([]);
    t.clock.reset();

    const squareOrder = await d.createOrder('49.90', 'EUR');
    const paymentId = squarePaymentId();
    square.addPayment(paymentId, { status: 'APPROVED', amount: 4990, currency: 'EUR' });
    await d.registerPayment(squareOrder.id, 'square', paymentId, SQUARE_MERCHANT);
    t.clock.setSeconds(t.clock.now() / 1000 + AFTER + 1);
    await eventually(async () => (await pollRows(paymentId))[0]?.status === 'processed', 15_000, 'the authorization processed');
    expect(await pollRows(paymentId)).toEqual([{ eventId: `poll:${paymentId}:APPROVED:0`, eventType: 'payment.updated', status: 'processed', outcome: 'applied' }]);
    expect((await d.getOrder(squareOrder.id)).payments).toEqual([expect.objectContaining({ status: 'authorized' })]);
  });
});
