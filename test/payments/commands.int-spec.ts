import { OutboxStore } from '../../src/outbox/outbox.store';
import type { CarrierAdapter, ShipmentRequest, ShipmentResult } from '../../src/fulfillment/carriers/carrier';
import type { EndpointDefinition } from '../../src/config/options';
import { AUTH, createTestApp, eventually, PLATFORMS, TEST_ENDPOINTS, TestApp } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';
import type { PaymentWebhooksEvent } from '../../src/common/host-events';
import { TransactionEvents } from '../../src/outbox/transaction-events';
import { acmeEvent, acmeHeaders } from '../support/acme-provider';
import { acmePayApi, acmePayProvider } from '../support/acme-pay-provider';
import { ProviderApiStub } from '../support/provider-api-stub';
import { orderHistoryProblems } from '../support/history-check';

/**
 * CONTRACT §3.1, the core of the payment commands, end to end on the real PostgreSQL and Redis with
 * the BullMQ workers, on both HTTP platforms: a refund, a capture, a void and a cancel with a refund
 * are written with their outbox message in the request's transaction, sent to the provider's API (a
 * local stub that keeps idempotency keys as real APIs do) by the outbox with one key on every
 * attempt, and confirmed by the provider's webhook. The provider is a host's own ("acmepay",
 * test/support/acme-pay-provider.ts): the built-in providers' clients are tested in
 * test/providers/commands/ and test/payments/provider-commands.int-spec.ts.
 */
const SECRET = 'acme_sk_commands_0123456789';
const ACCOUNT = 'm_1';
const MAX_ATTEMPTS = 3;

/** Ships at once, except orders held: those it refuses with a 429 before shipping (nothing sent). */
class Carrier implements CarrierAdapter {
  readonly name = 'default';
  readonly calls: ShipmentRequest[] = [];
  readonly shipped = new Set<string>();
  readonly held = new Set<string>();
  delayMs = 0;
  async ship(request: ShipmentRequest): Promise<ShipmentResult> {
    this.calls.push(request);
    if (this.held.has(request.orderId)) return { ok: false, retryable: true, reason: 'carrier busy', status: '429', retryAfterMs: 600_000, mayHaveShipped: false };
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, Math.random() * this.delayMs));
    this.shipped.add(request.orderId);
    return { ok: true, shipmentId: `shp_${this.calls.length}` };
  }
}

