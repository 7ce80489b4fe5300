import request from 'supertest';
import type { EndpointDefinition } from '../../src/config/options';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { NotificationItem, signedBody } from '../fixtures/adyen';
import { AUTH, createTestApp, eventually, PLATFORMS, TestApp, truncateAll } from '../support/app';
import { driver, uniqueId } from '../support/domain';

/** The endpoints' HMAC keys, hex as Adyen shows them. */
const KEY = 'A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F90';
const MANUAL_KEY = '0F1E2D3C4B5A69788796A5B4C3D2E1F00F1E2D3C4B5A69788796A5B4C3D2E1F0';
const ACCOUNT = 'ShopEU';

const ENDPOINTS: EndpointDefinition[] = [
  { id: 'adyen-main', provider: 'adyen', secrets: [KEY], merchantAccountId: ACCOUNT },
  { id: 'adyen-manual', provider: 'adyen', secrets: [MANUAL_KEY], merchantAccountId: ACCOUNT, capture: 'manual' },
];

const FAST = { carrierBackoffBaseMs: 20, carrierBackoffCapMs: 200, sweepIntervalMs: 200, sweepAfterMs: 100, inboxAttempts: 4, inboxBackoffMs: 50 };

/**
 * Adyen's standard notifications through the real route (docs/webhooks.md#adyen): several signed
 * items in one delivery, each recorded under its own key in one statement, answered `[accepted]`;
 * an AUTHORISATION (or, with `capture: "manual"`, an AUTHORISATION and a CAPTURE) pays the order,
 * shipped exactly once; refunds summed over distinct refund pspReferences.
 */
