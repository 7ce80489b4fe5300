import { getQueueToken } from '@nestjs/bullmq';
import type { Job, Queue } from 'bullmq';
import { QueueName } from '../../src/jobs/queues';
import { OrderHistory1765497600000 } from '../../migrations/1765497600000-OrderHistory';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { AUTH, eventually, PLATFORMS, TestApp } from '../support/app';
import { useCarrierSimulator } from '../support/carrier-suite';
import { bodies, driver, uniqueId } from '../support/domain';
import { orderHistoryProblems } from '../support/history-check';
import { ISO_INSTANT, MISSING_ID } from './api-helpers';

/**
 * CONTRACT §3.2, for what exists today: `GET /orders/{id}/history` lists every move of an order,
 * its payments and its fulfillment, with its cause, oldest first, written in the transaction that
 * made it. Signed webhooks over HTTP, the BullMQ workers, the carrier simulator; the real
 * PostgreSQL and Redis; on both HTTP platforms.
 */
describe.each(PLATFORMS)('%s: order history', (platform) => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  useCarrierSimulator(
    sim,
    (url) => ({ carriers: [{ name: 'default', url, timeoutMs: 2_000 }], tuning: { inboxBackoffMs: 50 } }),
    (app) => {
      t = app;
      d = driver(app);
    },
    { platform },
  );

  async function historyOf(orderId: string): Promise<Array<Record<string, any>>> {
    const res = await d.http().get(`/orders/${orderId}/history`).set(AUTH);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['items']);
    const items: Array<Record<string, any>> = res.body.items;
    // Oldest first.
    for (const item of items) expect(item.at).toMatch(ISO_INSTANT);
    expect(items.map((i) => i.at)).toEqual([...items.map((i) => i.at)].sort());
    return items;
  }

  /** The problems of an order's history against where it and what it holds stand (test/support/history-check.ts). */
  const problemsOf = (orderId: string) =>
    orderHistoryProblems(async (path) => {
      const res = await d.http().get(path).set(AUTH);
      return { status: res.status, body: res.body };
    }, orderId);

  /** The items without their instants, for an exact comparison. */
  const moves = (items: Array<Record<string, any>>) => items.map(({ at, ...rest }) => rest);

  const deliveryIdOf = async (eventId: string): Promise<string> =>
    (await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [eventId]))[0].id;

  const fulfilled = (orderId: string) =>
    eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 15_000, `order ${orderId} fulfilled`);

  /** Reprocesses a delivery and waits for the run to complete. */
  async function reprocess(deliveryId: string): Promise<void> {
    const inbox = t.get<Queue>(getQueueToken(QueueName.Inbox));
    const since = Date.now();
    expect((await d.http().post(`/admin/webhook-deliveries/${deliveryId}/reprocess`).set(AUTH)).status).toBe(202);
    await eventually(
      async (): Promise<Job | undefined> => {
        const job: Job | undefined = await inbox.getJob(deliveryId);
        if (!job || job.timestamp < since) return undefined;
        return (await job.getState()) === 'completed' ? job : undefined;
      },
      15_000,
      `the reprocess of ${deliveryId}`,
    );
  }

  /** An order placed, paid by a signed webhook (which creates its payment), shipped by the carrier. */
  async function paidAndShipped() {
    const order = await d.createOrder();
    const paymentId = uniqueId('pay');
    const paid = bodies.standard('payment.succeeded', paymentId, { orderId: order.id });
    await d.send('standard-main', 'standard', paid.body, { eventId: paid.eventId });
    expect((await d.processed(paid.eventId)).outcome).toBe('applied');
    await fulfilled(order.id);
    const view = await d.getOrder(order.id);
    const delivery = { kind: 'delivery', deliveryId: await deliveryIdOf(paid.eventId), eventId: paid.eventId, provider: 'standard' };
    const carrier = { kind: 'carrier', shipmentId: view.fulfillment.shipmentId };
    const expected = [
      { entity: 'order', entityId: order.id, from: null, to: 'awaiting_payment', cause: { kind: 'api', action: 'place' } },
      { entity: 'payment', entityId: view.payments[0].id, from: null, to: 'pending', cause: delivery },
      { entity: 'payment', entityId: view.payments[0].id, from: 'pending', to: 'succeeded', cause: delivery },
      { entity: 'order', entityId: order.id, from: 'awaiting_payment', to: 'paid', cause: delivery },
      { entity: 'fulfillment', entityId: view.fulfillment.id, from: null, to: 'requested', cause: delivery },
      { entity: 'fulfillment', entityId: view.fulfillment.id, from: 'requested', to: 'dispatched', cause: carrier },
      { entity: 'order', entityId: order.id, from: 'paid', to: 'fulfilled', cause: carrier },
    ];
    return { order, paymentId, paid, view, expected };
  }

  it('placed, paid by a delivery, fulfilled by the carrier: each move once, in order, with its cause', async () => {
    const { order, view, expected } = await paidAndShipped();
    expect(typeof view.fulfillment.shipmentId).toBe('string');
    expect(sim.shipments.filter((s) => s.orderId === order.id).length).toBe(1);
    expect(moves(await historyOf(order.id))).toEqual(expected);
  });

  it('a duplicate delivery, a reprocess and a stale event add nothing', async () => {
    const { order, paymentId, paid, expected } = await paidAndShipped();
    const before = await historyOf(order.id);

    // The same delivery again: a duplicate.
    expect((await d.send('standard-main', 'standard', paid.body, { eventId: paid.eventId })).body).toEqual({ status: 'duplicate', eventId: paid.eventId });

    // A reprocess of it: the run finds the delivery final.
    await reprocess(await deliveryIdOf(paid.eventId));

    // A delivery the lifecycle rejected (the wrong amount), reprocessed: it runs again, and is rejected again.
    const wrong = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id, amount: 1 });
    await d.send('standard-main', 'standard', wrong.body, { eventId: wrong.eventId });
    expect((await d.processed(wrong.eventId)).outcome).toBe('amount_mismatch');
    await reprocess(await deliveryIdOf(wrong.eventId));
    expect(await d.processed(wrong.eventId)).toMatchObject({ status: 'rejected', outcome: 'amount_mismatch' });

    // An earlier status of the same payment, arriving late: stale.
    const stale = bodies.standard('payment.processing', paymentId, { orderId: order.id });
    await d.send('standard-main', 'standard', stale.body, { eventId: stale.eventId });
    expect((await d.processed(stale.eventId)).outcome).toBe('stale');

    expect(await historyOf(order.id)).toEqual(before);
    expect(moves(before)).toEqual(expected);
    // After them all: each change once, in order, ending where everything stands.
    expect(await problemsOf(order.id)).toEqual([]);
  });

  it('canceled via the API: its creation and its cancel', async () => {
    const order = await d.createOrder();
    expect((await d.http().post(`/orders/${order.id}/cancel`).set(AUTH)).status).toBe(200);
    // A second cancel is refused, and adds nothing.
    expect((await d.http().post(`/orders/${order.id}/cancel`).set(AUTH)).status).toBe(409);
    expect(await problemsOf(order.id)).toEqual([]);
    expect(moves(await historyOf(order.id))).toEqual([
      { entity: 'order', entityId: order.id, from: null, to: 'awaiting_payment', cause: { kind: 'api', action: 'place' } },
      { entity: 'order', entityId: order.id, from: 'awaiting_payment', to: 'canceled', cause: { kind: 'api', action: 'cancel' } },
    ]);
  });

  it('a payment registered, then the order marked paid by support: the API actions are the causes', async () => {
    const order = await d.createOrder();
    const payment = await d.registerPayment(order.id, 'standard', uniqueId('pay'), 'acc_1');
    expect((await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'paid by phone' })).status).toBe(200);
    await fulfilled(order.id);
    const view = await d.getOrder(order.id);
    const markPaid = { kind: 'api', action: 'mark-paid' };
    expect(moves(await historyOf(order.id))).toEqual([
      { entity: 'order', entityId: order.id, from: null, to: 'awaiting_payment', cause: { kind: 'api', action: 'place' } },
      { entity: 'payment', entityId: payment.id, from: null, to: 'pending', cause: { kind: 'api', action: 'register-payment' } },
      { entity: 'order', entityId: order.id, from: 'awaiting_payment', to: 'paid', cause: markPaid },
      { entity: 'fulfillment', entityId: view.fulfillment.id, from: null, to: 'requested', cause: markPaid },
      { entity: 'fulfillment', entityId: view.fulfillment.id, from: 'requested', to: 'dispatched', cause: { kind: 'carrier', shipmentId: view.fulfillment.shipmentId } },
      { entity: 'order', entityId: order.id, from: 'paid', to: 'fulfilled', cause: { kind: 'carrier', shipmentId: view.fulfillment.shipmentId } },
    ]);
  });

  it('a processing transaction that rolls back leaves no history row; its retry writes each move once', async () => {
    // The first fulfillment insert raises (a sequence: nextval() survives the rollback).
    await t.dataSource.query(`CREATE SEQUENCE IF NOT EXISTS test_history_fail_once`);
    await t.dataSource.query(`SELECT setval('test_history_fail_once', 1, false)`);
    await t.dataSource.query(`
      CREATE OR REPLACE FUNCTION test_history_fail_once() RETURNS trigger AS $$
      BEGIN
        IF nextval('test_history_fail_once') = 1 THEN
          RAISE EXCEPTION 'injected failure';
        END IF;
        RETURN NEW;
      END $$ LANGUAGE plpgsql`);
    await t.dataSource.query(`CREATE TRIGGER test_history_fail_once BEFORE INSERT ON fulfillments FOR EACH ROW EXECUTE FUNCTION test_history_fail_once()`);
    try {
      const { order, paid, expected } = await paidAndShipped();
      expect((await d.processed(paid.eventId)).attempts).toBe(2);
      expect(moves(await historyOf(order.id))).toEqual(expected);
      expect(await problemsOf(order.id)).toEqual([]);
    } finally {
      await t.dataSource.query(`DROP TRIGGER IF EXISTS test_history_fail_once ON fulfillments`);
      await t.dataSource.query(`DROP FUNCTION IF EXISTS test_history_fail_once()`);
      await t.dataSource.query(`DROP SEQUENCE IF EXISTS test_history_fail_once`);
    }
  });

  it('an unknown order answers 404 as the other order routes; the route needs the admin token', async () => {
    const res = await d.http().get(`/orders/${MISSING_ID}/history`).set(AUTH);
    expect(res.status).toBe(404);
    expect((await d.http().get(`/orders/${MISSING_ID}`).set(AUTH)).body).toEqual(res.body);
    expect((await d.http().get(`/orders/not-a-uuid/history`).set(AUTH)).status).toBe(404);
    const order = await d.createOrder();
    expect((await d.http().get(`/orders/${order.id}/history`)).status).toBe(401);
  });

  it('the migration backfills what the rows it finds can tell: creation and current status, cause backfill', async () => {
    const { order: shipped, view } = await paidAndShipped();
    const waiting = await d.createOrder();
    // The history as the migration finds the rows: made before it.
    const runner = t.dataSource.createQueryRunner();
    try {
      const migration = new OrderHistory1765497600000();
      await migration.down(runner);
      await migration.up(runner);
    } finally {
      await runner.release();
    }
    const iso = (v: Date) => v.toISOString();
    const [f] = await t.dataSource.query(`SELECT id, created_at, updated_at FROM fulfillments WHERE order_id = $1`, [shipped.id]);
    const backfill = { kind: 'backfill' };
    const payment = view.payments[0];
    const items = await historyOf(shipped.id);
    expect(items).toHaveLength(6);
    expect(items).toEqual(
      expect.arrayContaining([
        { at: view.createdAt, entity: 'order', entityId: shipped.id, from: null, to: 'awaiting_payment', cause: backfill },
        { at: view.updatedAt, entity: 'order', entityId: shipped.id, from: null, to: 'fulfilled', cause: backfill },
        { at: payment.createdAt, entity: 'payment', entityId: payment.id, from: null, to: 'pending', cause: backfill },
        { at: payment.updatedAt, entity: 'payment', entityId: payment.id, from: null, to: 'succeeded', cause: backfill },
        { at: iso(f.created_at), entity: 'fulfillment', entityId: f.id, from: null, to: 'requested', cause: backfill },
        { at: iso(f.updated_at), entity: 'fulfillment', entityId: f.id, from: null, to: 'dispatched', cause: backfill },
      ]),
    );
    expect(moves(await historyOf(waiting.id))).toEqual([
      { entity: 'order', entityId: waiting.id, from: null, to: 'awaiting_payment', cause: backfill },
    ]);
    // Moves after the migration are recorded as ever.
    expect((await d.http().post(`/orders/${waiting.id}/cancel`).set(AUTH)).status).toBe(200);
    expect(moves(await historyOf(waiting.id))).toEqual([
      { entity: 'order', entityId: waiting.id, from: null, to: 'awaiting_payment', cause: backfill },
      { entity: 'order', entityId: waiting.id, from: 'awaiting_payment', to: 'canceled', cause: { kind: 'api', action: 'cancel' } },
    ]);
  });
});
