import request from 'supertest';
import type { EndpointDefinition } from '../../src/config/options';
import { signedHeaders, type SignOptions } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { published, publishedText, VALID_VECTORS, type PublishedType } from '../fixtures/paddle';
import { AUTH, createTestApp, eventually, PLATFORMS, TestApp, truncateAll } from '../support/app';
import { driver, uniqueId } from '../support/domain';

/** Notification destinations' secret keys, as Paddle shows them. */
const SECRET = 'pdl_ntfset_01jtestdestination0000000000_Kq3vB8sXr2LmN7pQ4wT9yZ1aC5dE6fGh';
const OLD_SECRET = 'pdl_ntfset_01jtestdestination0000000000_OldOldOldOldOldOldOldOldOld01';
const EU_SECRET = 'pdl_ntfset_01jeudestination00000000000_Eu1Eu2Eu3Eu4Eu5Eu6Eu7Eu8Eu9Eu0';
const SECOND_SECRET = 'pdl_ntfset_01jseconddestination00000000_Sc1Sc2Sc3Sc4Sc5Sc6Sc7Sc8Sc9Sc0';
const ACCOUNT = 'paddle-shop';
const EU_ACCOUNT = 'paddle-eu-shop';
/** Above the largest published body (10.3 KB): the 413 test sends one byte more than this. */
const MAX_BODY = 16_384;

const ENDPOINTS: EndpointDefinition[] = [
  // A rotation under way: the new secret first, the old one until it expires.
  { id: 'paddle-main', provider: 'paddle', secrets: [SECRET, { secret: OLD_SECRET, expiresAt: '2099-01-01T00:00:00Z' }], merchantAccountId: ACCOUNT },
  { id: 'paddle-eu', provider: 'paddle', secrets: [EU_SECRET], merchantAccountId: EU_ACCOUNT },
  // A second destination of the same Paddle account (its own secret key).
  { id: 'paddle-second', provider: 'paddle', secrets: [SECOND_SECRET], merchantAccountId: ACCOUNT },
];

const FAST = { carrierBackoffBaseMs: 20, carrierBackoffCapMs: 200, sweepIntervalMs: 200, sweepAfterMs: 100, inboxAttempts: 4, inboxBackoffMs: 50 };

/** The transaction the published adjustments refund (`data.transaction_id` of both). */
const ADJUSTED_TXN = 'txn_01h8bxpvx398a7zbawb77y0kp5';

/**
 * Paddle Billing through the real route (docs/webhooks.md#paddle): `Paddle-Signature` checked over
 * the raw bytes; a transaction paid or completed pays the order, shipped exactly once; a failed or
 * canceled one moves its payment; approved refunds summed per adjustment id; a chargeback lost. The
 * published bodies carry `custom_data: null`, so their payments are registered by transaction id.
 */
