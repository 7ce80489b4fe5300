import request from 'supertest';
import type { EndpointDefinition } from '../../src/config/options';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { body as fixture, bodyText } from '../fixtures/checkout';
import { AUTH, createTestApp, eventually, PLATFORMS, TestApp, truncateAll } from '../support/app';
import { driver, uniqueId } from '../support/domain';

/** The endpoints' signature keys, as a merchant sets them in Checkout.com's dashboard. */
const KEY = 'cko-main-signature-key-0001';
const OLD_KEY = 'cko-main-signature-key-0000';
const OTHER_KEY = 'cko-other-signature-key-0001';
const ACCOUNT = 'ent_shop_eu';
const OTHER_ACCOUNT = 'ent_shop_us';
/** A small body limit, so that the 413 is cheap to reach. */
const MAX_BODY = 16 * 1024;

const ENDPOINTS: EndpointDefinition[] = [
  // A rotation under way: the old key still verifies.
  { id: 'checkout-main', provider: 'checkout', secrets: [KEY, OLD_KEY], merchantAccountId: ACCOUNT },
  { id: 'checkout-other', provider: 'checkout', secrets: [OTHER_KEY], merchantAccountId: OTHER_ACCOUNT },
];
const KEY_OF: Record<string, string> = { 'checkout-main': KEY, 'checkout-other': OTHER_KEY };

const FAST = { carrierBackoffBaseMs: 20, carrierBackoffCapMs: 200, sweepIntervalMs: 200, sweepAfterMs: 100, inboxAttempts: 4, inboxBackoffMs: 50 };

/** The published example each type is sent as (test/fixtures/checkout/README.md). */
const FIXTURE_OF: Record<string, string> = {
  payment_pending: 'payment_pending',
  payment_approved: 'payment_approved',
  payment_captured: 'payment_captured',
  payment_declined: 'payment_declined',
  payment_capture_declined: 'payment_capture_declined',
  payment_voided: 'payment_voided',
  payment_canceled: 'payment_canceled',
  payment_expired: 'payment_expired',
  payment_refunded: 'payment_refunded',
  dispute_received: 'dispute_received.derived',
  dispute_evidence_required: 'dispute_evidence_required.derived',
  dispute_won: 'dispute_won',
  dispute_lost: 'dispute_lost',
  dispute_canceled: 'dispute_canceled.derived',
};

/**
 * Checkout.com through the real route (docs/webhooks.md#checkoutcom): `Cko-Signature` over the raw
 * bytes, every type of the table moving the payment, refunds summed per action id, disputes reaching
 * their payment, the endpoint's merchant account, and the checks in their order.
 */
