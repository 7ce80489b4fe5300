import { randomUUID } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import request from 'supertest';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { createTestApp, eventually, TestApp } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';
import { TEST_REDIS_URL } from '../support/env';
import { LocalRedisCluster } from '../support/redis-cluster';

/**
 * The module on a Redis Cluster of three masters (REDIS_CLUSTER, a hash-tagged QUEUE_PREFIX):
 * every connection is an ioredis Cluster, and BullMQ's keys of the prefix share one slot, so its
 * multi-key scripts run. The whole path runs on it: receive, process, fulfil through the outbox.
 */
describe('BullMQ on a Redis Cluster (redisCluster, queuePrefix {…})', () => {
  const cluster = new LocalRedisCluster(3);
  const sim = new CarrierSimulator();
  const tag = `pwtest-${randomUUID().slice(0, 8)}`;
  const queuePrefix = `{${tag}}`;
  let t: TestApp | undefined;
  let client: Cluster | undefined;

  beforeAll(async () => {
    await cluster.start();
    await sim.start();
    t = await createTestApp({
      redisUrl: cluster.seedUrl,
      redisCluster: true,
      queuePrefix,
      runWorkers: true,
      carriers: [{ name: 'default', url: sim.url, timeoutMs: 2_000 }],
      // Fast retries; the inbox sweeper rarely, so the enqueue on receive is what starts the work.
      tuning: { carrierBackoffBaseMs: 20, carrierBackoffCapMs: 200, sweepIntervalMs: 10_000, sweepAfterMs: 10_000 },
    });
    client = new Cluster([{ host: '127.0.0.1', port: cluster.ports[0] }], { redisOptions: { maxRetriesPerRequest: 1 } });
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    client?.disconnect();
    await sim.stop();
    await cluster.stop();
  });

  it('receives, processes and fulfils once: accepted, duplicate, one shipment, ready', async () => {
    const d = driver(t!);
    const order = await d.createOrder();
    const paymentId = uniqueId('pay');
    await d.registerPayment(order.id, 'standard', paymentId, 'acc_1');
    const { eventId, body } = bodies.standard('payment.succeeded', paymentId, { orderId: order.id });

    const first = await d.send('standard-main', 'standard', body, { eventId });
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ status: 'accepted', eventId });
    const again = await d.send('standard-main', 'standard', body, { eventId });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ status: 'duplicate', eventId });

    expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, 'the order fulfilled');
    expect(sim.shipments.filter((s) => s.orderId === order.id)).toHaveLength(1);
    expect(sim.shipments).toHaveLength(1);
    expect((await d.getOrder(order.id)).fulfillment.shipmentId).toBe(sim.shipments[0].id);
    expect(await d.count(`SELECT 1 FROM webhook_inbox WHERE event_id = $1`, [eventId])).toBe(1);

    const ready = await request(t!.app.getHttpServer()).get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ok', info: { database: { status: 'up' }, redis: { status: 'up' } } });
  });

  it('keeps the BullMQ keys on the cluster, under the prefix, in the one slot of its hash tag', async () => {
    const keysByNode = await Promise.all(client!.nodes('master').map((node) => node.keys(`${queuePrefix}:*`)));
    const keys = keysByNode.flat();
    // The inbox and outbox queues ran here (their job hashes, ids, events streams…).
    expect(keys.some((k) => k.startsWith(`${queuePrefix}:inbox:`))).toBe(true);
    expect(keys.some((k) => k.startsWith(`${queuePrefix}:outbox:`))).toBe(true);
    // All on one node: the one serving the slot of the hash tag.
    expect(keysByNode.filter((k) => k.length > 0)).toHaveLength(1);
    const slot = Number(await client!.cluster('KEYSLOT', tag));
    const slots = await Promise.all(keys.map((k) => client!.cluster('KEYSLOT', k)));
    expect(new Set(slots.map(Number))).toEqual(new Set([slot]));
    expect(Number(await client!.cluster('KEYSLOT', `${queuePrefix}:inbox:meta`))).toBe(
      Number(await client!.cluster('KEYSLOT', `${queuePrefix}:outbox:id`)),
    );

    // And none on the suites' single Redis.
    const single = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await single.connect();
      expect(await single.keys(`${queuePrefix}:*`)).toEqual([]);
    } finally {
      single.disconnect();
    }
  });
});