describe.each(PLATFORMS)('%s: Paddle Billing notifications, end to end (workers on)', (platform) => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    await sim.start();
    t = await createTestApp(
      { endpoints: ENDPOINTS, runWorkers: true, carriers: [{ name: 'default', url: sim.url, timeoutMs: 1_000 }], tuning: FAST, webhookMaxBodyBytes: MAX_BODY },
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

  const post = (endpointId: string, body: string | Buffer, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
    request(t.app.getHttpServer()).post(`/webhooks/${endpointId}`).set(headers).send(body);

  /** Posts `body` signed as Paddle signs it for the endpoint (now, unless said). */
  const deliver = (body: string, options: SignOptions & { endpointId?: string; secret?: string } = {}) =>
    post(options.endpointId ?? 'paddle-main', body, signedHeaders('paddle', options.secret ?? (options.endpointId === 'paddle-eu' ? EU_SECRET : SECRET), body, options));

  /** Posts and expects `200 accepted` of the body's event. */
  async function accepted(body: string, options: Parameters<typeof deliver>[1] = {}) {
    const res = await deliver(body, options);
    expect([res.status, res.body]).toEqual([200, { status: 'accepted', eventId: JSON.parse(body).event_id }]);
    return JSON.parse(body).event_id as string;
  }

  /**
   * A published body made another event: fresh event and notification ids, and what `change` sets.
   * Pretty-printed as the published ones are.
   */
  function event(type: PublishedType, change: (body: Record<string, any>) => void = () => undefined): string {
    const body = published(type);
    body.event_id = uniqueId('evt');
    body.notification_id = uniqueId('ntf');
    change(body);
    return JSON.stringify(body, null, 2);
  }

  const inboxRows = () => d.count(`SELECT 1 FROM webhook_inbox`);
  const shipmentsFor = (orderId: string) => sim.shipments.filter((s) => s.orderId === orderId);
  const fulfillmentsOf = (orderId: string) => d.count(`SELECT 1 FROM fulfillments WHERE order_id = $1`, [orderId]);
  const fulfilled = (orderId: string) => eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 15_000, `order ${orderId} fulfilled`);
  const paymentOf = async (transactionId: string) => {
    const res = await d.http().get('/payments').query({ provider: 'paddle', providerPaymentId: transactionId }).set(AUTH);
    expect(res.body.items).toHaveLength(1);
    const [payment] = res.body.items as Array<{ status: string; refundedAmount: string; amount: string; currency: string; merchantAccountId: string }>;
    return payment;
  };

  it('transaction.paid as published (custom_data null), its payment registered by transaction id: paid and fulfilled exactly once; the same delivery again is a duplicate', async () => {
    const order = await d.createOrder('898.80', 'GBP');
    await d.registerPayment(order.id, 'paddle', 'txn_01gxwxqj0rd5m8j1zdhvk05twz', ACCOUNT);
    const body = publishedText('transaction.paid');
    const eventId = await accepted(body);
    expect(eventId).toBe('evt_01gxwxwnba186hj04xy8hf6wkd');
    expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    await fulfilled(order.id);
    expect(await paymentOf('txn_01gxwxqj0rd5m8j1zdhvk05twz')).toMatchObject({ status: 'succeeded', amount: '898.80', currency: 'GBP', merchantAccountId: ACCOUNT });
    expect(shipmentsFor(order.id)).toHaveLength(1);

    // The archive: keyed on event_id, the notification id its delivery id, the signature redacted.
    const archive = await d.http().get('/admin/webhook-deliveries').query({ eventId }).set(AUTH);
    expect(archive.body.items).toHaveLength(1);
    expect(archive.body.items[0]).toMatchObject({
      endpointId: 'paddle-main',
      provider: 'paddle',
      merchantAccountId: ACCOUNT,
      eventType: 'transaction.paid',
      resourceId: 'txn_01gxwxqj0rd5m8j1zdhvk05twz',
      deliveryId: 'ntf_01gxwxwndpbwrq43b9zrgppaev',
      apiVersion: null,
    });
    const detail = await d.http().get(`/admin/webhook-deliveries/${archive.body.items[0].id}`).set(AUTH);
    expect(detail.body.headers['paddle-signature']).toBe('[redacted]');
    expect(detail.body.body).toEqual(JSON.parse(body));

    // Paddle's retry: the same bytes, a new signature timestamp. A duplicate, and nothing changes.
    const rows = await inboxRows();
    const again = await deliver(body, { timestamp: Math.floor(Date.now() / 1000) + 1 });
    expect([again.status, again.body]).toEqual([200, { status: 'duplicate', eventId }]);
    // A replay from Paddle's dashboard: a new notification id for the same event, the same key.
    const replay = JSON.stringify({ ...JSON.parse(body), notification_id: 'ntf_01replayreplayreplayreplay01' }, null, 2);
    expect((await deliver(replay)).body).toEqual({ status: 'duplicate', eventId });
    // The same event notified to a second destination of the account: its own notification id, one event.
    const second = JSON.stringify({ ...JSON.parse(body), notification_id: 'ntf_01seconddestinationnotific01' }, null, 2);
    expect((await deliver(second, { endpointId: 'paddle-second', secret: SECOND_SECRET })).body).toEqual({ status: 'duplicate', eventId });
    expect(await inboxRows()).toBe(rows);
    expect(shipmentsFor(order.id)).toHaveLength(1);
    expect(await fulfillmentsOf(order.id)).toBe(1);
  });

  it('transaction.paid before its payment is registered: parked unmatched, then processed at once when the transaction id is registered', async () => {
    const order = await d.createOrder('898.80', 'GBP');
    const eventId = await accepted(publishedText('transaction.paid'));
    expect(await d.processed(eventId, 30_000)).toMatchObject({ status: 'unmatched', outcome: 'payment_not_found' });
    await d.registerPayment(order.id, 'paddle', 'txn_01gxwxqj0rd5m8j1zdhvk05twz', ACCOUNT);
    await fulfilled(order.id);
    expect(shipmentsFor(order.id)).toHaveLength(1);
  });

  it('transaction.completed naming the order in custom_data.order_id, never registered: the payment is created for it, paid and fulfilled once', async () => {
    const order = await d.createOrder('652.15', 'USD');
    const transactionId = uniqueId('txn');
    const eventId = await accepted(
      event('transaction.completed', (b) => {
        b.data.id = transactionId;
        b.data.custom_data = { order_id: order.id };
      }),
    );
    expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    await fulfilled(order.id);
    const view = await d.getOrder(order.id);
    expect(view.payments).toHaveLength(1);
    expect(view.payments[0]).toMatchObject({ provider: 'paddle', providerPaymentId: transactionId, merchantAccountId: ACCOUNT, status: 'succeeded', amount: '652.15' });
    // transaction.paid and transaction.completed are both the success: the second changes nothing.
    const paid = await accepted(event('transaction.paid', (b) => Object.assign(b.data, { id: transactionId, custom_data: { order_id: order.id }, currency_code: 'USD', details: { totals: { grand_total: '65215' } } })));
    expect(await d.processed(paid)).toMatchObject({ status: 'processed', outcome: 'already_applied' });
    expect(shipmentsFor(order.id)).toHaveLength(1);
  });

  it('transaction.payment_failed then transaction.completed, the published pair on one transaction: failed, then succeeded and fulfilled', async () => {
    const order = await d.createOrder('652.15', 'USD');
    await d.registerPayment(order.id, 'paddle', 'txn_01h8dzxgkvdwemdhbpcapj2tbj', ACCOUNT);
    const failed = await accepted(publishedText('transaction.payment_failed'));
    expect(await d.processed(failed)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf('txn_01h8dzxgkvdwemdhbpcapj2tbj')).toMatchObject({ status: 'failed' });
    expect((await d.getOrder(order.id)).status).toBe('awaiting_payment');

    const completed = await accepted(publishedText('transaction.completed'));
    expect(await d.processed(completed)).toMatchObject({ status: 'processed', outcome: 'applied' });
    await fulfilled(order.id);
    expect(await paymentOf('txn_01h8dzxgkvdwemdhbpcapj2tbj')).toMatchObject({ status: 'succeeded' });
    expect(shipmentsFor(order.id)).toHaveLength(1);
  });

  it('transaction.canceled as published: the payment canceled, the order still awaiting payment, nothing shipped', async () => {
    const order = await d.createOrder('14370.41', 'USD');
    await d.registerPayment(order.id, 'paddle', 'txn_01h8e0d5sej61d5n18bth8d7se', ACCOUNT);
    const eventId = await accepted(publishedText('transaction.canceled'));
    expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf('txn_01h8e0d5sej61d5n18bth8d7se')).toMatchObject({ status: 'canceled' });
    expect((await d.getOrder(order.id)).status).toBe('awaiting_payment');
    expect(await fulfillmentsOf(order.id)).toBe(0);
  });

  it('a grand_total other than the order\'s: rejected/amount_mismatch, nothing paid or shipped', async () => {
    const order = await d.createOrder('652.14', 'USD');
    const eventId = await accepted(event('transaction.completed', (b) => Object.assign(b.data, { id: uniqueId('txn'), custom_data: { order_id: order.id } })));
    expect(await d.processed(eventId)).toMatchObject({ status: 'rejected', outcome: 'amount_mismatch' });
    expect((await d.getOrder(order.id)).status).toBe('awaiting_payment');
    expect(sim.shipments).toHaveLength(0);
  });

  /** An order paid by the transaction the published adjustments refund (652.15 USD). */
  async function paidForAdjustments() {
    const order = await d.createOrder('652.15', 'USD');
    await d.registerPayment(order.id, 'paddle', ADJUSTED_TXN, ACCOUNT);
    const paid = await accepted(event('transaction.completed', (b) => (b.data.id = ADJUSTED_TXN)));
    expect(await d.processed(paid)).toMatchObject({ status: 'processed', outcome: 'applied' });
    await fulfilled(order.id);
    return order;
  }

  it('refunds: pending approval ignored; approved, summed per adjustment id (the same refund again adds nothing); partial, then full', async () => {
    const order = await paidForAdjustments();

    // The published refund of 1.00 USD, created pending approval: nothing happened yet.
    const pending = await accepted(publishedText('adjustment.created'));
    expect(await d.processed(pending)).toMatchObject({ status: 'ignored', outcome: 'no_handler' });
    expect(await paymentOf(ADJUSTED_TXN)).toMatchObject({ status: 'succeeded', refundedAmount: '0.00' });

    // Approved (the published adjustment.updated): partially refunded by its own total.
    const approved = await accepted(publishedText('adjustment.updated'));
    expect(await d.processed(approved)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf(ADJUSTED_TXN)).toMatchObject({ status: 'partially_refunded', refundedAmount: '1.00' });

    // The same delivery again: a duplicate. The same refund in another event: counted once.
    expect((await deliver(publishedText('adjustment.updated'))).body).toEqual({ status: 'duplicate', eventId: approved });
    const sameRefund = await accepted(event('adjustment.created', (b) => (b.data.status = 'approved')));
    expect(await d.processed(sameRefund)).toMatchObject({ status: 'processed', outcome: 'already_applied' });
    expect(await paymentOf(ADJUSTED_TXN)).toMatchObject({ status: 'partially_refunded', refundedAmount: '1.00' });

    // The rest, in another adjustment: refunded, and the order with it.
    const restId = uniqueId('adj');
    const rest = await accepted(event('adjustment.updated', (b) => Object.assign(b.data, { id: restId, totals: { ...b.data.totals, total: '65115' } })));
    expect(await d.processed(rest)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf(ADJUSTED_TXN)).toMatchObject({ status: 'refunded', refundedAmount: '652.15' });
    expect((await d.getOrder(order.id)).status).toBe('refunded');
    const [row] = await t.dataSource.query(`SELECT refunds FROM payments WHERE order_id = $1`, [order.id]);
    expect(row.refunds).toEqual({ adj_01h8c6tbrkpdd7vx61w7b1r0ap: '100', [restId]: '65115' });

    // A refund above what is left: rejected, nothing moves.
    const over = await accepted(event('adjustment.updated', (b) => (b.data.id = uniqueId('adj'))));
    expect(await d.processed(over)).toMatchObject({ status: 'rejected', outcome: 'illegal_transition' });
    expect(await paymentOf(ADJUSTED_TXN)).toMatchObject({ status: 'refunded', refundedAmount: '652.15' });
    expect(shipmentsFor(order.id)).toHaveLength(1);
  });

  it('a chargeback adjustment (derived from the published one: Paddle publishes none): dispute_lost', async () => {
    await paidForAdjustments();
    const chargeback = await accepted(event('adjustment.created', (b) => Object.assign(b.data, { id: uniqueId('adj'), action: 'chargeback', status: 'approved' })));
    expect(await d.processed(chargeback)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf(ADJUSTED_TXN)).toMatchObject({ status: 'dispute_lost' });
  });

  it("another account's event: recorded and answered, then rejected/account_mismatch, nothing paid; through the order's own endpoint it is a new event", async () => {
    const order = await d.createOrder('652.15', 'USD', { merchantAccountId: ACCOUNT });
    const body = event('transaction.completed', (b) => Object.assign(b.data, { id: uniqueId('txn'), custom_data: { order_id: order.id } }));
    // The EU destination's secret vouches for its own account only.
    const eventId = await accepted(body, { endpointId: 'paddle-eu' });
    expect(await d.processed(eventId)).toMatchObject({ status: 'rejected', outcome: 'account_mismatch' });
    let view = await d.getOrder(order.id);
    expect([view.status, view.payments]).toEqual(['awaiting_payment', []]);
    expect(await d.count(`SELECT 1 FROM outbox_message`)).toBe(0);

    // The same event through the endpoint of the order's account: keyed on that account, so new.
    expect((await deliver(body)).body).toEqual({ status: 'accepted', eventId });
    expect(await d.count(`SELECT 1 FROM webhook_inbox WHERE event_id = $1`, [eventId])).toBe(2);
    await fulfilled(order.id);
    view = await d.getOrder(order.id);
    expect(view.payments).toHaveLength(1);
    expect(view.payments[0]).toMatchObject({ merchantAccountId: ACCOUNT, status: 'succeeded' });
  });

  it('event types not in the table are recorded and end ignored: a real customer.created, transaction.created', async () => {
    const customer = VALID_VECTORS.find((v) => v.body.includes('"customer.created"'))!.body;
    const created = event('transaction.paid', (b) => (b.event_type = 'transaction.created'));
    for (const body of [customer, created]) {
      const eventId = await accepted(body);
      expect(await d.processed(eventId)).toMatchObject({ status: 'ignored', outcome: 'no_handler' });
    }
    expect(await d.count(`SELECT 1 FROM payments`)).toBe(0);
  });

  it('the checks in their order: 413, then 401 missing_signature, invalid_signature, timestamp_out_of_tolerance, then 400; nothing recorded', async () => {
    const body = publishedText('transaction.paid');
    const now = Math.floor(Date.now() / 1000);
    const signed = signedHeaders('paddle', SECRET, body)['paddle-signature'];
    const h1 = signed.split(';')[1];
    const answers: Array<[string, number, unknown]> = [];
    const check = async (what: string, res: request.Response) => answers.push([what, res.status, res.body]);

    const big = `${body.slice(0, -2)}${' '.repeat(MAX_BODY - body.length + 1)}\n}`;
    expect(Buffer.byteLength(big)).toBe(MAX_BODY + 1);
    await check('a body over the limit, signed', await deliver(big));
    await check('a body over the limit, unsigned', await post('paddle-main', big));
    await check('no Paddle-Signature', await post('paddle-main', body));
    await check('no ts', await post('paddle-main', body, { 'paddle-signature': h1 }));
    await check('ts not unix seconds', await post('paddle-main', body, { 'paddle-signature': `ts=soon;${h1}` }));
    await check('no h1', await post('paddle-main', body, { 'paddle-signature': `ts=${now}` }));
    await check("another destination's secret", await deliver(body, { secret: EU_SECRET }));
    await check('another body', await post('paddle-main', JSON.stringify(JSON.parse(body)), { 'paddle-signature': signed }));
    await check('signed 400 s ago', await deliver(body, { timestamp: now - 400 }));
    await check('signed 400 s ahead', await deliver(body, { timestamp: now + 400 }));
    await check('authentic, not JSON', await deliver('event_id=evt_1'));
    await check('authentic, no event_id', await deliver(JSON.stringify({ event_type: 'transaction.paid', data: {} })));
    expect(answers).toEqual([
      ['a body over the limit, signed', 413, { error: 'payload_too_large' }],
      ['a body over the limit, unsigned', 413, { error: 'payload_too_large' }],
      ['no Paddle-Signature', 401, { error: 'missing_signature' }],
      ['no ts', 401, { error: 'missing_signature' }],
      ['ts not unix seconds', 401, { error: 'missing_signature' }],
      ['no h1', 401, { error: 'invalid_signature' }],
      ["another destination's secret", 401, { error: 'invalid_signature' }],
      ['another body', 401, { error: 'invalid_signature' }],
      ['signed 400 s ago', 401, { error: 'timestamp_out_of_tolerance' }],
      ['signed 400 s ahead', 401, { error: 'timestamp_out_of_tolerance' }],
      ['authentic, not JSON', 400, { error: 'malformed_payload', detail: 'the body is not JSON' }],
      ['authentic, no event_id', 400, { error: 'malformed_payload', detail: 'event_id is missing' }],
    ]);
    expect(await inboxRows()).toBe(0);

    // A body of exactly the limit is read and checked (and recorded: it is authentic).
    const atLimit = `${body.slice(0, -2)}${' '.repeat(MAX_BODY - body.length)}\n}`;
    expect(Buffer.byteLength(atLimit)).toBe(MAX_BODY);
    await accepted(atLimit);
  });

  it('during a rotation the old secret verifies too, alone or beside the new one in the same header', async () => {
    const first = event('transaction.paid', (b) => (b.event_type = 'transaction.created'));
    await accepted(first, { secret: OLD_SECRET });
    const second = event('transaction.paid', (b) => (b.event_type = 'transaction.created'));
    await accepted(second, { secret: EU_SECRET, extraSecrets: [OLD_SECRET] });
    expect(await inboxRows()).toBe(2);
  });
});
