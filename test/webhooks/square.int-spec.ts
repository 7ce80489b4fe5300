import { randomUUID } from 'node:crypto';
import request from 'supertest';
import type { EndpointDefinition } from '../../src/config/options';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { apiPayment, disputeNotification, paymentNotification, published, publishedText } from '../fixtures/square';
import { AUTH, createTestApp, eventually, PLATFORMS, TestApp, truncateAll } from '../support/app';
import { driver, uniqueId } from '../support/domain';

/** The subscription's signature keys (the second one, for a rotation) and the URL registered at Square. */
const KEY = 'sq-signature-key-main-0001';
const NEXT_KEY = 'sq-signature-key-main-0002';
const PLATFORM_KEY = 'sq-signature-key-platform-0001';
const URL = 'https://shop.example/webhooks/square-main';
const PLATFORM_URL = 'https://shop.example/webhooks/square-platform';
/** The seller of Square's published payment examples, and another one. */
const MERCHANT = '6SSW7HV8K2ST5';
const OTHER_MERCHANT = '0HPGX5JYE6EE1';
const MAX_BODY = 1_048_576;

const ENDPOINTS: EndpointDefinition[] = [
  { id: 'square-main', provider: 'square', secrets: [KEY, NEXT_KEY], merchantAccountId: MERCHANT, notificationUrl: URL },
  { id: 'square-platform', provider: 'square', secrets: [PLATFORM_KEY], merchantAccountIds: [MERCHANT, OTHER_MERCHANT], notificationUrl: PLATFORM_URL },
];

const FAST = { carrierBackoffBaseMs: 20, carrierBackoffCapMs: 200, sweepIntervalMs: 200, sweepAfterMs: 100, inboxAttempts: 4, inboxBackoffMs: 50 };

type Json = Record<string, any>;

/**
 * Square's webhooks through the real route (docs/webhooks.md#square): a notification signed over
 * `<notificationUrl><raw body>` with the subscription's signature key, verified with the official
 * `square` package; payment events by status, disputes, cumulative refunds from `refunded_money`;
 * a paid order shipped exactly once.
 */
