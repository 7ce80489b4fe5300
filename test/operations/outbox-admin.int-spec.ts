import { CarrierSimulator } from '../../tools/carrier-sim';
import { useCarrierSimulator } from '../support/carrier-suite';
import { AUTH, createTestApp, eventually, TestApp, truncateAll } from '../support/app';
import { driver } from '../support/domain';

/** GET /admin/outbox and POST /admin/outbox/{id}/retry (CONTRACT §3 lists, §4). */

const ITEM_FIELDS = ['id', 'type', 'idempotencyKey', 'status', 'attempts', 'lastError', 'createdAt', 'dispatchedAt'].sort();
const MISSING = '0190f5d2-0000-7000-8000-000000000000';

interface OutboxItem {
  id: string;
  type: string;
  idempotencyKey: string;
  status: string;
  attempts: number;
  lastError: string | null;
  createdAt: string;
  dispatchedAt: string | null;
}

/** The table's own view of the messages, newest first, in the item shape. */
async function tableItems(t: TestApp, status?: string): Promise<OutboxItem[]> {
  const rows: Array<Record<string, any>> = await t.dataSource.query(
    `SELECT id, type, idempotency_key, status, attempts, last_error, created_at, dispatched_at
       FROM outbox_message ${status ? 'WHERE status = $1' : ''} ORDER BY id DESC`,
    status ? [status] : [],
  );
  return rows.map((r) => ({
    id: r.id,
    type: r.type,
    idempotencyKey: r.idempotency_key,
    status: r.status,
    attempts: r.attempts,
    lastError: r.last_error,
    createdAt: (r.created_at as Date).toISOString(),
    dispatchedAt: r.dispatched_at ? (r.dispatched_at as Date).toISOString() : null,
  }));
}

describe('GET /admin/outbox (workers off)', () => {
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  const orders: string[] = [];

  beforeAll(async () => {
    t = await createTestApp();
    d = driver(t);
    await truncateAll(t.dataSource);
    for (let i = 0; i < 7; i++) {
      const order = await d.createOrder();
      orders.push(order.id);
      await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: `paid at the counter ${i}` }).expect(200);
    }
    // Two dead and two dispatched, as the dispatcher would leave them.
    await t.dataSource.query(
      `UPDATE outbox_message SET status = 'dead', attempts = 1, last_error = 'carrier answered 400 invalid_address'
        WHERE payload->>'orderId' = ANY($1)`,
      [[orders[1], orders[4]]],
    );
    await t.dataSource.query(
      `UPDATE outbox_message SET status = 'dispatched', attempts = 2, dispatched_at = now()
        WHERE payload->>'orderId' = ANY($1)`,
      [[orders[2], orders[5]]],
    );
  });
  afterAll(async () => {
    await t?.close();
  });

  const get = (query: string) => d.http().get(`/admin/outbox${query}`).set(AUTH);

  async function allPages(query: Record<string, string>, limit: number): Promise<OutboxItem[]> {
    const items: OutboxItem[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 50; pages++) {
      const qs = new URLSearchParams({ ...query, limit: String(limit), ...(cursor ? { cursor } : {}) }).toString();
      const res = await get(`?${qs}`);
      expect(res.status).toBe(200);
      items.push(...res.body.items);
      if (res.body.nextCursor === null) {
        expect(res.body.items.length).toBeLessThanOrEqual(limit);
        return items;
      }
      expect(res.body.items.length).toBe(limit);
      cursor = res.body.nextCursor;
    }
    throw new Error('paging does not end');
  }

  it('items have exactly {id, type, idempotencyKey, status, attempts, lastError, createdAt, dispatchedAt}, newest first', async () => {
    const res = await get('');
    expect(res.status).toBe(200);
    expect(res.body.nextCursor).toBeNull();
    for (const item of res.body.items) expect(Object.keys(item).sort()).toEqual(ITEM_FIELDS);
    expect(res.body.items).toEqual(await tableItems(t));
    expect(res.body.items.length).toBe(7);
    const fulfillments: Array<{ id: string; order_id: string }> = await t.dataSource.query(`SELECT id, order_id FROM fulfillments`);
    for (const item of res.body.items as OutboxItem[]) {
      expect(item.type).toBe('fulfillment.dispatch');
      expect(fulfillments.map((f) => f.id)).toContain(item.idempotencyKey);
    }
    const pending = (res.body.items as OutboxItem[]).find((i) => i.status === 'pending')!;
    expect(pending).toMatchObject({ attempts: 0, lastError: null, dispatchedAt: null });
    const dispatched = (res.body.items as OutboxItem[]).find((i) => i.status === 'dispatched')!;
    expect(dispatched.dispatchedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it.each([
    ['pending', 3],
    ['dispatched', 2],
    ['dead', 2],
  ])('status=%s: only those (%i)', async (status, n) => {
    const res = await get(`?status=${status}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: await tableItems(t, status), nextCursor: null });
    expect(res.body.items.length).toBe(n);
  });

  it('pages of 2: every message exactly once, newest first, nextCursor null at the end', async () => {
    const items = await allPages({}, 2);
    expect(items).toEqual(await tableItems(t));
    expect(new Set(items.map((i) => i.id)).size).toBe(7);
  });

  it('pages of 1 under a status filter', async () => {
    expect(await allPages({ status: 'pending' }, 1)).toEqual(await tableItems(t, 'pending'));
  });

  it.each([
    ['status=sent', 'status'],
    ['status=', 'status'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['cursor=!!', 'cursor'],
    ['kind=x', 'kind'],
  ])('%s: 400 validation_failed on %s', async (query, field) => {
    const res = await get(`?${query}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'validation_failed', details: [{ field, message: expect.any(String) }] });
  });

  it('retry of a pending message: 409 illegal_transition, the message unchanged', async () => {
    const [pending] = await tableItems(t, 'pending');
    const res = await d.http().post(`/admin/outbox/${pending.id}/retry`).set(AUTH);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: 'illegal_transition', detail: expect.any(String) });
    expect((await tableItems(t, 'pending')).find((i) => i.id === pending.id)).toEqual(pending);
  });

  it('retry of a dispatched message: 409 illegal_transition, the message unchanged', async () => {
    const [dispatched] = await tableItems(t, 'dispatched');
    const res = await d.http().post(`/admin/outbox/${dispatched.id}/retry`).set(AUTH);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: 'illegal_transition', detail: expect.any(String) });
    expect((await tableItems(t, 'dispatched')).find((i) => i.id === dispatched.id)).toEqual(dispatched);
  });

  it('retry of an unknown id, or of one that is not a uuid: 404 {"error":"not_found"}', async () => {
    const res = await d.http().post(`/admin/outbox/${MISSING}/retry`).set(AUTH);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'not_found' });
    const bad = await d.http().post('/admin/outbox/12345/retry').set(AUTH);
    expect(bad.status).toBe(404);
    expect(bad.body).toEqual({ error: 'not_found' });
  });

  it('without the token: 401 on both routes', async () => {
    expect((await d.http().get('/admin/outbox')).status).toBe(401);
    expect((await d.http().post(`/admin/outbox/${MISSING}/retry`)).status).toBe(401);
  });
});