describe.each(PLATFORMS)('%s: Checkout.com webhooks, end to end (workers on)', (platform) => {
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
    t.clock.reset();
  });

  const post = (endpointId: string, text: string | Buffer, headers: Record<string, string>) =>
    request(t.app.getHttpServer()).post(`/webhooks/${endpointId}`).set(headers).send(text);

  /** Sends `text` signed as Checkout.com does, with the endpoint's key (or `key`). */
  const deliver = (endpointId: string, text: string, key = KEY_OF[endpointId]) => post(endpointId, text, signedHeaders('checkout', key, text));

  /** Sends and expects it recorded as new. */
  async function accepted(endpointId: string, e: { eventId: string; text: string }) {
    const res = await deliver(endpointId, e.text);
    expect([res.status, res.body]).toEqual([200, { status: 'accepted', eventId: e.eventId }]);
    return res;
  }

  /**
   * A published example of `type`, about the payment `paymentId` of the order (by its id in
   * `metadata.order_id`, or its reference), for 49.90 EUR, under a new event id.
   */
  function event(type: string, paymentId: string, order: { id?: string; reference?: string }, data: Record<string, unknown> = {}) {
    const body = fixture(FIXTURE_OF[type] ?? 'payment_captured');
    body.id = uniqueId('evt');
    body.type = type;
    if (type.startsWith('dispute_')) {
      body.data.payment_id = paymentId;
      if (order.reference) body.data.payment_reference = order.reference;
    } else {
      body.data.id = paymentId;
      body.data.reference = order.reference ?? 'not-an-order';
      if (order.id) body.data.metadata = { ...(body.data.metadata ?? {}), order_id: order.id };
      else delete body.data.metadata;
    }
    if ('amount' in body.data) body.data.amount = 4990;
    if ('currency' in body.data) body.data.currency = 'EUR';
    Object.assign(body.data, data);
    return { eventId: body.id as string, text: JSON.stringify(body) };
  }

  const inboxRows = () => d.count(`SELECT 1 FROM webhook_inbox`);
  const shipmentsFor = (orderId: string) => sim.shipments.filter((s) => s.orderId === orderId);
  const fulfillmentsOf = (orderId: string) => d.count(`SELECT 1 FROM fulfillments WHERE order_id = $1`, [orderId]);
  const fulfilled = (orderId: string) => eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 15_000, `order ${orderId} fulfilled`);
  const paymentOf = async (orderId: string) => {
    const { payments } = await d.getOrder(orderId);
    expect(payments).toHaveLength(1);
    return payments[0] as { providerPaymentId: string; merchantAccountId: string; status: string; amount: string; refundedAmount: string };
  };

  it("the published payment_captured, byte for byte: the order named by its reference is paid and fulfilled exactly once; the same delivery again is a duplicate and changes nothing", async () => {
    const text = bodyText('payment_captured');
    const published = fixture('payment_captured');
    // The example's payment: 100.00 EUR, reference ORD-5023-4E89.
    const order = await d.createOrder('100.00', 'EUR', { reference: published.data.reference });
    await accepted('checkout-main', { eventId: published.id, text });
    expect(await d.processed(published.id)).toMatchObject({ status: 'processed', outcome: 'applied' });
    await fulfilled(order.id);
    expect(await paymentOf(order.id)).toMatchObject({ providerPaymentId: published.data.id, merchantAccountId: ACCOUNT, status: 'succeeded', amount: '100.00' });
    expect(shipmentsFor(order.id)).toHaveLength(1);

    // The archive: the bytes as sent, the signature kept on the row but never shown.
    const archive = await d.http().get('/admin/webhook-deliveries').query({ eventId: published.id }).set(AUTH);
    expect(archive.body.items).toHaveLength(1);
    expect(archive.body.items[0]).toMatchObject({ provider: 'checkout', endpointId: 'checkout-main', merchantAccountId: ACCOUNT, eventType: 'payment_captured', resourceId: published.data.id, deliveryId: null, apiVersion: null });
    const detail = await d.http().get(`/admin/webhook-deliveries/${archive.body.items[0].id}`).set(AUTH);
    expect(detail.body.headers['cko-signature']).toBe('[redacted]');
    expect(detail.body.body).toEqual(published);
    const [{ body: stored }] = await t.dataSource.query(`SELECT body FROM webhook_inbox WHERE event_id = $1`, [published.id]);
    expect(stored).toBe(text);

    // Checkout.com sends it again (it did not see the 200): a duplicate, nothing new.
    const rows = await inboxRows();
    const again = await deliver('checkout-main', text);
    expect([again.status, again.body]).toEqual([200, { status: 'duplicate', eventId: published.id }]);
    expect(await inboxRows()).toBe(rows);
    expect(await paymentOf(order.id)).toMatchObject({ status: 'succeeded' });
    expect(shipmentsFor(order.id)).toHaveLength(1);
    expect(await fulfillmentsOf(order.id)).toBe(1);
  });

  it('the order named by data.metadata.order_id (our id), with a reference that names no order: paid; the old key of a rotation still verifies', async () => {
    const order = await d.createOrder('49.90', 'EUR');
    const paymentId = uniqueId('pay');
    const e = event('payment_captured', paymentId, { id: order.id });
    const res = await deliver('checkout-main', e.text, OLD_KEY);
    expect([res.status, res.body]).toEqual([200, { status: 'accepted', eventId: e.eventId }]);
    expect(await d.processed(e.eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    await fulfilled(order.id);
    expect(await paymentOf(order.id)).toMatchObject({ providerPaymentId: paymentId, status: 'succeeded' });
  });

  it("a metadata.order_id that is not one of our ids (the shop's own) gives way to data.reference: paid", async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const e = event('payment_captured', uniqueId('pay'), { id: 'shop-order-77', reference });
    expect((await deliver('checkout-main', e.text)).body).toEqual({ status: 'accepted', eventId: e.eventId });
    expect(await d.processed(e.eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    await fulfilled(order.id);
  });

  /** Each type of the table, after the events that bring the payment where the type applies. */
  const MOVES: Array<[string, string[], string]> = [
    ['payment_pending', [], 'processing'],
    ['payment_approved', [], 'authorized'],
    ['payment_captured', [], 'succeeded'],
    ['payment_declined', [], 'failed'],
    ['payment_capture_declined', ['payment_approved'], 'failed'],
    ['payment_voided', ['payment_approved'], 'canceled'],
    ['payment_canceled', [], 'canceled'],
    ['payment_expired', [], 'expired'],
    ['dispute_received', ['payment_captured'], 'disputed'],
    ['dispute_evidence_required', ['payment_captured'], 'disputed'],
    ['dispute_won', ['payment_captured', 'dispute_evidence_required'], 'succeeded'],
    ['dispute_lost', ['payment_captured'], 'dispute_lost'],
  ];

  it.each(MOVES)('%s (after %j): the payment becomes %s', async (type, before, status) => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const paymentId = uniqueId('pay');
    for (const earlier of before) {
      const e = event(earlier, paymentId, { id: order.id, reference });
      await accepted('checkout-main', e);
      expect(await d.processed(e.eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    }
    const e = event(type, paymentId, { id: order.id, reference });
    await accepted('checkout-main', e);
    expect(await d.processed(e.eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf(order.id)).toMatchObject({ providerPaymentId: paymentId, status });
    // A dispute is stored under its payment, which is how it reached it.
    const [row] = await t.dataSource.query(`SELECT resource_id AS "resourceId", event_type AS "eventType" FROM webhook_inbox WHERE event_id = $1`, [e.eventId]);
    expect(row).toEqual({ resourceId: paymentId, eventType: type });
  });

  it('payment_refunded: a partial refund, the same delivery again (duplicate), the same refund under another event id (counted once), then the rest: refunded', async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const paymentId = uniqueId('pay');
    const captured = event('payment_captured', paymentId, { reference });
    await accepted('checkout-main', captured);
    await d.processed(captured.eventId);
    await fulfilled(order.id);

    const first = event('payment_refunded', paymentId, { reference }, { action_id: 'act_refund_one', amount: 2000 });
    await accepted('checkout-main', first);
    expect(await d.processed(first.eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf(order.id)).toMatchObject({ status: 'partially_refunded', refundedAmount: '20.00' });

    const again = await deliver('checkout-main', first.text);
    expect([again.status, again.body]).toEqual([200, { status: 'duplicate', eventId: first.eventId }]);
    expect(await d.count(`SELECT 1 FROM webhook_inbox WHERE event_id = $1`, [first.eventId])).toBe(1);

    // The same refund (its action id) in another event: nothing added.
    const sameRefund = event('payment_refunded', paymentId, { reference }, { action_id: 'act_refund_one', amount: 2000 });
    await accepted('checkout-main', sameRefund);
    expect(await d.processed(sameRefund.eventId)).toMatchObject({ status: 'processed', outcome: 'already_applied' });
    expect(await paymentOf(order.id)).toMatchObject({ status: 'partially_refunded', refundedAmount: '20.00' });

    const rest = event('payment_refunded', paymentId, { reference }, { action_id: 'act_refund_two', amount: 2990 });
    await accepted('checkout-main', rest);
    expect(await d.processed(rest.eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await paymentOf(order.id)).toMatchObject({ status: 'refunded', refundedAmount: '49.90' });
    expect((await d.getOrder(order.id)).status).toBe('refunded');
    const [row] = await t.dataSource.query(`SELECT refunds FROM payments WHERE provider = 'checkout' AND provider_payment_id = $1`, [paymentId]);
    expect(row.refunds).toEqual({ act_refund_one: '2000', act_refund_two: '2990' });
    expect(shipmentsFor(order.id)).toHaveLength(1);
  });

  it('a refund above what is left, or without its action id, is rejected and adds nothing', async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const paymentId = uniqueId('pay');
    const captured = event('payment_captured', paymentId, { reference });
    await accepted('checkout-main', captured);
    await d.processed(captured.eventId);
    const first = event('payment_refunded', paymentId, { reference }, { action_id: 'act_a', amount: 4000 });
    await accepted('checkout-main', first);
    await d.processed(first.eventId);
    const over = event('payment_refunded', paymentId, { reference }, { action_id: 'act_b', amount: 1000 });
    await accepted('checkout-main', over);
    expect(await d.processed(over.eventId)).toMatchObject({ status: 'rejected', outcome: 'illegal_transition' });
    // A refund without its action id is no refund the payment can count.
    const anonymous = event('payment_refunded', paymentId, { reference }, { action_id: undefined, amount: 500 });
    await accepted('checkout-main', anonymous);
    expect(await d.processed(anonymous.eventId)).toMatchObject({ status: 'rejected', outcome: 'amount_mismatch' });
    expect(await paymentOf(order.id)).toMatchObject({ status: 'partially_refunded', refundedAmount: '40.00' });
  });

  it("an event through another merchant account's endpoint: recorded and answered, rejected/account_mismatch, nothing paid; through the order's own endpoint it is a new event that pays it", async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference, merchantAccountId: ACCOUNT });
    const e = event('payment_captured', uniqueId('pay'), { reference });
    await accepted('checkout-other', e);
    expect(await d.processed(e.eventId)).toMatchObject({ status: 'rejected', outcome: 'account_mismatch' });
    const [row] = await t.dataSource.query(`SELECT merchant_account_id AS account FROM webhook_inbox WHERE event_id = $1`, [e.eventId]);
    expect(row.account).toBe(OTHER_ACCOUNT);
    expect((await d.getOrder(order.id)).status).toBe('awaiting_payment');
    expect(await d.count(`SELECT 1 FROM payments`)).toBe(0);
    expect(await d.count(`SELECT 1 FROM outbox_message`)).toBe(0);

    // The other account's row never took this account's key: the same bytes through the order's endpoint are new.
    await accepted('checkout-main', e);
    expect(await d.count(`SELECT 1 FROM webhook_inbox WHERE event_id = $1`, [e.eventId])).toBe(2);
    await fulfilled(order.id);
    expect(await paymentOf(order.id)).toMatchObject({ merchantAccountId: ACCOUNT, status: 'succeeded' });
  });

  it('a captured amount other than the order\'s: rejected/amount_mismatch, no shipment', async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const e = event('payment_captured', uniqueId('pay'), { reference }, { amount: 4900 });
    await accepted('checkout-main', e);
    expect(await d.processed(e.eventId)).toMatchObject({ status: 'rejected', outcome: 'amount_mismatch' });
    expect((await d.getOrder(order.id)).status).toBe('awaiting_payment');
    expect(await fulfillmentsOf(order.id)).toBe(0);
    expect(sim.shipments).toHaveLength(0);
  });

  it.each([
    ['an unknown type', () => event('card_verified', uniqueId('pay'), { reference: 'x' })],
    ['a dispute type not acted on (dispute_canceled)', () => event('dispute_canceled', uniqueId('pay'), { reference: 'x' })],
    ['a card payout (the published payment_declined of a payout)', () => ({ eventId: fixture('payment_declined.card-payouts').id as string, text: bodyText('payment_declined.card-payouts') })],
  ])('%s: recorded, answered 200, ends ignored', async (_label, make) => {
    const e = make();
    await accepted('checkout-main', e);
    expect(await d.processed(e.eventId)).toMatchObject({ status: 'ignored', outcome: 'no_handler' });
    expect(await d.count(`SELECT 1 FROM payments`)).toBe(0);
  });

  describe('the checks, in their order', () => {
    const text = () => event('payment_captured', uniqueId('pay'), { reference: 'ORD-1' }).text;

    it('401 missing_signature: Cko-Signature absent, or not 64 hex digits; nothing recorded', async () => {
      const body = text();
      const answers = [];
      const variants: Array<Record<string, string>> = [{}, { 'cko-signature': '' }, { 'cko-signature': 'abc' }, { 'cko-signature': `sha256=${signedHeaders('checkout', KEY, body)['cko-signature']}` }];
      for (const headers of variants) {
        const res = await post('checkout-main', body, { 'content-type': 'application/json', ...headers });
        answers.push([res.status, res.body]);
      }
      expect(answers).toEqual(Array(4).fill([401, { error: 'missing_signature' }]));
      expect(await inboxRows()).toBe(0);
    });

    it('401 invalid_signature: another endpoint\'s key, a changed byte, the body parsed and serialised again; nothing recorded', async () => {
      const body = text();
      const answers = [];
      answers.push(await deliver('checkout-main', body, OTHER_KEY));
      const headers = signedHeaders('checkout', KEY, body);
      answers.push(await post('checkout-main', body.replace('4990', '4991'), headers));
      const published = bodyText('payment_refunded');
      answers.push(await post('checkout-main', JSON.stringify(JSON.parse(published)), signedHeaders('checkout', KEY, published)));
      // Before the body is read: a wrong signature on what is not JSON is still invalid_signature.
      answers.push(await deliver('checkout-main', 'not json', OTHER_KEY));
      expect(answers.map((r) => [r.status, r.body])).toEqual(Array(4).fill([401, { error: 'invalid_signature' }]));
      expect(await inboxRows()).toBe(0);
    });

    it('no timestamp is signed: a year on the clock changes nothing (toleranceSeconds does not apply)', async () => {
      t.clock.setSeconds(Math.floor(Date.now() / 1000) + 365 * 24 * 3600);
      const e = event('payment_pending', uniqueId('pay'), { reference: 'ORD-1' });
      await accepted('checkout-main', e);
    });

    it('400 malformed_payload, authentic but not usable: not JSON, no id, an unprintable id; nothing recorded', async () => {
      const cases: Array<[string, string]> = [
        ['not json', 'the body is not JSON'],
        [JSON.stringify({ type: 'payment_captured', data: { id: 'pay_1' } }), 'id is missing'],
        [JSON.stringify({ id: 'evt_1', data: { id: 'pay_1' } }), 'type is missing'],
        [JSON.stringify({ id: 'evt_\u202e1', type: 'payment_captured', data: { id: 'pay_1' } }), 'id is not a printable string of at most 255 characters'],
        [JSON.stringify({ id: 'evt_2', type: 'dispute_lost', data: { id: 'dsp_1', payment_id: 'pay_\u0085' } }), 'data.payment_id is not a printable string of at most 255 characters'],
      ];
      const answers = [];
      for (const [body] of cases) {
        const res = await deliver('checkout-main', body);
        answers.push([res.status, res.body]);
      }
      expect(answers).toEqual(cases.map(([, detail]) => [400, { error: 'malformed_payload', detail }]));
      expect(await inboxRows()).toBe(0);
    });

    it('413 payload_too_large over the limit, before the signature (signed or not); a body of exactly the limit is accepted', async () => {
      const e = event('payment_pending', uniqueId('pay'), { reference: 'ORD-1' });
      // JSON allows whitespace at the end: pad the signed body to the byte.
      const exact = e.text + ' '.repeat(MAX_BODY - Buffer.byteLength(e.text));
      const over = `${exact} `;
      const signedOver = await deliver('checkout-main', over);
      expect([signedOver.status, signedOver.body]).toEqual([413, { error: 'payload_too_large' }]);
      const unsignedOver = await post('checkout-main', over, { 'content-type': 'application/json' });
      expect([unsignedOver.status, unsignedOver.body]).toEqual([413, { error: 'payload_too_large' }]);
      expect(await inboxRows()).toBe(0);
      expect(Buffer.byteLength(exact)).toBe(MAX_BODY);
      await accepted('checkout-main', { eventId: e.eventId, text: exact });
    });

    it('404 unknown_endpoint before anything else', async () => {
      const body = text();
      const res = await post('checkout-nowhere', body, signedHeaders('checkout', KEY, body));
      expect([res.status, res.body]).toEqual([404, { error: 'unknown_endpoint' }]);
    });
  });
});
