import { OutboxRelay } from '../../src/outbox/outbox-relay.service';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { useCarrierSimulator } from '../support/carrier-suite';
import { AUTH, eventually, TestApp } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';

/**
 * The outbox relay and the carrier dispatcher against the carrier simulator, on the real
 * PostgreSQL and Redis. Shipments are counted at the simulator.
 */
describe('fulfillment through the outbox (carrier simulator)', () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  useCarrierSimulator(
    sim,
    (url) => ({
      carriers: [{ name: 'default', url, timeoutMs: 300 }],
      carrierMaxAttempts: 6,
    }),
    (app) => {
      t = app;
      d = driver(app);
    },
  );

  /** An order paid by a signed webhook; resolves with its id once the delivery is processed. */
  async function paidOrder(): Promise<string> {
    const order = await d.createOrder();
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    await d.send('standard-main', 'standard', body, { eventId });
    expect((await d.processed(eventId)).outcome).toBe('applied');
    return order.id;
  }

  const messageOf = (orderId: string) => d.outboxMessage(orderId);
  const fulfilled = (orderId: string) =>
    eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 15_000, `order ${orderId} fulfilled`);
  const shipmentsFor = (orderId: string) => sim.shipments.filter((s) => s.orderId === orderId);

  it('an order paid by webhook gets exactly one shipment, and shows fulfilled with its shipment id', async () => {
    const orderId = await paidOrder();
    await fulfilled(orderId);
    const shipments = shipmentsFor(orderId);
    expect(shipments.length).toBe(1);
    const view = await d.getOrder(orderId);
    expect(view.fulfillment).toEqual({
      id: shipments[0].idempotencyKey,
      status: 'dispatched',
      carrier: 'default',
      shipmentId: shipments[0].id,
    });
    expect(await messageOf(orderId)).toEqual({ status: 'dispatched', attempts: 1, lastError: null, dispatched: true });
    expect(sim.calls.map((c) => c.result)).toEqual(['created']);
  });

  it('the carrier failing three calls with 500, then recovering: one shipment', async () => {
    sim.fault('fail', 3);
    const orderId = await paidOrder();
    await fulfilled(orderId);
    expect(shipmentsFor(orderId).length).toBe(1);
    expect(sim.calls.map((c) => c.result)).toEqual(['fail', 'fail', 'fail', 'created']);
    expect(await messageOf(orderId)).toMatchObject({ status: 'dispatched', attempts: 4 });
    // Every call carried the same key.
    expect(new Set(sim.calls.map((c) => c.idempotencyKey)).size).toBe(1);
  });

  it('the carrier accepting and dropping the answer: the same key is retried, one shipment', async () => {
    sim.fault('drop', 1);
    const orderId = await paidOrder();
    await fulfilled(orderId);
    expect(shipmentsFor(orderId).length).toBe(1);
    expect(sim.calls.map((c) => c.result)).toEqual(['drop', 'replayed']);
    expect((await d.getOrder(orderId)).fulfillment.shipmentId).toBe(shipmentsFor(orderId)[0].id);
  });

  it('the carrier hanging: the call times out, is retried, one shipment', async () => {
    sim.fault('hang', 1);
    const orderId = await paidOrder();
    await fulfilled(orderId);
    expect(shipmentsFor(orderId).length).toBe(1);
    expect(sim.calls.map((c) => c.result)).toEqual(['hang', 'replayed']);
    expect(await messageOf(orderId)).toMatchObject({ status: 'dispatched', attempts: 2 });
  });

  it('the carrier rejecting with 400: the message is dead with the reason, and nothing retries', async () => {
    sim.fault('reject', 1);
    const orderId = await paidOrder();
    await eventually(async () => (await messageOf(orderId))?.status === 'dead', 10_000, 'a dead message');
    expect(await messageOf(orderId)).toEqual({
      status: 'dead',
      attempts: 1,
      lastError: 'carrier answered 400 invalid_address',
      dispatched: false,
    });
    // A sweep finds nothing to do, and no later call reaches the carrier.
    expect(await t.get(OutboxRelay).runOnce()).toBe(0);
    expect(sim.calls.map((c) => c.result)).toEqual(['reject']);
    const view = await d.getOrder(orderId);
    expect(view.status).toBe('paid');
    expect(view.fulfillment).toMatchObject({ status: 'failed', shipmentId: null });
  });

  it('a carrier that keeps failing: dead after CARRIER_MAX_ATTEMPTS calls in all', async () => {
    sim.fault('fail', 10);
    const orderId = await paidOrder();
    await eventually(async () => (await messageOf(orderId))?.status === 'dead', 15_000, 'a dead message');
    expect(await messageOf(orderId)).toEqual({
      status: 'dead',
      attempts: 6,
      lastError: 'carrier answered 500 simulated_failure (after 6 attempts)',
      dispatched: false,
    });
    expect(sim.calls.length).toBe(6);
    expect(sim.shipments.length).toBe(0);
  });

  it('support marking paid dispatches through the same outbox', async () => {
    const order = await d.createOrder();
    await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'paid at the counter' }).expect(200);
    await fulfilled(order.id);
    expect(shipmentsFor(order.id).length).toBe(1);
  });

  it('a lost notification and a lost job: the sweeper still delivers the message', async () => {
    // Written straight into the database, with no NOTIFY and no job: only a sweep can find it.
    const order = await d.createOrder();
    const fulfillmentId = '01a00000-0000-7000-8000-000000000001';
    await t.dataSource.query(`UPDATE orders SET status = 'paid' WHERE id = $1`, [order.id]);
    await t.dataSource.query(
      `INSERT INTO fulfillments (id, order_id, status, carrier, ship_to, items, created_at, updated_at)
       SELECT $1, id, 'requested', 'default', ship_to, items, now(), now() FROM orders WHERE id = $2`,
      [fulfillmentId, order.id],
    );
    await t.dataSource.query(
      `INSERT INTO outbox_message (id, type, payload, idempotency_key, status)
       VALUES ($1, 'fulfillment.dispatch', $2, $3, 'pending')`,
      ['01a00000-0000-7000-8000-000000000002', JSON.stringify({ fulfillmentId, orderId: order.id }), fulfillmentId],
    );
    await fulfilled(order.id);
    expect(shipmentsFor(order.id).length).toBe(1);
  });
});