describe('POST /admin/outbox/{id}/retry of a dead message (workers on, carrier simulator)', () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  useCarrierSimulator(
    sim,
    (url) => ({
      // A call the carrier leaves unanswered times out quickly.
      carriers: [{ name: 'default', url, timeoutMs: 400 }],
      carrierMaxAttempts: 3,
    }),
    (app) => {
      t = app;
      d = driver(app);
    },
  );

  const messageOf = async (orderId: string) =>
    (
      await t.dataSource.query(
        `SELECT id, status, attempts, last_error AS "lastError", dispatched_at IS NOT NULL AS dispatched
           FROM outbox_message WHERE payload->>'orderId' = $1`,
        [orderId],
      )
    )[0];
  const fulfillmentOf = async (orderId: string) =>
    (await t.dataSource.query(`SELECT id, status, shipment_id AS "shipmentId" FROM fulfillments WHERE order_id = $1`, [orderId]))[0];

  /** An order marked paid whose carrier rejects the shipment: its message dead. */
  async function deadMessage(): Promise<{ orderId: string; messageId: string }> {
    sim.fault('reject', 1);
    const order = await d.createOrder();
    await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'paid by bank transfer' }).expect(200);
    await eventually(async () => (await messageOf(order.id))?.status === 'dead', 10_000, 'a dead message');
    const message = await messageOf(order.id);
    expect(message).toMatchObject({ status: 'dead', attempts: 1, lastError: 'carrier answered 400 invalid_address', dispatched: false });
    expect(await fulfillmentOf(order.id)).toMatchObject({ status: 'failed', shipmentId: null });
    expect((await d.getOrder(order.id)).status).toBe('paid');
    return { orderId: order.id, messageId: message.id };
  }

  it('202 {"status":"queued"}; dispatched with a fresh budget; fulfillment requested → dispatched; order fulfilled; one shipment', async () => {
    const { orderId, messageId } = await deadMessage();
    const dead = await d.http().get('/admin/outbox?status=dead').set(AUTH);
    expect(dead.body.items.map((i: OutboxItem) => i.id)).toEqual([messageId]);

    // The carrier takes the retried call and does not answer it (the call times out, then the
    // same key is answered with the same shipment): the state the retry leaves is visible before the
    // dispatch finishes. (Holding the order's row would hold the retry too: it tells the order its
    // fulfillment is requested again.)
    sim.fault('hang', 1);
    const res = await d.http().post(`/admin/outbox/${messageId}/retry`).set(AUTH);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ status: 'queued' });
    expect(await fulfillmentOf(orderId)).toMatchObject({ status: 'requested', shipmentId: null });
    expect(await messageOf(orderId)).toMatchObject({ status: 'pending', attempts: 0 });
    await eventually(async () => sim.shipments.length === 1, 10_000, 'the carrier called again');
    expect((await d.getOrder(orderId)).fulfillment).toMatchObject({ status: 'requested', shipmentId: null });

    await eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 10_000, 'the order fulfilled');
    const shipments = sim.shipments.filter((s) => s.orderId === orderId);
    expect(shipments.length).toBe(1);
    expect(await messageOf(orderId)).toMatchObject({ status: 'dispatched', attempts: 2, lastError: null, dispatched: true });
    const fulfillment = await fulfillmentOf(orderId);
    expect(fulfillment).toEqual({ id: shipments[0].idempotencyKey, status: 'dispatched', shipmentId: shipments[0].id });
    expect(sim.calls.map((c) => c.result)).toEqual(['reject', 'hang', 'replayed']);
    expect(new Set(sim.calls.map((c) => c.idempotencyKey))).toEqual(new Set([fulfillment.id]));

    // The list shows it dispatched.
    const listed = await d.http().get('/admin/outbox?status=dispatched').set(AUTH);
    expect(listed.body.items).toEqual([
      {
        id: messageId,
        type: 'fulfillment.dispatch',
        idempotencyKey: fulfillment.id,
        status: 'dispatched',
        attempts: 2,
        lastError: null,
        createdAt: expect.any(String),
        dispatchedAt: expect.any(String),
      },
    ]);

    // Dispatched now: a second retry is refused, and nothing reaches the carrier.
    const again = await d.http().post(`/admin/outbox/${messageId}/retry`).set(AUTH);
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: 'illegal_transition', detail: expect.any(String) });
    expect(sim.calls.length).toBe(3);
  });

  it('a retried message that dies again is dead again after a fresh budget, and can be retried once more', async () => {
    const { orderId, messageId } = await deadMessage();
    sim.fault('reject', 1);
    expect((await d.http().post(`/admin/outbox/${messageId}/retry`).set(AUTH)).status).toBe(202);
    await eventually(async () => sim.calls.length === 2 && (await messageOf(orderId)).status === 'dead', 10_000, 'dead again');
    expect(await messageOf(orderId)).toMatchObject({ status: 'dead', attempts: 1 });
    expect((await d.http().post(`/admin/outbox/${messageId}/retry`).set(AUTH)).status).toBe(202);
    await eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 10_000, 'the order fulfilled');
    expect(sim.shipments.length).toBe(1);
    expect(sim.calls.map((c) => c.result)).toEqual(['reject', 'reject', 'created']);
  });

  it('a message dead after CARRIER_MAX_ATTEMPTS gets the whole budget again: two more failures, then dispatched', async () => {
    sim.fault('fail', 3);
    const order = await d.createOrder();
    await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'paid by bank transfer' }).expect(200);
    await eventually(async () => (await messageOf(order.id))?.status === 'dead', 10_000, 'a dead message');
    const message = await messageOf(order.id);
    expect(message).toMatchObject({ attempts: 3, lastError: 'carrier answered 500 simulated_failure (after 3 attempts)' });

    sim.fault('fail', 2);
    expect((await d.http().post(`/admin/outbox/${message.id}/retry`).set(AUTH)).status).toBe(202);
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 10_000, 'the order fulfilled');
    expect(await messageOf(order.id)).toMatchObject({ status: 'dispatched', attempts: 3, lastError: null });
    expect(sim.calls.map((c) => c.result)).toEqual(['fail', 'fail', 'fail', 'fail', 'fail', 'created']);
    expect(sim.shipments.length).toBe(1);
  });

  it('retry of an unknown id: 404', async () => {
    const res = await d.http().post(`/admin/outbox/${MISSING}/retry`).set(AUTH);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'not_found' });
  });
});
