import request from 'supertest';
import { crc32 } from '../../src/common/crc32';
import type { EndpointDefinition } from '../../src/config/options';
import { paypalHeaders, paypalTransmissionTime, PaypalCertServer, startPaypalCertServer } from '../../src/testing/paypal';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { paypalBody } from '../fixtures/paypal';
import { AUTH, createTestApp, eventually, PLATFORMS, TestApp, truncateAll } from '../support/app';
import { padToCrc32 } from '../support/crc32-collision';
import { driver, uniqueId } from '../support/domain';

const WEBHOOK_ID = '4JH86294D6297924G';
const ACCOUNT = 'MERCHANTPP1';
/** The account of a second endpoint, for what one account's events may do to another's payments. */
const OTHER_ACCOUNT = 'MERCHANTPP2';

const FAST = { carrierBackoffBaseMs: 20, carrierBackoffCapMs: 200, sweepIntervalMs: 200, sweepAfterMs: 100, inboxAttempts: 3, inboxBackoffMs: 50 };

/** A PayPal id: upper-case letters and digits, as PayPal writes them. */
const paypalId = (prefix = '') => `${prefix}${uniqueId('X').slice(2).toUpperCase()}`;
const eventId = () => `WH-${paypalId()}-${paypalId()}`;

/** A published body with the ids of a test: the envelope's id and type, and the resource as given. */
function envelope(sample: string, eventType: string, resource: Record<string, unknown>): Record<string, unknown> {
  const { body } = paypalBody(sample);
  return { ...body, id: eventId(), event_type: eventType, resource: { ...(body.resource as object), ...resource } };
}

const upLink = (href: string) => [
  { href: 'https://api.paypal.com/v2/payments/x', rel: 'self', method: 'GET' },
  { href, rel: 'up', method: 'GET' },
];

/** A capture event (PayPal's Pay upon Invoice sample, which carries the order id and custom_id). */
function capture(type: string, o: { orderId: string; captureId: string; reference: string; value?: string; currency?: string; merchantId?: string }) {
  return envelope('PAYMENT.CAPTURE.COMPLETED.pui-docs', type, {
    id: o.captureId,
    status: type.split('.').pop(),
    amount: { value: o.value ?? '49.90', currency_code: o.currency ?? 'EUR' },
    custom_id: o.reference,
    supplementary_data: { related_ids: { order_id: o.orderId } },
    ...(o.merchantId ? { payee: { merchant_id: o.merchantId } } : {}),
  });
}

/** A refund or reversal of a capture (the simulator's sample: the capture named only by its `up` link). */
function refund(type: 'PAYMENT.CAPTURE.REFUNDED' | 'PAYMENT.CAPTURE.REVERSED', o: { refundId: string; captureId: string; value: string; currency?: string }) {
  return envelope('PAYMENT.CAPTURE.REFUNDED', type, {
    id: o.refundId,
    amount: { value: o.value, currency_code: o.currency ?? 'EUR' },
    links: upLink(`https://api.paypal.com/v2/payments/captures/${o.captureId}`),
  });
}

function dispute(type: string, captureId: string, outcome?: string) {
  const { body } = paypalBody('CUSTOMER.DISPUTE.CREATED');
  const resource = body.resource as Record<string, unknown>;
  const [transaction] = resource.disputed_transactions as Array<Record<string, unknown>>;
  return envelope('CUSTOMER.DISPUTE.CREATED', type, {
    dispute_amount: { currency_code: 'EUR', value: '49.90' },
    disputed_transactions: [{ ...transaction, seller_transaction_id: captureId }],
    ...(outcome ? { status: 'RESOLVED', dispute_outcome: { outcome_code: outcome } } : {}),
  });
}

function approvedOrder(orderId: string, reference: string) {
  const { body } = paypalBody('CHECKOUT.ORDER.APPROVED');
  const resource = body.resource as Record<string, unknown>;
  const [unit] = resource.purchase_units as Array<Record<string, unknown>>;
  return envelope('CHECKOUT.ORDER.APPROVED', 'CHECKOUT.ORDER.APPROVED', {
    id: orderId,
    purchase_units: [{ ...unit, custom_id: reference, amount: { currency_code: 'EUR', value: '49.90' } }],
  });
}