describe.each(PLATFORMS)('%s: Square notifications, end to end (workers on)', (platform) => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    await sim.start();
    t = await createTestApp(
      { endpoints: ENDPOINTS, runWorkers: true, carriers: [{ name: 'default', url: sim.url, timeoutMs: 1_000 }], tuning: FAST },
      { platform },
    );
    d = driver(t);
  });
  afterAll(async () => {
    await t?.close();
    await sim.stop();
  });
  beforeEach(async () => {
    await truncateAll(t.dataSource);
    sim.reset();
  });

  /** Posts `body` to an endpoint with `headers` (none: unsigned). */
  const post = (endpointId: string, body: string | Buffer, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    request(t.app.getHttpServer()).post(`/webhooks/${endpointId}`).set(headers).send(body);
  /** Posts `body` signed as Square signs it for the endpoint (its first key and its registered URL, unless told). */
  const deliver = (body: Json | string, opts: { endpointId?: string; key?: string; url?: string } = {}) => {
    const endpointId = opts.endpointId ?? 'square-main';
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    const platformEndpoint = endpointId === 'square-platform';
    const headers = signedHeaders('square', opts.key ?? (platformEndpoint ? PLATFORM_KEY : KEY), text, { notificationUrl: opts.url ?? (platformEndpoint ? PLATFORM_URL : URL) });
    return post(endpointId, text, headers);
  };
  const accepted = async (body: Json, opts: { endpointId?: string } = {}) => {
    const res = await deliver(body, opts);
    expect([res.status, res.body]).toEqual([200, { status: 'accepted', eventId: body.event_id }]);
  };

  /** A payment object of Square's published example, made this scenario's. */
  const payment = (fields: Json = {}): Json => ({
    ...published('payment.updated.COMPLETED').data.object.payment,
    id: uniqueId('sqpay'),
    amount_money: { amount: 4990, currency: 'EUR' },
    approved_money: { amount: 4990, currency: 'EUR' },
    total_money: { amount: 4990, currency: 'EUR' },
    ...fields,
  });
  /** A notification with an event id of its own (Square's published examples reuse theirs). */
  const updated = (p: Json, merchantId = MERCHANT) => paymentNotification('payment.updated', p, { eventId: randomUUID(), merchantId });
  const created = (p: Json) => paymentNotification('payment.created', p, { eventId: randomUUID(), merchantId: MERCHANT });
  const dispute = (type: 'dispute.created' | 'dispute.state.changed' | 'dispute.state.updated', paymentId: string, state: string) =>
    // In the payment's currency, as Square states a dispute.
    disputeNotification(type, paymentId, state, { eventId: randomUUID(), merchantId: MERCHANT, amountMoney: { amount: 4990, currency: 'EUR' } });

  const inboxRows = () => d.count(`SELECT 1 FROM webhook_inbox`);
  const shipmentsFor = (orderId: string) => sim.shipments.filter((s) => s.orderId === orderId);
  const fulfillmentsOf = (orderId: string) => d.count(`SELECT 1 FROM fulfillments WHERE order_id = $1`, [orderId]);
  const fulfilled = (orderId: string) => eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 20_000, `order ${orderId} fulfilled`);
  const paymentOf = async (providerPaymentId: string) => {
    const res = await d.http().get('/payments').query({ provider: 'square', providerPaymentId }).set(AUTH);
    const [found] = res.body.items as Array<{ status: string; refundedAmount: string; merchantAccountId: string }>;
    return found;
  };
  const applied = async (body: Json) => expect(await d.processed(body.event_id, 20_000)).toMatchObject({ status: 'processed', outcome: 'applied' });

  /** An order paid by a completed Square payment whose reference_id is the order's reference. */
  async function paidOrder() {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const p = payment({ reference_id: reference, status: 'COMPLETED' });
    const completed = updated(p);
    await accepted(completed);
    await applied(completed);
    await fulfilled(order.id);
    return { order, p, completed };
  }

  it('payment.updated COMPLETED pays the order its reference_id names: fulfilled exactly once; the same notification again is a duplicate and changes nothing', async () => {
    const { order, p, completed } = await paidOrder();
    const view = await d.getOrder(order.id);
    expect(view.payments).toHaveLength(1);
    expect(view.payments[0]).toMatchObject({ provider: 'square', providerPaymentId: p.id, merchantAccountId: MERCHANT, status: 'succeeded', amount: '49.90' });
    expect(shipmentsFor(order.id)).toHaveLength(1);

    // The archive keeps the bytes as signed, the payment as resource id, the signature redacted.
    const archive = await d.http().get('/admin/webhook-deliveries').query({ eventId: completed.event_id }).set(AUTH);
    expect(archive.body.items).toHaveLength(1);
    expect(archive.body.items[0]).toMatchObject({ provider: 'square', eventType: 'payment.updated', resourceId: p.id, merchantAccountId: MERCHANT, deliveryId: null, apiVersion: null });
    const detail = await d.http().get(`/admin/webhook-deliveries/${archive.body.items[0].id}`).set(AUTH);
    expect(detail.body.body).toEqual(completed);
    expect(detail.body.headers['x-square-hmacsha256-signature']).toBe('[redacted]');
    const signature = signedHeaders('square', KEY, JSON.stringify(completed), { notificationUrl: URL })['x-square-hmacsha256-signature'];
    expect(detail.text).not.toContain(signature);

    // Square delivers it again (a retry): the same event, nothing new.
    const rows = await inboxRows();
    const again = await deliver(completed);
    expect([again.status, again.body]).toEqual([200, { status: 'duplicate', eventId: completed.event_id }]);
    expect(await inboxRows()).toBe(rows);
    expect(shipmentsFor(order.id)).toHaveLength(1);
    expect(await fulfillmentsOf(order.id)).toBe(1);
  });

  it("Square's published payment.updated, its exact bytes, pays the order the payment is registered for", async () => {
    const order = await d.createOrder('1.00', 'USD');
    await d.registerPayment(order.id, 'square', 'hYy9pRFVxpDsO1FB05SunFWUe9JZY', MERCHANT);
    const bytes = publishedText('payment.updated.COMPLETED');
    const res = await deliver(bytes);
    expect([res.status, res.body]).toEqual([200, { status: 'accepted', eventId: '6a8f5f28-54a1-4eb0-a98a-3111513fd4fc' }]);
    expect(await d.processed('6a8f5f28-54a1-4eb0-a98a-3111513fd4fc', 20_000)).toMatchObject({ status: 'processed', outcome: 'applied' });
    await fulfilled(order.id);
    const [row] = await t.dataSource.query(`SELECT body FROM webhook_inbox WHERE event_id = $1`, ['6a8f5f28-54a1-4eb0-a98a-3111513fd4fc']);
    expect(row.body).toBe(bytes);
  });

  it('payment.created APPROVED, then payment.updated COMPLETED: authorized, then succeeded; the order named by its id in reference_id', async () => {
    const order = await d.createOrder('49.90', 'EUR');
    const p = payment({ reference_id: order.id, status: 'APPROVED' });
    const approved = created(p);
    await accepted(approved);
    await applied(approved);
    expect((await d.getOrder(order.id)).status).toBe('awaiting_payment');
    expect(await paymentOf(p.id)).toMatchObject({ status: 'authorized' });

    const completed = updated({ ...p, status: 'COMPLETED' });
    await accepted(completed);
    await applied(completed);
    await fulfilled(order.id);
    expect(await paymentOf(p.id)).toMatchObject({ status: 'succeeded' });
    expect(shipmentsFor(order.id)).toHaveLength(1);
  });

  it('each payment status moves the payment as the table says: PENDING processing, CANCELED canceled, FAILED failed (nothing ships)', async () => {
    const seen: Array<[string, string, string]> = [];
    for (const [status, expected] of [
      ['PENDING', 'processing'],
      ['CANCELED', 'canceled'],
      ['FAILED', 'failed'],
    ]) {
      const order = await d.createOrder('10.00', 'USD');
      // The canceled payment of Square's API examples (10.00 USD, a tip outside amount_money), made this scenario's.
      const p = { ...apiPayment('CancelPaymentResponse'), id: uniqueId('sqpay'), reference_id: order.id, status };
      const event = updated(p);
      await accepted(event);
      await applied(event);
      seen.push([status, (await paymentOf(p.id)).status, (await d.getOrder(order.id)).status]);
    }
    expect(seen).toEqual([
      ['PENDING', 'processing', 'awaiting_payment'],
      ['CANCELED', 'canceled', 'awaiting_payment'],
      ['FAILED', 'failed', 'awaiting_payment'],
    ]);
    expect(await d.count(`SELECT 1 FROM fulfillments`)).toBe(0);
  });

  it('disputes: dispute.created disputed; dispute.state.updated WON back to succeeded; dispute.state.changed LOST dispute_lost', async () => {
    const won = await paidOrder();
    const opened = dispute('dispute.created', won.p.id, 'EVIDENCE_REQUIRED');
    await accepted(opened);
    await applied(opened);
    expect(await paymentOf(won.p.id)).toMatchObject({ status: 'disputed' });
    const decided = dispute('dispute.state.updated', won.p.id, 'WON');
    await accepted(decided);
    await applied(decided);
    expect(await paymentOf(won.p.id)).toMatchObject({ status: 'succeeded' });

    // The type older subscriptions send (deprecated by Square, still read).
    const lost = await paidOrder();
    const openedToo = dispute('dispute.created', lost.p.id, 'EVIDENCE_REQUIRED');
    await accepted(openedToo);
    await applied(openedToo);
    const lostEvent = dispute('dispute.state.changed', lost.p.id, 'LOST');
    await accepted(lostEvent);
    await applied(lostEvent);
    expect(await paymentOf(lost.p.id)).toMatchObject({ status: 'dispute_lost' });

    // A state that decides nothing (evidence asked for): recorded and ignored.
    const pending = dispute('dispute.state.updated', lost.p.id, 'PROCESSING');
    await accepted(pending);
    expect(await d.processed(pending.event_id, 20_000)).toMatchObject({ status: 'ignored', outcome: 'no_handler' });
    expect(shipmentsFor(won.order.id)).toHaveLength(1);
    expect(shipmentsFor(lost.order.id)).toHaveLength(1);
  });

  it('refunds: refunded_money is the total to date — partial, the same total again adds nothing, then the rest: refunded', async () => {
    const { order, p } = await paidOrder();
    const partial = updated({ ...p, refunded_money: { amount: 1000, currency: 'EUR' }, refund_ids: ['r1'] });
    await accepted(partial);
    await applied(partial);
    expect(await paymentOf(p.id)).toMatchObject({ status: 'partially_refunded', refundedAmount: '10.00' });

    // The same notification again: a duplicate. A later one stating the same total (another event): nothing more.
    const again = await deliver(partial);
    expect([again.status, again.body]).toEqual([200, { status: 'duplicate', eventId: partial.event_id }]);
    const sameTotal = updated({ ...p, refunded_money: { amount: 1000, currency: 'EUR' }, refund_ids: ['r1'] });
    await accepted(sameTotal);
    expect(await d.processed(sameTotal.event_id, 20_000)).toMatchObject({ status: 'processed', outcome: 'already_applied' });
    expect(await paymentOf(p.id)).toMatchObject({ status: 'partially_refunded', refundedAmount: '10.00' });

    const full = updated({ ...p, refunded_money: { amount: 4990, currency: 'EUR' }, refund_ids: ['r1', 'r2'] });
    await accepted(full);
    await applied(full);
    expect(await paymentOf(p.id)).toMatchObject({ status: 'refunded', refundedAmount: '49.90' });
    expect((await d.getOrder(order.id)).status).toBe('refunded');
    expect(shipmentsFor(order.id)).toHaveLength(1);

    // (v4) A refund.updated with an outcome confirms that refund by its id (refund_outcome) and moves
    // no money: the total above counts.
    const refundEvent: Json = { ...published('refund.updated.COMPLETED'), event_id: randomUUID() };
    refundEvent.data.object.refund.payment_id = p.id;
    await accepted(refundEvent);
    expect(await d.processed(refundEvent.event_id, 20_000)).toMatchObject({ status: 'processed', outcome: 'already_applied' });
    expect(await paymentOf(p.id)).toMatchObject({ status: 'refunded', refundedAmount: '49.90' });
  });

  it("another seller's notification: recorded and answered 200, then rejected/account_mismatch, nothing paid; it never takes the key of that seller's endpoint", async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const other = updated(payment({ reference_id: reference }), OTHER_MERCHANT);
    await accepted(other);
    expect(await d.processed(other.event_id, 20_000)).toMatchObject({ status: 'rejected', outcome: 'account_mismatch' });
    expect((await d.getOrder(order.id)).payments).toHaveLength(0);
    expect(await d.count(`SELECT 1 FROM outbox_message`)).toBe(0);

    // Through the endpoint that serves that seller, the same event is new, keyed on its merchant_id.
    await accepted(other, { endpointId: 'square-platform' });
    const rows: Array<{ endpoint: string; account: string }> = await t.dataSource.query(
      `SELECT endpoint_id AS endpoint, merchant_account_id AS account FROM webhook_inbox WHERE event_id = $1 ORDER BY endpoint_id`,
      [other.event_id],
    );
    expect(rows).toEqual([
      // Kept in its endpoint's scope, under the endpoint's account: not the key of the seller it names.
      { endpoint: 'square-main', account: MERCHANT },
      { endpoint: 'square-platform', account: OTHER_MERCHANT },
    ]);
    // A notification that names no seller, to the endpoint of many: 400, nothing recorded.
    const { merchant_id: _m, ...none } = updated(payment());
    const res = await deliver(none, { endpointId: 'square-platform' });
    expect([res.status, res.body]).toEqual([400, { error: 'malformed_payload', detail: 'the endpoint serves many merchant accounts and the body declares none' }]);
    expect(await d.count(`SELECT 1 FROM webhook_inbox WHERE event_id = $1`, [none.event_id])).toBe(0);
  });

  it('types not acted on are recorded and end ignored: a refund, a test notification, a status outside the table', async () => {
    const refund = { ...published('refund.created.PENDING'), event_id: randomUUID(), merchant_id: MERCHANT };
    const test = { merchant_id: MERCHANT, type: 'webhooks.test_notification', event_id: randomUUID(), created_at: '2026-12-01T10:00:00.000Z', data: { type: 'webhooks', id: randomUUID() } };
    const voided = updated(payment({ status: 'VOIDED' }));
    for (const event of [refund, test, voided]) {
      await accepted(event);
      expect(await d.processed(event.event_id, 20_000)).toMatchObject({ status: 'ignored', outcome: 'no_handler' });
    }
    expect(await d.count(`SELECT 1 FROM payments`)).toBe(0);
  });

  it('the checks in their order: 413, 401 missing_signature, 401 invalid_signature, 400 malformed_payload; nothing recorded; every live key verifies', async () => {
    const body = JSON.stringify(updated(payment()));
    const answers: Array<[string, number, unknown]> = [];
    const check = async (what: string, res: request.Response) => answers.push([what, res.status, res.body]);

    const big = JSON.stringify({ ...updated(payment()), padding: 'x'.repeat(MAX_BODY) });
    await check('over the size limit, signed', await deliver(big));
    await check('no signature header', await post('square-main', body));
    await check('a signature header that is not base64', await post('square-main', body, { 'content-type': 'application/json', 'x-square-hmacsha256-signature': 'not a signature' }));
    await check('signed with another key', await deliver(body, { key: PLATFORM_KEY }));
    await check('signed for another URL (the address behind the proxy)', await deliver(body, { url: 'http://127.0.0.1:3000/webhooks/square-main' }));
    const signature = signedHeaders('square', KEY, body, { notificationUrl: URL });
    await check('one byte of the body changed', await post('square-main', body.replace('"EUR"', '"EUX"'), signature));
    await check('the body parsed and serialised again', await post('square-main', JSON.stringify(JSON.parse(body), null, 2), signature));
    await check('signed, not JSON', await deliver('this is not json'));
    await check('signed, no event_id', await deliver({ ...JSON.parse(body), event_id: undefined }));
    expect(answers).toEqual([
      ['over the size limit, signed', 413, { error: 'payload_too_large' }],
      ['no signature header', 401, { error: 'missing_signature' }],
      ['a signature header that is not base64', 401, { error: 'missing_signature' }],
      ['signed with another key', 401, { error: 'invalid_signature' }],
      ['signed for another URL (the address behind the proxy)', 401, { error: 'invalid_signature' }],
      ['one byte of the body changed', 401, { error: 'invalid_signature' }],
      ['the body parsed and serialised again', 401, { error: 'invalid_signature' }],
      ['signed, not JSON', 400, { error: 'malformed_payload', detail: 'the body is not JSON' }],
      ['signed, no event_id', 400, { error: 'malformed_payload', detail: 'event_id is missing' }],
    ]);
    expect(await inboxRows()).toBe(0);

    // The endpoint's second key (a rotation) verifies as well as its first.
    const rotated = updated(payment());
    const res = await deliver(rotated, { key: NEXT_KEY });
    expect([res.status, res.body]).toEqual([200, { status: 'accepted', eventId: rotated.event_id }]);
    expect(await inboxRows()).toBe(1);
  });
});
