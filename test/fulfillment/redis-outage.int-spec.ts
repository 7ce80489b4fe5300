import { CarrierSimulator } from '../../tools/carrier-sim';
import { AUTH, createTestApp, eventually, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';
import { freePort } from '../support/process';
import { DedicatedRedis } from '../support/redis-server';

describe('Redis stopped while orders are paid', () => {
  const sim = new CarrierSimulator();
  let redis: DedicatedRedis;
  let t: TestApp;

  beforeAll(async () => {
    await sim.start();
    redis = new DedicatedRedis(await freePort());
    await redis.start();
    t = await createTestApp({
      redisUrl: redis.url,
      runWorkers: true,
      carriers: [{ name: 'default', url: sim.url, timeoutMs: 1_000 }],
      tuning: { sweepIntervalMs: 200, sweepAfterMs: 100, enqueueTimeoutMs: 200, carrierBackoffBaseMs: 50, carrierBackoffCapMs: 500 },
    });
    await truncateAll(t.dataSource);
  });
  afterAll(async () => {
    await redis.start(); // closing the app's connections wants a server to say goodbye to
    await t.close();
    await redis.stop();
    await sim.stop();
  });

  it('loses no shipment: every paid order gets exactly one once Redis is back', async () => {
    const d = driver(t);
    const orders = await Promise.all([d.createOrder(), d.createOrder(), d.createOrder(), d.createOrder()]);

    await redis.stop();
    // Two paid by webhooks (answered 200: the rows are committed), two by the support path.
    for (const order of orders.slice(0, 2)) {
      const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
      const res = await d.send('standard-main', 'standard', body, { eventId });
      expect(res.body).toEqual({ status: 'accepted', eventId });
    }
    for (const order of orders.slice(2)) {
      await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'paid in store' }).expect(200);
    }
    expect(sim.calls.length).toBe(0);

    await redis.start(); // empty: every job that was in it is gone too
    await eventually(
      async () => {
        const statuses = await Promise.all(orders.map(async (o) => (await d.getOrder(o.id)).status));
        return statuses.every((s) => s === 'fulfilled');
      },
      30_000,
      'every order fulfilled',
    );
    for (const order of orders) {
      expect(sim.shipments.filter((s) => s.orderId === order.id).length).toBe(1);
    }
    expect(sim.shipments.length).toBe(4);
  });
});