describe.each(PLATFORMS)('%s: payment commands (§3.1)', (platform) => {
  // An amount of 0.07 is answered without the refund's id (a broken provider answer).
  const stub = acmePayApi(new ProviderApiStub(), { withoutId: (amount) => amount === '0.07' });
  const carrier = new Carrier();
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  /** Every event the module announced (in its transactions), for the types a command adds. */
  const announced: PaymentWebhooksEvent[] = [];
  const announcedOf = (type: string, pick: (e: PaymentWebhooksEvent) => unknown, value: unknown) =>
    announced.filter((e) => e.type === type && pick(e) === value);

  beforeAll(async () => {
    await stub.start();
    const endpoints: EndpointDefinition[] = [
      ...TEST_ENDPOINTS,
      { id: 'acmepay-main', provider: 'acmepay', secrets: [SECRET], merchantAccountId: ACCOUNT, apiKey: 'ak_live_secret_9f8e7d', apiBaseUrl: stub.baseUrl },
      { id: 'acmepay-nokey', provider: 'acmepay', secrets: [SECRET], merchantAccountId: 'm_9' },
    ];
    t = await createTestApp(
      {
        providers: [acmePayProvider],
        endpoints,
        runWorkers: true,
        carriers: [],
        carrierAdapters: [carrier],
        commandMaxAttempts: MAX_ATTEMPTS,
        // A delivery that waits (for a payment, for the record of a provider's answer) is tried six
        // times, 50 ms doubling (about 1.5 s), before it is applied as it stands.
        tuning: { inboxBackoffMs: 50, carrierBackoffBaseMs: 20, carrierBackoffCapMs: 5_000, sweepIntervalMs: 200, sweepAfterMs: 100 },
      },
      { platform },
    );
    d = driver(t);
    t.get(TransactionEvents).on('*', async (event) => {
      announced.push(event as PaymentWebhooksEvent);
    });
  });
  afterAll(async () => {
    await t?.close();
    await stub.stop();
  });

  const deliver = async (endpointId: string, event: { eventId: string; body: string }) => {
    const res = await d.http().post(`/webhooks/${endpointId}`).set(acmeHeaders(SECRET, event.body)).send(event.body);
    expect(res.status).toBe(200);
    return d.processed(event.eventId);
  };

  /** An order paid by an acmepay charge (the webhook creates its payment), shipped unless held. */
  async function paidOrder(opts: { hold?: boolean; endpoint?: string; account?: string } = {}) {
    const order = await d.createOrder('49.90', 'EUR');
    if (opts.hold) carrier.held.add(order.id);
    const chargeId = uniqueId('ch');
    const paid = acmeEvent('charge.paid', chargeId, { orderId: order.id, merchant: opts.account ?? ACCOUNT });
    expect((await deliver(opts.endpoint ?? 'acmepay-main', paid)).outcome).toBe('applied');
    const payment = (await d.getOrder(order.id)).payments[0];
    return { orderId: order.id, chargeId, paymentId: payment.id as string };
  }

  const refundOf = async (id: string) => (await d.http().get(`/refunds/${id}`).set(AUTH)).body;
  const refundIn = (id: string, status: string, timeoutMs = 15_000) =>
    eventually(async () => {
      const r = await refundOf(id);
      return r.status === status ? r : undefined;
    }, timeoutMs, `refund ${id} ${status}`);
  const requestsWithKey = (key: string) => stub.requests.filter((r) => r.key === key);
  const historyOf = async (orderId: string) => (await d.http().get(`/orders/${orderId}/history`).set(AUTH)).body.items as Array<Record<string, any>>;

  describe('POST /orders/{id}/refunds', () => {
    it('202 a requested refund; sent once under its id; submitted with the provider\'s id; the webhook confirms it and moves the money', async () => {
      const { orderId, chargeId, paymentId } = await paidOrder();
      const res = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({ amount: '10.00', reason: 'Returned item' });
      expect(res.status).toBe(202);
      expect(Object.keys(res.body).sort()).toEqual(
        ['amount', 'createdAt', 'currency', 'failureReason', 'id', 'orderId', 'paymentId', 'provider', 'providerRefundId', 'reason', 'status', 'updatedAt'].sort(),
      );
      expect(res.body).toMatchObject({ orderId, paymentId, provider: 'acmepay', amount: '10.00', currency: 'EUR', reason: 'Returned item', status: 'requested', providerRefundId: null, failureReason: null });
      const refundId = res.body.id as string;
      const submitted = await refundIn(refundId, 'submitted');
      const sent = requestsWithKey(refundId);
      expect(sent.map((r) => [r.path, r.json, r.headers.authorization])).toEqual([[`/charges/${chargeId}/refunds`, { amount: '10.00', currency: 'EUR' }, 'Bearer ak_live_secret_9f8e7d']]);
      const providerRefundId = stub.effects.find((e) => e.key === refundId)!.detail!.id as string;
      expect(submitted.providerRefundId).toBe(providerRefundId);
      // The provider's word only: the payment has not moved yet.
      expect((await d.getOrder(orderId)).payments[0]).toMatchObject({ status: 'succeeded', refundedAmount: '0.00' });
      expect((await d.outboxMessageOfKey(refundId)).status).toBe('dispatched');

      const confirmed = acmeEvent('charge.refunded', chargeId, { merchant: ACCOUNT, refunded: '10.00' });
      const body = JSON.parse(confirmed.body);
      body.charge.refund_id = providerRefundId;
      const event = { eventId: confirmed.eventId, body: JSON.stringify(body) };
      expect((await deliver('acmepay-main', event)).outcome).toBe('applied');
      expect((await refundOf(refundId)).status).toBe('succeeded');
      expect((await d.getOrder(orderId)).payments[0]).toMatchObject({ status: 'partially_refunded', refundedAmount: '10.00' });
      const listed = await d.http().get(`/orders/${orderId}/refunds`).set(AUTH);
      expect(listed.status).toBe(200);
      expect(listed.body.items.map((r: { id: string; status: string }) => [r.id, r.status])).toEqual([[refundId, 'succeeded']]);

      // §7: one event per move, each with the refund as it then stood.
      expect(announced.filter((e) => e.data.refund?.id === refundId).map((e) => [e.type, e.data.refund?.status, e.data.payment?.id, e.data.order.id])).toEqual([
        ['refund.requested', 'requested', paymentId, orderId],
        ['refund.submitted', 'submitted', paymentId, orderId],
        ['refund.succeeded', 'succeeded', paymentId, orderId],
      ]);
      // The history: the refund's three moves, each with its cause, once.
      const refundMoves = (await historyOf(orderId)).filter((i) => i.entity === 'refund').map(({ at, ...rest }) => rest);
      const [{ id: deliveryId }] = await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [confirmed.eventId]);
      expect(refundMoves).toEqual([
        { entity: 'refund', entityId: refundId, from: null, to: 'requested', cause: { kind: 'api', action: 'refund' } },
        { entity: 'refund', entityId: refundId, from: 'requested', to: 'submitted', cause: { kind: 'provider-api', commandId: refundId } },
        { entity: 'refund', entityId: refundId, from: 'submitted', to: 'succeeded', cause: { kind: 'delivery', deliveryId, eventId: confirmed.eventId, provider: 'acmepay' } },
      ]);
    });

    it('the amount defaults to what is still refundable: the captured amount less refunds on their way; more answers 409', async () => {
      const { orderId } = await paidOrder();
      stub.holdNext('before');
      const first = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({ amount: '40.00' });
      expect(first.status).toBe(202);
      const over = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({ amount: '9.91' });
      expect(over.status).toBe(409);
      expect(over.body).toEqual({ error: 'illegal_transition', detail: '9.90 EUR is refundable; 9.91 was asked' });
      const rest = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({});
      expect(rest.status).toBe(202);
      expect(rest.body.amount).toBe('9.90');
      const none = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({});
      expect(none.status).toBe(409);
      expect(none.body).toEqual({ error: 'illegal_transition', detail: '0.00 EUR is refundable; 0.00 was asked' });
      expect(await d.count(`SELECT 1 FROM refunds WHERE order_id = $1`, [orderId])).toBe(2);
      stub.releaseAll();
      await refundIn(first.body.id, 'submitted');
      await refundIn(rest.body.id, 'submitted');
    });

    it('an order without a captured payment answers 409; an unknown order 404', async () => {
      const order = await d.createOrder();
      const res = await d.http().post(`/orders/${order.id}/refunds`).set(AUTH).send({});
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: 'illegal_transition', detail: 'the order holds no succeeded or partially refunded payment' });
      const missing = await d.http().post(`/orders/0190a0b0-0000-7000-8000-000000000000/refunds`).set(AUTH).send({});
      expect(missing.status).toBe(404);
      expect(await d.count(`SELECT 1 FROM refunds WHERE order_id = $1`, [order.id])).toBe(0);
    });

    it('400 for a bad amount or reason, nothing written', async () => {
      const { orderId } = await paidOrder();
      for (const body of [{ amount: '1,00' }, { amount: 10 }, { reason: 'x'.repeat(501) }, { amount: '1.001' }]) {
        const res = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send(body);
        expect({ body, status: res.status, error: res.body.error }).toEqual({ body, status: 400, error: 'validation_failed' });
      }
      expect(await d.count(`SELECT 1 FROM refunds WHERE order_id = $1`, [orderId])).toBe(0);
    });

    it('an Idempotency-Key answers the first answer again; one refund, one call', async () => {
      const { orderId } = await paidOrder();
      const key = uniqueId('idem');
      const first = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).set('Idempotency-Key', key).send({ amount: '5.00' });
      const again = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).set('Idempotency-Key', key).send({ amount: '5.00' });
      expect(first.status).toBe(202);
      expect(again.status).toBe(202);
      expect(again.body).toEqual(first.body);
      const other = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).set('Idempotency-Key', key).send({ amount: '6.00' });
      expect(other.status).toBe(422);
      expect(other.body.error).toBe('idempotency_key_reused');
      await refundIn(first.body.id, 'submitted');
      expect(await d.count(`SELECT 1 FROM refunds WHERE order_id = $1`, [orderId])).toBe(1);
      expect(stub.effects.filter((e) => e.key === first.body.id)).toHaveLength(1);
    });

    it('422 not_supported: a provider the module sends no commands to, an endpoint without API credentials', async () => {
      const order = await d.createOrder();
      const paymentId = uniqueId('pay');
      const paid = bodies.standard('payment.succeeded', paymentId, { orderId: order.id });
      await d.send('standard-main', 'standard', paid.body, { eventId: paid.eventId });
      expect((await d.processed(paid.eventId)).outcome).toBe('applied');
      const standard = await d.http().post(`/orders/${order.id}/refunds`).set(AUTH).send({});
      expect(standard.status).toBe(422);
      expect(standard.body).toEqual({ error: 'not_supported', detail: 'the module sends no commands to standard' });

      const { orderId } = await paidOrder({ endpoint: 'acmepay-nokey', account: 'm_9' });
      const noKey = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({});
      expect(noKey.status).toBe(422);
      expect(noKey.body).toEqual({ error: 'not_supported', detail: 'no acmepay endpoint of merchant account "m_9" has API credentials' });
      expect(await d.count(`SELECT 1 FROM refunds WHERE order_id = ANY($1::uuid[])`, [[order.id, orderId]])).toBe(0);
    });
  });

  describe('delivery to the provider', () => {
    it('429 with Retry-After: retried after the wait, with the same key; the 409 of a key in flight is retried too', async () => {
      const { orderId } = await paidOrder();
      stub.failNext({ status: 429, retryAfter: '1' });
      stub.failNext({ status: 409 });
      const res = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({ amount: '1.00' });
      const refundId = res.body.id as string;
      await refundIn(refundId, 'submitted');
      const sent = requestsWithKey(refundId);
      expect(sent.map((r) => r.status)).toEqual([429, 409, 200]);
      const times = stub.requests.filter((r) => r.key === refundId).map((r) => r.at);
      expect(times[1] - times[0]).toBeGreaterThanOrEqual(1_000);
      expect(stub.effects.filter((e) => e.key === refundId)).toHaveLength(1);
      const message = await d.outboxMessageOfKey(refundId);
      expect(message).toMatchObject({ status: 'dispatched', attempts: 3 });
    });

    it('a refusal (4xx) fails the refund at once with the provider\'s reason; the dead message retried by an operator sends the same key again', async () => {
      const { orderId } = await paidOrder();
      stub.failNext({ status: 402, body: { error: 'insufficient balance on the merchant account' } });
      const res = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({ amount: '2.00' });
      const refundId = res.body.id as string;
      const failed = await refundIn(refundId, 'failed');
      expect(failed.failureReason).toBe('402: insufficient balance on the merchant account');
      const message = await d.outboxMessageOfKey(refundId);
      expect(message).toMatchObject({ status: 'dead', attempts: 1 });
      // A failed refund changes no amount, and frees what it held.
      expect((await d.getOrder(orderId)).payments[0]).toMatchObject({ status: 'succeeded', refundedAmount: '0.00' });
      const retry = await d.http().post(`/admin/outbox/${message.id}/retry`).set(AUTH);
      expect(retry.status).toBe(202);
      await refundIn(refundId, 'submitted');
      expect(requestsWithKey(refundId).map((r) => r.status)).toEqual([402, 200]);
      const moves = (await historyOf(orderId)).filter((i) => i.entity === 'refund').map((i) => [i.from, i.to, i.cause.kind]);
      expect(moves).toEqual([
        [null, 'requested', 'api'],
        ['requested', 'failed', 'provider-api'],
        ['failed', 'requested', 'api'],
        ['requested', 'submitted', 'provider-api'],
      ]);
    });

    it(`5xx on every attempt: failed after COMMAND_MAX_ATTEMPTS (${MAX_ATTEMPTS}) calls, all with the same key; refund.failed announced`, async () => {
      const { orderId } = await paidOrder();
      for (let i = 0; i < MAX_ATTEMPTS; i++) stub.failNext({ status: 503 });
      const res = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({ amount: '3.00' });
      const refundId = res.body.id as string;
      const failed = await refundIn(refundId, 'failed');
      expect(failed.failureReason).toBe(`503: scripted 503 (after ${MAX_ATTEMPTS} attempts)`);
      expect(requestsWithKey(refundId).map((r) => r.status)).toEqual(Array(MAX_ATTEMPTS).fill(503));
      const types = announced.filter((e) => e.data.refund?.id === refundId).map((e) => [e.type, e.data.refund?.status]);
      expect(types).toEqual([
        ['refund.requested', 'requested'],
        ['refund.failed', 'failed'],
      ]);
    });

    it('an accepted refund answered without a usable id is no clear answer: asked again with the same key, never submitted without an id', async () => {
      const { orderId } = await paidOrder();
      const res = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({ amount: '0.07' });
      const refundId = res.body.id as string;
      const failed = await refundIn(refundId, 'failed');
      expect(failed).toMatchObject({ providerRefundId: null, failureReason: `the provider accepted the refund without a usable refund id (after ${MAX_ATTEMPTS} attempts)` });
      expect(requestsWithKey(refundId).map((r) => r.status)).toEqual(Array(MAX_ATTEMPTS).fill(200));
      expect(stub.effects.filter((e) => e.key === refundId)).toHaveLength(1);
    });

    it("an operator's retry of a dead refund whose amount another refund took since: 409, nothing changes", async () => {
      const { orderId } = await paidOrder();
      stub.failNext({ status: 402, body: { error: 'insufficient balance' } });
      const first = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({});
      await refundIn(first.body.id, 'failed');
      // What it held is free again: the shop asks for it anew.
      const second = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({});
      expect(second.body.amount).toBe('49.90');
      await refundIn(second.body.id, 'submitted');
      const message = await d.outboxMessageOfKey(first.body.id);
      const retry = await d.http().post(`/admin/outbox/${message.id}/retry`).set(AUTH);
      expect(retry.status).toBe(409);
      expect(retry.body).toEqual({ error: 'illegal_transition', detail: "the refund's 49.90 EUR is no longer refundable (0.00 is): ask for a new refund instead" });
      expect(await d.outboxMessageOfKey(first.body.id)).toMatchObject({ status: 'dead' });
      expect((await refundOf(first.body.id)).status).toBe('failed');
      expect(requestsWithKey(first.body.id)).toHaveLength(1);
    });

    it('a refund the provider fails later (its webhook) is failed; the money does not move', async () => {
      const { orderId, chargeId } = await paidOrder();
      const res = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({ amount: '4.00' });
      const refundId = res.body.id as string;
      const submitted = await refundIn(refundId, 'submitted');
      const failedEvent = acmeEvent('refund.failed', chargeId, { merchant: ACCOUNT });
      const body = JSON.parse(failedEvent.body);
      Object.assign(body.charge, { refund_id: submitted.providerRefundId, failure_reason: 'card expired' });
      const processed = await deliver('acmepay-main', { eventId: failedEvent.eventId, body: JSON.stringify(body) });
      expect(processed).toMatchObject({ status: 'processed', outcome: 'applied' });
      expect(await refundOf(refundId)).toMatchObject({ status: 'failed', failureReason: 'card expired' });
      expect((await d.getOrder(orderId)).payments[0]).toMatchObject({ status: 'succeeded', refundedAmount: '0.00' });
    });

    /** The inbox row of an event, once it is refused as too early (a refund's answer not recorded yet). */
    const tooEarly = (eventId: string) =>
      eventually(async () => {
        const [row] = await t.dataSource.query(`SELECT status, outcome FROM webhook_inbox WHERE event_id = $1`, [eventId]);
        return row?.status === 'rejected' && row.outcome === 'illegal_transition' ? row : undefined;
      }, 15_000, `${eventId} refused as too early`);

    it("the provider's webhook confirming the refund before its answer is recorded is too early, then processed once the answer is: the refund ends succeeded", async () => {
      const { orderId, chargeId } = await paidOrder();
      // The provider made the refund; its answer to the worker is held (the webhook comes first).
      const held = stub.holdNext('after');
      const res = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({ amount: '10.00' });
      const refundId = res.body.id as string;
      await held.arrived;
      const providerRefundId = stub.effects.find((e) => e.key === refundId)!.detail!.id as string;
      const confirmed = acmeEvent('charge.refunded', chargeId, { merchant: ACCOUNT, refunded: '10.00' });
      const body = JSON.parse(confirmed.body);
      body.charge.refund_id = providerRefundId;
      const text = JSON.stringify(body);
      expect((await d.http().post('/webhooks/acmepay-main').set(acmeHeaders(SECRET, text)).send(text)).status).toBe(200);
      await tooEarly(confirmed.eventId);
      // Nothing moved.
      expect((await d.getOrder(orderId)).payments[0]).toMatchObject({ status: 'succeeded', refundedAmount: '0.00' });
      expect((await refundOf(refundId)).status).toBe('requested');
      held.release();
      // The refund's move (its answer recorded) opens the delivery again.
      await refundIn(refundId, 'succeeded');
      const [row] = await t.dataSource.query(`SELECT status, outcome FROM webhook_inbox WHERE event_id = $1`, [confirmed.eventId]);
      expect(row).toEqual({ status: 'processed', outcome: 'applied' });
      expect(await refundOf(refundId)).toMatchObject({ status: 'succeeded', providerRefundId });
      expect((await d.getOrder(orderId)).payments[0]).toMatchObject({ status: 'partially_refunded', refundedAmount: '10.00' });
    });

    it('a refund made elsewhere (the dashboard) while one of ours awaits its answer: applied once ours moves, ours untouched', async () => {
      const { orderId, chargeId } = await paidOrder();
      // Ours is held before the provider makes it: it stays `requested` until released.
      const held = stub.holdNext('before');
      const ours = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({ amount: '5.00' });
      await held.arrived;
      const dashboard = acmeEvent('charge.refunded', chargeId, { merchant: ACCOUNT, refunded: '7.00' });
      const body = JSON.parse(dashboard.body);
      body.charge.refund_id = 'rf_made_in_the_dashboard';
      const text = JSON.stringify(body);
      expect((await d.http().post('/webhooks/acmepay-main').set(acmeHeaders(SECRET, text)).send(text)).status).toBe(200);
      await tooEarly(dashboard.eventId);
      expect((await d.getOrder(orderId)).payments[0]).toMatchObject({ status: 'succeeded', refundedAmount: '0.00' });
      held.release();
      await refundIn(ours.body.id, 'submitted');
      const applied = await eventually(async () => {
        const [row] = await t.dataSource.query(`SELECT status, outcome FROM webhook_inbox WHERE event_id = $1`, [dashboard.eventId]);
        return row?.status === 'processed' ? row : undefined;
      }, 15_000, 'the dashboard refund applied');
      expect(applied).toEqual({ status: 'processed', outcome: 'applied' });
      expect((await d.getOrder(orderId)).payments[0]).toMatchObject({ status: 'partially_refunded', refundedAmount: '7.00' });
      expect((await refundOf(ours.body.id)).status).toBe('submitted');
    });

    it("another account's event naming the refund's provider id moves nothing", async () => {
      const { orderId } = await paidOrder();
      const res = await d.http().post(`/orders/${orderId}/refunds`).set(AUTH).send({ amount: '1.50' });
      const submitted = await refundIn(res.body.id, 'submitted');
      // A charge of account m_9 (its own endpoint) that names the same provider refund id.
      const other = await paidOrder({ endpoint: 'acmepay-nokey', account: 'm_9' });
      const forged = acmeEvent('charge.refunded', other.chargeId, { merchant: 'm_9', refunded: '1.50' });
      const body = JSON.parse(forged.body);
      body.charge.refund_id = submitted.providerRefundId;
      await deliver('acmepay-nokey', { eventId: forged.eventId, body: JSON.stringify(body) });
      expect((await refundOf(res.body.id)).status).toBe('submitted');
    });
  });

  describe('capture and void', () => {
    async function authorizedOrder() {
      const order = await d.createOrder('49.90', 'EUR');
      // Not shipped once paid: the order stays `paid`.
      carrier.held.add(order.id);
      const chargeId = uniqueId('ch');
      const authorized = acmeEvent('charge.authorized', chargeId, { orderId: order.id, merchant: ACCOUNT });
      expect((await deliver('acmepay-main', authorized)).outcome).toBe('applied');
      const payment = (await d.getOrder(order.id)).payments[0];
      expect(payment.status).toBe('authorized');
      return { orderId: order.id, chargeId, paymentId: payment.id as string };
    }

    it('POST /orders/{id}/capture: 202, sent once with <payment id>:capture; again while it is on its way answers the same; the webhook makes it paid', async () => {
      const { orderId, chargeId, paymentId } = await authorizedOrder();
      const res = await d.http().post(`/orders/${orderId}/capture`).set(AUTH).send({});
      expect(res.status).toBe(202);
      expect(res.body).toMatchObject({ id: orderId, status: 'awaiting_payment' });
      expect((await d.http().post(`/orders/${orderId}/capture`).set(AUTH).send({})).status).toBe(202);
      const key = `${paymentId}:capture`;
      await eventually(async () => (await d.outboxMessageOfKey(key))?.status === 'dispatched' || undefined, 15_000, 'the capture sent');
      expect(stub.effects.filter((e) => e.key === key).map((e) => e.detail)).toEqual([{ charge: chargeId, amount: '49.90' }]);
      expect(await d.count(`SELECT 1 FROM outbox_message WHERE idempotency_key = $1`, [key])).toBe(1);
      const paid = acmeEvent('charge.paid', chargeId, { merchant: ACCOUNT });
      expect((await deliver('acmepay-main', paid)).outcome).toBe('applied');
      expect((await d.getOrder(orderId)).status).toBe('paid');
      const captureAgain = await d.http().post(`/orders/${orderId}/capture`).set(AUTH).send({});
      expect(captureAgain.status).toBe(409);
      expect(captureAgain.body).toEqual({ error: 'illegal_transition', detail: 'the paid order holds no authorized payment' });
    });

    it('a capture the provider refuses is dead and announced as payment.capture_failed', async () => {
      const { orderId, paymentId } = await authorizedOrder();
      stub.failNext({ status: 422, body: { error: 'authorization expired' } });
      expect((await d.http().post(`/orders/${orderId}/capture`).set(AUTH).send({ amount: '20.00' })).status).toBe(202);
      const key = `${paymentId}:capture`;
      const message = await eventually(async () => {
        const m = await d.outboxMessageOfKey(key);
        return m?.status === 'dead' ? m : undefined;
      }, 15_000, 'the capture refused');
      expect(message.lastError).toBe('422: authorization expired');
      const failedEvents = announcedOf('payment.capture_failed', (e) => e.data.payment?.id, paymentId);
      expect(failedEvents.map((e) => [e.data.order.id, e.data.reason])).toEqual([[orderId, '422: authorization expired']]);
      // Asked again, it is not sent anew under the same key: the dead message is what to retry.
      const again = await d.http().post(`/orders/${orderId}/capture`).set(AUTH).send({});
      expect(again.status).toBe(409);
      expect(again.body).toEqual({ error: 'illegal_transition', detail: `the payment's capture failed: retry its message ${message.id} in /admin/outbox` });
      expect((await d.getOrder(orderId)).payments[0].status).toBe('authorized');
    });

    it('POST /orders/{id}/cancel of an order awaiting payment voids its authorized payment: 200, canceled, <payment id>:void sent once', async () => {
      const { orderId, chargeId, paymentId } = await authorizedOrder();
      const res = await d.http().post(`/orders/${orderId}/cancel`).set(AUTH).send({});
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('canceled');
      const key = `${paymentId}:void`;
      await eventually(async () => (await d.outboxMessageOfKey(key))?.status === 'dispatched' || undefined, 15_000, 'the void sent');
      expect(stub.effects.filter((e) => e.key === key).map((e) => e.detail)).toEqual([{ charge: chargeId }]);
      // A canceled order's authorization is never captured.
      const capture = await d.http().post(`/orders/${orderId}/capture`).set(AUTH).send({});
      expect(capture.status).toBe(409);
      expect(capture.body).toEqual({ error: 'illegal_transition', detail: 'a canceled order cannot be captured' });
    });

    it('a void the provider refuses is dead and announced as payment.void_failed; the order stays canceled', async () => {
      const { orderId, paymentId } = await authorizedOrder();
      stub.failNext({ status: 400, body: { error: 'authorization already expired' } });
      expect((await d.http().post(`/orders/${orderId}/cancel`).set(AUTH).send({})).status).toBe(200);
      const key = `${paymentId}:void`;
      const message = await eventually(async () => {
        const m = await d.outboxMessageOfKey(key);
        return m?.status === 'dead' ? m : undefined;
      }, 15_000, 'the void refused');
      expect(message.lastError).toBe('400: authorization already expired');
      const failedEvents = announcedOf('payment.void_failed', (e) => e.data.payment?.id, paymentId);
      expect(failedEvents.map((e) => [e.data.order.id, e.data.order.status, e.data.reason])).toEqual([[orderId, 'canceled', '400: authorization already expired']]);
      expect(stub.effects.filter((e) => e.key === key)).toHaveLength(0);
    });

    it('capture with an amount above the payment, or of an order without an authorized payment: 409, nothing sent', async () => {
      const { orderId, paymentId } = await authorizedOrder();
      const over = await d.http().post(`/orders/${orderId}/capture`).set(AUTH).send({ amount: '49.91' });
      expect(over.status).toBe(409);
      expect(over.body).toEqual({ error: 'illegal_transition', detail: 'at most 49.90 EUR may be captured; 49.91 was asked' });
      const plain = await d.createOrder();
      expect((await d.http().post(`/orders/${plain.id}/capture`).set(AUTH).send({})).status).toBe(409);
      expect(await d.count(`SELECT 1 FROM outbox_message WHERE idempotency_key = $1`, [`${paymentId}:capture`])).toBe(0);
    });
  });

  describe('POST /orders/{id}/cancel {"refund": true}', () => {
    it('a paid order whose shipment has not begun: 202, the fulfillment failed and never shipped, a full refund; refunded once the provider confirms', async () => {
      const { orderId, chargeId } = await paidOrder({ hold: true });
      // The dispatch's first attempt was refused by the carrier before shipping (nothing begun).
      await eventually(async () => ((await d.outboxMessage(orderId))?.attempts === 1 ? true : undefined), 15_000, 'the first dispatch attempt recorded');
      const res = await d.http().post(`/orders/${orderId}/cancel`).set(AUTH).send({ refund: true });
      expect(res.status).toBe(202);
      expect(res.body).toMatchObject({ status: 'paid', fulfillment: { status: 'failed' } });
      expect(await d.outboxMessage(orderId)).toMatchObject({ status: 'dead', lastError: 'order canceled with a refund' });
      const refunds = (await d.http().get(`/orders/${orderId}/refunds`).set(AUTH)).body.items;
      expect(refunds.map((r: Record<string, string>) => [r.amount, r.reason])).toEqual([['49.90', 'order canceled']]);
      const submitted = await refundIn(refunds[0].id, 'submitted');
      const confirmed = acmeEvent('charge.refunded', chargeId, { merchant: ACCOUNT, refunded: '49.90' });
      const body = JSON.parse(confirmed.body);
      body.charge.refund_id = submitted.providerRefundId;
      await deliver('acmepay-main', { eventId: confirmed.eventId, body: JSON.stringify(body) });
      expect((await d.getOrder(orderId)).status).toBe('refunded');
      expect(carrier.shipped.has(orderId)).toBe(false);
      const fulfillmentMoves = (await historyOf(orderId)).filter((i) => i.entity === 'fulfillment').map((i) => [i.from, i.to, i.cause]);
      expect(fulfillmentMoves).toEqual([
        [null, 'requested', expect.objectContaining({ kind: 'delivery' })],
        ['requested', 'failed', { kind: 'api', action: 'cancel' }],
      ]);
    });

    it('once the shipment left: 409 already_dispatched, nothing changes', async () => {
      const { orderId } = await paidOrder();
      await eventually(async () => ((await d.getOrder(orderId)).status === 'fulfilled' ? true : undefined), 15_000, 'shipped');
      const res = await d.http().post(`/orders/${orderId}/cancel`).set(AUTH).send({ refund: true });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: 'already_dispatched' });
      expect(await d.count(`SELECT 1 FROM refunds WHERE order_id = $1`, [orderId])).toBe(0);
    });

    it('without "refund": true a paid order is 409 illegal_transition, as in v3; "refund": false is a 400', async () => {
      const { orderId } = await paidOrder({ hold: true });
      const plain = await d.http().post(`/orders/${orderId}/cancel`).set(AUTH).send({});
      expect(plain.status).toBe(409);
      expect(plain.body.error).toBe('illegal_transition');
      const no = await d.http().post(`/orders/${orderId}/cancel`).set(AUTH).send({ refund: false });
      expect(no.status).toBe(400);
      expect(await d.count(`SELECT 1 FROM refunds WHERE order_id = $1`, [orderId])).toBe(0);
    });

    /**
     * The dispatch's claim, late by a random few milliseconds (the real claim, delayed: what a busy
     * worker does), so the cancel, sent as soon as the order is paid, meets it before, during and
     * after.
     */
    function delayClaims(): () => void {
      const store = t.get(OutboxStore);
      const claim = store.claim.bind(store);
      const spy = jest.spyOn(store, 'claim').mockImplementation(async (...args) => {
        await new Promise((r) => setTimeout(r, Math.random() * 150));
        return claim(...args);
      });
      return () => spy.mockRestore();
    }

    it('the cancel/dispatch race, 20 times: a 202 never ships, a 409 never refunds', async () => {
      carrier.delayMs = 30;
      const restore = delayClaims();
      try {
        const answers: number[] = [];
        for (let i = 0; i < 20; i++) {
          // The cancel is asked again and again from the moment the paying webhook is sent: its first
          // answer once the order is paid falls just before, during or after the dispatch's claim.
          const { orderId } = await paidOrder();
          const res = await d.http().post(`/orders/${orderId}/cancel`).set(AUTH).send({ refund: true });
          answers.push(res.status);
          expect([202, 409]).toContain(res.status);
          // Let whatever was in flight end.
          await eventually(async () => {
            const m = await d.outboxMessage(orderId);
            return m && m.status !== 'pending' ? m : undefined;
          }, 15_000, `the dispatch of ${orderId} settled`);
          const refunds = await d.count(`SELECT 1 FROM refunds WHERE order_id = $1`, [orderId]);
          if (res.status === 202) {
            expect({ orderId, shipped: carrier.shipped.has(orderId), refunds }).toEqual({ orderId, shipped: false, refunds: 1 });
          } else {
            expect(res.body).toEqual({ error: 'already_dispatched' });
            expect({ orderId, refunds }).toEqual({ orderId, refunds: 0 });
          }
        }
        // Both sides of the race were seen at least once over the runs of both platforms is not
        // guaranteed here; each answer was checked against what happened.
        expect(answers).toHaveLength(20);
        if (process.env.SHOW_RACE) console.log(platform, answers.join(","));
      } finally {
        restore();
        carrier.delayMs = 0;
      }
    });
  });

  /**
   * After every test above (duplicates, replays, retries, refusals, races): every order's history
   * lists each change once, in order, and ends where the order and what it holds stand.
   */
  it('after them all: every order\'s history is sound', async () => {
    const orders: Array<{ id: string }> = await t.dataSource.query(`SELECT id FROM orders ORDER BY id`);
    const apiGet = async (path: string) => {
      const res = await d.http().get(path).set(AUTH);
      return { status: res.status, body: res.body };
    };
    const unsound: Record<string, string[]> = {};
    for (const { id } of orders) {
      const problems = await orderHistoryProblems(apiGet, id);
      if (problems.length > 0) unsound[id] = problems;
    }
    expect(unsound).toEqual({});
  });
});