describe.each(PLATFORMS)('%s: Adyen notifications, end to end (workers on)', (platform) => {
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

  const post = (endpointId: string, body: object | string) =>
    request(t.app.getHttpServer())
      .post(`/webhooks/${endpointId}`)
      .set('content-type', 'application/json')
      .send(typeof body === 'string' ? body : JSON.stringify(body));

  /** A notification item as Adyen sends one (signed when put in a body by `signedBody`). */
  const item = (overrides: Partial<NotificationItem> = {}): NotificationItem => ({
    eventCode: 'AUTHORISATION',
    success: 'true',
    pspReference: uniqueId('psp'),
    originalReference: '',
    merchantAccountCode: ACCOUNT,
    merchantReference: 'unknown',
    eventDate: '2026-12-01T10:00:00+01:00',
    amount: { value: 4990, currency: 'EUR' },
    paymentMethod: 'visa',
    reason: '',
    additionalData: { authCode: '1234' },
    ...overrides,
  });
  const eventIdOf = (i: NotificationItem) => `${i.pspReference}:${i.eventCode}:${i.success}`;

  /** Posts the items signed with the endpoint's key; expects Adyen's `[accepted]`. */
  async function deliver(endpointId: string, items: NotificationItem[]) {
    const res = await post(endpointId, signedBody(items, endpointId === 'adyen-manual' ? MANUAL_KEY : KEY));
    expect(res.status).toBe(200);
    expect(res.text).toBe('[accepted]');
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    return res;
  }

  const inboxRows = () => d.count(`SELECT 1 FROM webhook_inbox`);
  const shipmentsFor = (orderId: string) => sim.shipments.filter((s) => s.orderId === orderId);
  const fulfillmentsOf = (orderId: string) => d.count(`SELECT 1 FROM fulfillments WHERE order_id = $1`, [orderId]);
  const fulfilled = (orderId: string) =>
    eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 15_000, `order ${orderId} fulfilled`);

  it('AUTHORISATION (capture automatic): the order named by its reference is paid and fulfilled exactly once; the same batch again records nothing', async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const auth = item({ merchantReference: reference });
    await deliver('adyen-main', [auth]);
    expect(await d.processed(eventIdOf(auth))).toMatchObject({ status: 'processed', outcome: 'applied' });
    await fulfilled(order.id);

    const view = await d.getOrder(order.id);
    expect(view.payments).toHaveLength(1);
    expect(view.payments[0]).toMatchObject({ provider: 'adyen', providerPaymentId: auth.pspReference, merchantAccountId: ACCOUNT, status: 'succeeded', amount: '49.90' });
    expect(shipmentsFor(order.id)).toHaveLength(1);

    // The archive keeps the item as the event's body, and the item's identity.
    const archive = await d.http().get('/admin/webhook-deliveries').query({ eventId: eventIdOf(auth) }).set(AUTH);
    expect(archive.body.items).toHaveLength(1);
    expect(archive.body.items[0]).toMatchObject({ provider: 'adyen', eventType: 'AUTHORISATION', resourceId: auth.pspReference, merchantAccountId: ACCOUNT, apiVersion: null });
    const detail = await d.http().get(`/admin/webhook-deliveries/${archive.body.items[0].id}`).set(AUTH);
    expect(detail.body.body).toMatchObject({ pspReference: auth.pspReference, merchantReference: reference, amount: { value: 4990, currency: 'EUR' } });
    // The item's signature is kept in the row (what was signed), never shown.
    expect(detail.body.body.additionalData.hmacSignature).toBe('[redacted]');
    const [{ stored }] = await t.dataSource.query(`SELECT body::jsonb #>> '{additionalData,hmacSignature}' AS stored FROM webhook_inbox WHERE id = $1`, [archive.body.items[0].id]);
    expect(stored).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(JSON.stringify(detail.body)).not.toContain(stored);

    // Adyen sends the same batch again (it did not get the answer): `[accepted]`, nothing new.
    const rows = await inboxRows();
    await deliver('adyen-main', [auth]);
    expect(await inboxRows()).toBe(rows);
    expect(shipmentsFor(order.id)).toHaveLength(1);
    expect(await fulfillmentsOf(order.id)).toBe(1);
  });

  it('AUTHORISATION then CAPTURE (capture manual): authorized, then paid and fulfilled exactly once; the order named by its id', async () => {
    const order = await d.createOrder('49.90', 'EUR');
    const auth = item({ merchantReference: order.id });
    await deliver('adyen-manual', [auth]);
    expect(await d.processed(eventIdOf(auth))).toMatchObject({ status: 'processed', outcome: 'applied' });
    let view = await d.getOrder(order.id);
    expect(view.status).toBe('awaiting_payment');
    expect(view.payments[0]).toMatchObject({ providerPaymentId: auth.pspReference, status: 'authorized' });

    // The capture is a modification: its own pspReference, the payment's as originalReference.
    const capture = item({ eventCode: 'CAPTURE', originalReference: auth.pspReference, merchantReference: order.id });
    await deliver('adyen-manual', [capture]);
    expect(await d.processed(eventIdOf(capture))).toMatchObject({ status: 'processed', outcome: 'applied' });
    await fulfilled(order.id);
    view = await d.getOrder(order.id);
    expect(view.payments).toHaveLength(1);
    expect(view.payments[0]).toMatchObject({ providerPaymentId: auth.pspReference, status: 'succeeded' });
    expect(shipmentsFor(order.id)).toHaveLength(1);

    await deliver('adyen-manual', [auth, capture]);
    expect(shipmentsFor(order.id)).toHaveLength(1);
    expect(await fulfillmentsOf(order.id)).toBe(1);
  });

  it('a batch of 3 items is recorded in one go: 3 inbox rows, each its own event, each processed', async () => {
    const [a, b] = [await d.createOrder('49.90', 'EUR', { reference: uniqueId('A') }), await d.createOrder('10.00', 'EUR', { reference: uniqueId('B') })];
    const items = [
      item({ merchantReference: (await d.getOrder(a.id)).reference }),
      item({ merchantReference: (await d.getOrder(b.id)).reference, amount: { value: 1000, currency: 'EUR' } }),
      item({ eventCode: 'REPORT_AVAILABLE', merchantReference: '', reason: 'https://example.test/report.csv' }),
    ];
    await deliver('adyen-main', items);
    // Answered once every row is committed: all three are there already.
    const rows: Array<{ event_id: string }> = await t.dataSource.query(`SELECT event_id FROM webhook_inbox ORDER BY event_id`);
    expect(rows.map((r) => r.event_id).sort()).toEqual(items.map(eventIdOf).sort());
    expect(await d.processed(eventIdOf(items[0]))).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await d.processed(eventIdOf(items[1]))).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await d.processed(eventIdOf(items[2]))).toMatchObject({ status: 'ignored', outcome: 'no_handler' });
    await fulfilled(a.id);
    await fulfilled(b.id);
  });

  it('one item with a bad signature: 401 invalid_signature and nothing of the batch is recorded', async () => {
    const body = signedBody([item(), item(), item()], KEY);
    body.notificationItems[2].NotificationRequestItem.amount = { value: 1, currency: 'EUR' };
    const res = await post('adyen-main', body);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'invalid_signature' });
    expect(await inboxRows()).toBe(0);

    // Signed with another endpoint's key.
    expect((await post('adyen-main', signedBody([item()], MANUAL_KEY))).body).toEqual({ error: 'invalid_signature' });
    // An item without its signature.
    const unsigned = signedBody([item(), item()], KEY);
    delete unsigned.notificationItems[0].NotificationRequestItem.additionalData!.hmacSignature;
    const missing = await post('adyen-main', unsigned);
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ error: 'missing_signature' });
    // Not the shape of a notification: 400, read before any signature.
    const malformed = await post('adyen-main', { live: 'false', notificationItems: [] });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ error: 'malformed_payload' });
    expect(await inboxRows()).toBe(0);
  });

  it('a signed field sent as an array, an object, a boolean or null: 400 malformed_payload, nothing recorded, though the signature verifies', async () => {
    // The official library signs each field as JavaScript's `join` writes it (["ORD-1"] as "ORD-1",
    // null as ""): these items are signed as it signs them, so only the field's type refuses them.
    const setters: Array<[string, (i: NotificationItem, v: unknown) => void]> = [
      ...(['pspReference', 'originalReference', 'merchantAccountCode', 'merchantReference', 'eventCode', 'success'] as const).map(
        (f): [string, (i: NotificationItem, v: unknown) => void] => [f, (i, v) => (i[f] = v)],
      ),
      ['amount.value', (i, v) => (i.amount = { value: v, currency: 'EUR' })],
      ['amount.currency', (i, v) => (i.amount = { value: 4990, currency: v })],
    ];
    const answers: Array<{ field: string; value: unknown; status: number; error: unknown; detail: unknown }> = [];
    for (const [field, set] of setters) {
      for (const value of [['x'], { a: 'x' }, true, null]) {
        const bad = item({ merchantReference: uniqueId('ORD') });
        set(bad, value);
        const res = await post('adyen-main', signedBody([item(), bad], KEY));
        answers.push({ field, value, status: res.status, error: res.body.error, detail: res.body.detail });
      }
    }
    expect(answers).toEqual(
      answers.map(({ field, value }) => ({
        field,
        value,
        status: 400,
        error: 'malformed_payload',
        detail: `item #2: "${field}" must be ${field === 'amount.value' ? 'a number' : 'a string'}, as Adyen signs and sends it`,
      })),
    );
    expect(await inboxRows()).toBe(0);
    // The same items with the fields as Adyen sends them are recorded (the refusals above are the types').
    await deliver('adyen-main', [item(), item({ merchantReference: 'ORD-1', amount: { value: 4990, currency: 'EUR' } })]);
    expect(await inboxRows()).toBe(2);
  });

  it('a merchantAccountCode other than the endpoint\'s: recorded and answered, then rejected/account_mismatch, nothing paid', async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const other = item({ merchantReference: reference, merchantAccountCode: 'ShopUS' });
    await deliver('adyen-main', [other]);
    expect(await d.processed(eventIdOf(other))).toEqual(expect.objectContaining({ status: 'rejected', outcome: 'account_mismatch' }));
    const view = await d.getOrder(order.id);
    expect(view.status).toBe('awaiting_payment');
    expect(view.payments).toHaveLength(0);
    expect(await d.count(`SELECT 1 FROM outbox_message`)).toBe(0);
  });

  it('a wrong amount: rejected/amount_mismatch, no shipment', async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const short = item({ merchantReference: reference, amount: { value: 4900, currency: 'EUR' } });
    await deliver('adyen-main', [short]);
    expect(await d.processed(eventIdOf(short))).toEqual(expect.objectContaining({ status: 'rejected', outcome: 'amount_mismatch' }));
    expect((await d.getOrder(order.id)).status).toBe('awaiting_payment');
    expect(await fulfillmentsOf(order.id)).toBe(0);
    expect(sim.shipments).toHaveLength(0);
  });

  it('two partial refunds with distinct pspReferences summing to the amount: refunded; the same refund notification twice counts once', async () => {
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const auth = item({ merchantReference: reference });
    await deliver('adyen-main', [auth]);
    await d.processed(eventIdOf(auth));
    await fulfilled(order.id);

    const refund = (value: number) =>
      item({ eventCode: 'REFUND', originalReference: auth.pspReference, merchantReference: reference, amount: { value, currency: 'EUR' } });
    const first = refund(2000);
    await deliver('adyen-main', [first]);
    expect(await d.processed(eventIdOf(first))).toMatchObject({ status: 'processed', outcome: 'applied' });
    let view = await d.getOrder(order.id);
    expect(view.payments[0]).toMatchObject({ status: 'partially_refunded', refundedAmount: '20.00' });

    // Adyen notifies the same refund again: recorded once, counted once.
    await deliver('adyen-main', [first]);
    expect(await d.count(`SELECT 1 FROM webhook_inbox WHERE event_id = $1`, [eventIdOf(first)])).toBe(1);
    view = await d.getOrder(order.id);
    expect(view.payments[0]).toMatchObject({ status: 'partially_refunded', refundedAmount: '20.00' });

    // The rest, refunded under another pspReference (in a batch beside the first again).
    const second = refund(2990);
    await deliver('adyen-main', [first, second]);
    expect(await d.processed(eventIdOf(second))).toMatchObject({ status: 'processed', outcome: 'applied' });
    view = await d.getOrder(order.id);
    expect(view.status).toBe('refunded');
    expect(view.payments[0]).toMatchObject({ status: 'refunded', refundedAmount: '49.90' });
    const [row] = await t.dataSource.query(`SELECT refunds FROM payments WHERE order_id = $1`, [order.id]);
    expect(row.refunds).toEqual({ [first.pspReference as string]: '2000', [second.pspReference as string]: '2990' });
    expect(shipmentsFor(order.id)).toHaveLength(1);
  });

  it('the payment and its full refund in one batch: the order ends refunded and nothing ships, whichever transaction each lands in', async () => {
    // The carrier refuses every call until the refund is in, so a shipment can only come from a
    // fulfillment the refund failed to stop (not from a dispatch that beat the refund).
    sim.fault('fail', 1_000);
    const reference = uniqueId('ORD');
    const order = await d.createOrder('49.90', 'EUR', { reference });
    const auth = item({ merchantReference: reference });
    const refund = item({ eventCode: 'REFUND', originalReference: auth.pspReference, merchantReference: reference, amount: { value: 4990, currency: 'EUR' } });
    await deliver('adyen-main', [auth, refund]);
    expect(await d.processed(eventIdOf(auth))).toMatchObject({ status: 'processed', outcome: 'applied' });
    await eventually(async () => (await d.getOrder(order.id)).status === 'refunded', 15_000, `order ${order.id} refunded`);

    // The order's one fulfillment carries the refund's stop, and its dispatch ends dead for it (the
    // carrier works again meanwhile): never called with the fulfillment's key once it could ship.
    const [fulfillment] = await t.dataSource.query(`SELECT id, stop_reason FROM fulfillments WHERE order_id = $1`, [order.id]);
    expect(fulfillment.stop_reason).toBe('order refunded');
    sim.reset();
    await eventually(
      async () => (await d.count(`SELECT 1 FROM outbox_message WHERE idempotency_key = $1 AND status = 'dead'`, [fulfillment.id])) === 1,
      15_000,
      'the dispatch dead',
    );
    const [message] = await t.dataSource.query(`SELECT last_error FROM outbox_message WHERE idempotency_key = $1`, [fulfillment.id]);
    expect(message.last_error).toMatch(/^order refunded/);
    expect(sim.calls.filter((c) => c.idempotencyKey === fulfillment.id)).toEqual([]);
    expect(shipmentsFor(order.id)).toHaveLength(0);
    const [after] = await t.dataSource.query(`SELECT status, stop_reason FROM fulfillments WHERE order_id = $1`, [order.id]);
    expect(after).toEqual({ status: 'failed', stop_reason: 'order refunded' });
    expect(await fulfillmentsOf(order.id)).toBe(1);
  });
});