function authorization(type: string, orderId: string, reference: string) {
  return envelope('PAYMENT.AUTHORIZATION.VOIDED', type, {
    id: paypalId('AUTH'),
    status: type.split('.').pop(),
    custom_id: reference,
    amount: { currency_code: 'EUR', value: '49.90' },
    supplementary_data: { related_ids: { order_id: orderId } },
  });
}

/**
 * PayPal's webhooks through the real route (docs/webhooks.md#paypal): signed by the test kit's key,
 * whose certificate the kit's server serves on 127.0.0.1 and the endpoint trusts through its CA.
 */
describe.each(PLATFORMS)('%s: PayPal webhooks, end to end (workers on)', (platform) => {
  const sim = new CarrierSimulator();
  let certs: PaypalCertServer;
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    await sim.start();
    certs = await startPaypalCertServer();
    const endpoints: EndpointDefinition[] = [
      { id: 'paypal-main', provider: 'paypal', secrets: [], merchantAccountId: ACCOUNT, webhookId: WEBHOOK_ID, caPem: certs.caPem, certHosts: [certs.certHost] },
      { id: 'paypal-other', provider: 'paypal', secrets: [], merchantAccountId: OTHER_ACCOUNT, webhookId: WEBHOOK_ID, caPem: certs.caPem, certHosts: [certs.certHost] },
    ];
    t = await createTestApp(
      { endpoints, runWorkers: true, carriers: [{ name: 'default', url: sim.url, timeoutMs: 1_000 }], tuning: FAST, webhookMaxBodyBytes: 64 * 1024 },
      { platform },
    );
    d = driver(t);
  });
  afterAll(async () => {
    await t?.close();
    await certs?.close();
    await sim.stop();
  });
  beforeEach(async () => {
    await truncateAll(t.dataSource);
    sim.reset();
  });

  const post = (text: string, headers: Record<string, string>, endpointId = 'paypal-main') =>
    request(t.app.getHttpServer()).post(`/webhooks/${endpointId}`).set(headers).send(text);
  /** Signs and posts a body as PayPal does (a new transmission each time). */
  async function deliver(body: Record<string, unknown> | string, expected: 'accepted' | 'duplicate' = 'accepted', endpointId = 'paypal-main') {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    const res = await post(text, signedHeaders('paypal', WEBHOOK_ID, text, { certUrl: certs.certUrl }), endpointId);
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { status: expected, eventId: JSON.parse(text).id } });
    return text;
  }
  const idOf = (body: Record<string, unknown>) => body.id as string;
  const paymentOf = async (orderId: string) => (await d.getOrder(orderId)).payments[0];
  const shipmentsFor = (orderId: string) => sim.shipments.filter((s) => s.orderId === orderId);
  const fulfilled = (orderId: string) => eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 15_000, `order ${orderId} fulfilled`);

  /** An order paid through PayPal: its PayPal order id and capture id. */
  async function paidOrder() {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const ids = { orderId: paypalId('O'), captureId: paypalId('C'), reference };
    const completed = capture('PAYMENT.CAPTURE.COMPLETED', ids);
    await deliver(completed);
    expect(await d.processed(idOf(completed))).toMatchObject({ status: 'processed', outcome: 'applied' });
    return { order, ...ids };
  }

  it('PAYMENT.CAPTURE.COMPLETED pays the order its custom_id names, fulfilled exactly once; the same delivery again is a duplicate and changes nothing', async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const ids = { orderId: paypalId('O'), captureId: paypalId('C'), reference };
    const completed = capture('PAYMENT.CAPTURE.COMPLETED', ids);
    const text = await deliver(completed);
    expect(await d.processed(idOf(completed))).toMatchObject({ status: 'processed', outcome: 'applied' });
    await fulfilled(order.id);
    const view = await d.getOrder(order.id);
    expect(view.payments).toHaveLength(1);
    expect(view.payments[0]).toMatchObject({ provider: 'paypal', providerPaymentId: ids.orderId, merchantAccountId: ACCOUNT, status: 'succeeded', amount: '49.90' });
    expect(shipmentsFor(order.id)).toHaveLength(1);
    // The archive: the PayPal order as resource, the transmission as delivery id, the signature redacted.
    const archive = await d.http().get('/admin/webhook-deliveries').query({ eventId: idOf(completed) }).set(AUTH);
    expect(archive.body.items).toEqual([expect.objectContaining({ provider: 'paypal', eventType: 'PAYMENT.CAPTURE.COMPLETED', resourceId: ids.orderId, merchantAccountId: ACCOUNT })]);
    const detail = await d.http().get(`/admin/webhook-deliveries/${archive.body.items[0].id}`).set(AUTH);
    expect(detail.body.headers['paypal-transmission-sig']).toBe('[redacted]');
    expect(detail.body.headers['paypal-cert-url']).toBe(certs.certUrl);

    // PayPal sends it again (a new transmission of the same event): duplicate, nothing new.
    const rows = await d.count('SELECT 1 FROM webhook_inbox');
    await deliver(text, 'duplicate');
    expect(await d.count('SELECT 1 FROM webhook_inbox')).toBe(rows);
    expect(shipmentsFor(order.id)).toHaveLength(1);
    expect(await d.count('SELECT 1 FROM fulfillments WHERE order_id = $1', [order.id])).toBe(1);
    // One fetch of the certificate served every delivery since.
    expect(certs.requests).toBe(1);
  });

  it.each([
    ['CHECKOUT.ORDER.APPROVED', 'authorized'],
    ['PAYMENT.AUTHORIZATION.CREATED', 'authorized'],
    ['PAYMENT.AUTHORIZATION.VOIDED', 'canceled'],
    ['PAYMENT.CAPTURE.PENDING', 'processing'],
    ['PAYMENT.CAPTURE.DENIED', 'failed'],
    ['PAYMENT.CAPTURE.DECLINED', 'failed'],
  ])('%s moves the payment to %s', async (type, status) => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const orderId = paypalId('O');
    const body = type === 'CHECKOUT.ORDER.APPROVED'
      ? approvedOrder(orderId, reference)
      : type.startsWith('PAYMENT.AUTHORIZATION.')
        ? authorization(type, orderId, reference)
        : capture(type, { orderId, captureId: paypalId('C'), reference });
    await deliver(body);
    expect(await d.processed(idOf(body))).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf(order.id)).toMatchObject({ providerPaymentId: orderId, status });
    expect((await d.getOrder(order.id)).status).toBe('awaiting_payment');
  });

  it('refunds: each of its own amount, summed per refund id; the same refund again adds nothing; the rest makes it refunded', async () => {
    const { order, captureId } = await paidOrder();
    const first = refund('PAYMENT.CAPTURE.REFUNDED', { refundId: paypalId('R'), captureId, value: '10.00' });
    const text = await deliver(first);
    expect(await d.processed(idOf(first))).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf(order.id)).toMatchObject({ status: 'partially_refunded', refundedAmount: '10.00' });
    // The same delivery again: duplicate. The same refund under another event id: counted once.
    await deliver(text, 'duplicate');
    const again = { ...first, id: eventId() };
    await deliver(again);
    expect(await d.processed(idOf(again))).toMatchObject({ status: 'processed', outcome: 'already_applied' });
    expect(await paymentOf(order.id)).toMatchObject({ status: 'partially_refunded', refundedAmount: '10.00' });
    // The row of a refund is its payment's: the archive finds it under the PayPal order id.
    const [row] = await t.dataSource.query('SELECT resource_id AS "resourceId" FROM webhook_inbox WHERE event_id = $1', [idOf(first)]);
    expect(row.resourceId).toBe((await paymentOf(order.id)).providerPaymentId);

    const rest = refund('PAYMENT.CAPTURE.REFUNDED', { refundId: paypalId('R'), captureId, value: '39.90' });
    await deliver(rest);
    expect(await d.processed(idOf(rest))).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf(order.id)).toMatchObject({ status: 'refunded', refundedAmount: '49.90' });
    await eventually(async () => (await d.getOrder(order.id)).status === 'refunded', 15_000, 'order refunded');
  });

  it('PAYMENT.CAPTURE.REVERSED refunds what is left of the payment', async () => {
    const { order, captureId } = await paidOrder();
    const partial = refund('PAYMENT.CAPTURE.REFUNDED', { refundId: paypalId('R'), captureId, value: '5.00' });
    await deliver(partial);
    await d.processed(idOf(partial));
    const reversed = refund('PAYMENT.CAPTURE.REVERSED', { refundId: paypalId('R'), captureId, value: '49.90' });
    await deliver(reversed);
    expect(await d.processed(idOf(reversed))).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf(order.id)).toMatchObject({ status: 'refunded', refundedAmount: '49.90' });
  });

  it('PAYMENT.CAPTURE.REVERSED of a payment not captured yet is a refund too early: rejected/illegal_transition, never a cancel, and applied once the capture completes', async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const ids = { orderId: paypalId('O'), captureId: paypalId('C'), reference };
    const pending = capture('PAYMENT.CAPTURE.PENDING', ids);
    await deliver(pending);
    expect(await d.processed(idOf(pending))).toMatchObject({ status: 'processed', outcome: 'applied' });
    const reversed = refund('PAYMENT.CAPTURE.REVERSED', { refundId: paypalId('R'), captureId: ids.captureId, value: '49.90' });
    await deliver(reversed);
    const early = await d.processed(idOf(reversed));
    const payment = await paymentOf(order.id);
    console.log(`[${platform}] a reversal of a payment still processing: ${early.status}/${early.outcome}, payment ${payment.status}`);
    expect(early).toMatchObject({ status: 'rejected', outcome: 'illegal_transition' });
    expect(payment).toMatchObject({ status: 'processing', refundedAmount: '0.00' });
    const completed = capture('PAYMENT.CAPTURE.COMPLETED', ids);
    await deliver(completed);
    expect(await d.processed(idOf(completed))).toMatchObject({ status: 'processed', outcome: 'applied' });
    await eventually(async () => (await paymentOf(order.id))?.status === 'refunded', 15_000, 'the early reversal applied once captured');
    expect(await paymentOf(order.id)).toMatchObject({ status: 'refunded', refundedAmount: '49.90' });
  });

  it("another account's refund naming a capture of this account moves nothing: it waits for a capture of its own account", async () => {
    const { order, captureId } = await paidOrder();
    // Through the other account's endpoint: the capture is looked up in that account, where it is not.
    const foreign = refund('PAYMENT.CAPTURE.REFUNDED', { refundId: paypalId('R'), captureId, value: '49.90' });
    await deliver(foreign, 'accepted', 'paypal-other');
    const outcome = await d.processed(idOf(foreign), 30_000);
    expect(outcome).toMatchObject({ status: 'unmatched', outcome: 'payment_not_found' });
    // The same, declaring this account as payee: the other endpoint does not serve it.
    const declaring = { ...refund('PAYMENT.CAPTURE.REFUNDED', { refundId: paypalId('R'), captureId, value: '49.90' }) };
    (declaring.resource as Record<string, unknown>).payee = { merchant_id: ACCOUNT };
    await deliver(declaring, 'accepted', 'paypal-other');
    expect(await d.processed(idOf(declaring))).toMatchObject({ status: 'rejected', outcome: 'account_mismatch' });
    console.log(`[${platform}] another account's refunds of this account's capture: ${outcome.status}/${outcome.outcome}, then account_mismatch`);
    expect(await paymentOf(order.id)).toMatchObject({ merchantAccountId: ACCOUNT, status: 'succeeded', refundedAmount: '0.00' });
    expect((await d.getOrder(order.id)).status).not.toBe('refunded');
  });

  it("a body of another event with the genuine body's CRC32, under the genuine headers: 401 once the genuine one came, nothing recorded; the genuine bytes again are a duplicate", async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const ids = { orderId: paypalId('O'), captureId: paypalId('C'), reference };
    const genuine = JSON.stringify(capture('PAYMENT.CAPTURE.COMPLETED', ids));
    const headers = paypalHeaders(WEBHOOK_ID, genuine, { certUrl: certs.certUrl });
    expect((await post(genuine, headers)).status).toBe(200);
    await d.processed(JSON.parse(genuine).id);
    // What anyone who saw the delivery can write: a refund of the whole capture, padded to the same CRC32.
    const refundText = JSON.stringify(refund('PAYMENT.CAPTURE.REFUNDED', { refundId: paypalId('R'), captureId: ids.captureId, value: '49.90' }));
    // Text, so that supertest sends the bytes as they are (a Buffer with a JSON content type it would serialise).
    const forged = padToCrc32(Buffer.from(refundText), crc32(Buffer.from(genuine))).toString('utf8');
    expect(crc32(Buffer.from(forged))).toBe(crc32(Buffer.from(genuine)));
    const rows = await d.count('SELECT 1 FROM webhook_inbox');
    const res = await post(forged, headers);
    console.log(`[${platform}] a forged refund of the genuine CRC32 under the genuine headers: ${res.status} ${JSON.stringify(res.body)}`);
    expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { error: 'invalid_signature' } });
    expect(await d.count('SELECT 1 FROM webhook_inbox')).toBe(rows);
    expect(await paymentOf(order.id)).toMatchObject({ status: 'succeeded', refundedAmount: '0.00' });
    // PayPal's resend of that transmission: the same bytes, a duplicate.
    const again = await post(genuine, headers);
    expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: { status: 'duplicate', eventId: JSON.parse(genuine).id } });
  });

  it('a refund of a capture not seen yet waits (unmatched/payment_not_found) and is applied once the capture is processed', async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const ids = { orderId: paypalId('O'), captureId: paypalId('C'), reference };
    const early = refund('PAYMENT.CAPTURE.REFUNDED', { refundId: paypalId('R'), captureId: ids.captureId, value: '49.90' });
    await deliver(early);
    expect(await d.processed(idOf(early), 30_000)).toMatchObject({ status: 'unmatched', outcome: 'payment_not_found' });
    const completed = capture('PAYMENT.CAPTURE.COMPLETED', ids);
    await deliver(completed);
    expect(await d.processed(idOf(completed))).toMatchObject({ status: 'processed', outcome: 'applied' });
    // Released by the capture's record, and applied to its payment.
    await eventually(async () => (await paymentOf(order.id))?.status === 'refunded', 15_000, 'the waiting refund applied');
    const [row] = await t.dataSource.query('SELECT status, outcome, resource_id AS "resourceId" FROM webhook_inbox WHERE event_id = $1', [idOf(early)]);
    expect(row).toEqual({ status: 'processed', outcome: 'applied', resourceId: ids.orderId });
    expect(await d.count('SELECT 1 FROM payment_captures WHERE capture_id = $1', [ids.captureId])).toBe(1);
  });

  it('disputes, named by the capture: created → disputed; resolved for the seller → won; for the buyer → lost', async () => {
    const won = await paidOrder();
    const opened = dispute('CUSTOMER.DISPUTE.CREATED', won.captureId);
    await deliver(opened);
    expect(await d.processed(idOf(opened))).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf(won.order.id)).toMatchObject({ status: 'disputed' });
    const sellerWins = dispute('CUSTOMER.DISPUTE.RESOLVED', won.captureId, 'RESOLVED_SELLER_FAVOUR');
    await deliver(sellerWins);
    expect(await d.processed(idOf(sellerWins))).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf(won.order.id)).toMatchObject({ status: 'succeeded' });

    const lost = await paidOrder();
    const buyerWins = dispute('CUSTOMER.DISPUTE.RESOLVED', lost.captureId, 'RESOLVED_BUYER_FAVOUR');
    await deliver(buyerWins);
    expect(await d.processed(idOf(buyerWins))).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf(lost.order.id)).toMatchObject({ status: 'dispute_lost' });

    // A resolution that names no outcome decides nothing.
    const open = await paidOrder();
    const opening = dispute('CUSTOMER.DISPUTE.CREATED', open.captureId);
    await deliver(opening);
    expect(await d.processed(idOf(opening))).toMatchObject({ status: 'processed', outcome: 'applied' });
    const unsaid = dispute('CUSTOMER.DISPUTE.RESOLVED', open.captureId);
    (unsaid.resource as Record<string, unknown>).status = 'RESOLVED';
    await deliver(unsaid);
    expect(await d.processed(idOf(unsaid))).toMatchObject({ status: 'ignored' });
    expect(await paymentOf(open.order.id)).toMatchObject({ status: 'disputed' });
  });

  it("another merchant's capture (resource.payee.merchant_id) is recorded and answered, then rejected/account_mismatch; nothing paid", async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const other = capture('PAYMENT.CAPTURE.COMPLETED', { orderId: paypalId('O'), captureId: paypalId('C'), reference, merchantId: 'OTHERMERCHANT' });
    await deliver(other);
    expect(await d.processed(idOf(other))).toMatchObject({ status: 'rejected', outcome: 'account_mismatch' });
    const view = await d.getOrder(order.id);
    expect(view.payments).toHaveLength(0);
    expect(view.status).toBe('awaiting_payment');
    // Its own merchant id is the endpoint's: accepted and applied.
    const own = capture('PAYMENT.CAPTURE.COMPLETED', { orderId: paypalId('O'), captureId: paypalId('C'), reference, merchantId: ACCOUNT });
    await deliver(own);
    expect(await d.processed(idOf(own))).toMatchObject({ status: 'processed', outcome: 'applied' });
  });

  it('a type the service does not act on is recorded and ends ignored', async () => {
    const { text } = paypalBody('PAYMENT.CAPTURE.COMPLETED');
    const sale = { ...JSON.parse(text), id: eventId(), event_type: 'PAYMENT.SALE.COMPLETED' };
    await deliver(sale);
    expect(await d.processed(idOf(sale))).toMatchObject({ status: 'ignored', outcome: 'no_handler' });
  });

  it('the check order: 401 missing_signature, 401 invalid_signature, 401 timestamp_out_of_tolerance, 400 malformed_payload, 413; nothing recorded', async () => {
    const body = JSON.stringify(capture('PAYMENT.CAPTURE.COMPLETED', { orderId: paypalId('O'), captureId: paypalId('C'), reference: 'x' }));
    const headers = () => paypalHeaders(WEBHOOK_ID, body, { certUrl: certs.certUrl });
    const answers: Array<[number, unknown]> = [];
    const send = async (text: string, h: Record<string, string>) => {
      const res = await post(text, h);
      answers.push([res.status, res.body]);
    };
    const { 'paypal-transmission-sig': _dropped, ...unsigned } = headers();
    await send(body, unsigned);
    await send(body, { ...headers(), 'paypal-auth-algo': 'SHA1withRSA' });
    await send(`${body} `, headers());
    await send(body, { ...headers(), 'paypal-cert-url': certs.certUrl.replace('https:', 'http:') });
    await send(body, paypalHeaders(WEBHOOK_ID, body, { certUrl: certs.certUrl, transmissionTime: paypalTransmissionTime(Date.now() - 600_000) }));
    await send('not json', paypalHeaders(WEBHOOK_ID, 'not json', { certUrl: certs.certUrl }));
    const big = JSON.stringify({ id: eventId(), event_type: 'X', pad: 'x'.repeat(70 * 1024) });
    await send(big, paypalHeaders(WEBHOOK_ID, big, { certUrl: certs.certUrl }));
    expect(answers).toEqual([
      [401, { error: 'missing_signature' }],
      [401, { error: 'missing_signature' }],
      [401, { error: 'invalid_signature' }],
      [401, { error: 'invalid_signature' }],
      [401, { error: 'timestamp_out_of_tolerance' }],
      [400, { error: 'malformed_payload', detail: 'the body is not JSON' }],
      [413, { error: 'payload_too_large' }],
    ]);
    expect(await d.count('SELECT 1 FROM webhook_inbox')).toBe(0);
  });
});
