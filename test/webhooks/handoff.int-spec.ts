import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { QueueName } from '../../src/jobs/queues';
import { createTestApp, eventually, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';

/**
 * The hand-off (docs/design.md#the-receive-path): a process that runs the workers makes a new
 * delivery's first attempt itself once its row is committed, and dispatches the outbox messages its
 * own transactions write once they commit; the queue keeps what the hand-off cannot finish, with the
 * same attempts as a job.
 */
describe('the hand-off in a process that runs the workers', () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let inbox: Queue;
  let outbox: Queue;

  beforeAll(async () => {
    await sim.start();
    // The sweepers are slow here: nothing below may depend on them.
    t = await createTestApp({
      runWorkers: true,
      carriers: [{ name: 'default', url: sim.url, timeoutMs: 2_000 }],
      tuning: { inboxAttempts: 4, unmatchedAfterAttempts: 3, inboxBackoffMs: 50, sweepIntervalMs: 60_000, sweepAfterMs: 60_000 },
    });
    inbox = t.get<Queue>(getQueueToken(QueueName.Inbox));
    outbox = t.get<Queue>(getQueueToken(QueueName.Outbox));
  });
  afterAll(async () => {
    await t?.close();
    await sim.stop();
  });
  beforeEach(async () => {
    await truncateAll(t.dataSource);
    sim.reset();
  });

  const inboxRow = async (eventId: string) =>
    (await t.dataSource.query(`SELECT id, status, outcome, attempts FROM webhook_inbox WHERE event_id = $1`, [eventId]))[0];

  it('a paid order ships once, with no job on the inbox queue or the outbox queue', async () => {
    const d = driver(t);
    // Until the queue's connection is known to be up, deliveries go to the queue: one first.
    const first = await d.createOrder();
    const warm = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: first.id });
    expect((await d.send('standard-main', 'standard', warm.body, { eventId: warm.eventId })).status).toBe(200);
    await d.processed(warm.eventId);

    const order = await d.createOrder();
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    expect((await d.send('standard-main', 'standard', body, { eventId })).body).toEqual({ status: 'accepted', eventId });
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 10_000, 'the order fulfilled');
    expect(sim.shipments.filter((s) => s.orderId === order.id).length).toBe(1);

    const row = await inboxRow(eventId);
    expect(row).toMatchObject({ status: 'processed', attempts: 1 });
    expect(await inbox.getJob(row.id)).toBeUndefined();
    const [message] = await t.dataSource.query(`SELECT id, status FROM outbox_message WHERE type = 'fulfillment.dispatch' AND payload->>'orderId' = $1`, [order.id]);
    expect(message.status).toBe('dispatched');
    expect(await outbox.getJob(message.id)).toBeUndefined();
  });

  it('a first attempt that fails leaves the rest of its budget to the queue: the attempts are a job\'s', async () => {
    const d = driver(t);
    // A payment nobody registered: each attempt fails, and the third parks it unmatched.
    const { eventId, body } = bodies.paymos('invoice.paid', uniqueId('inv'));
    expect((await d.send('paymos-a', 'paymos', body, { eventId })).status).toBe(200);
    expect(await d.processed(eventId)).toMatchObject({ status: 'unmatched', outcome: 'payment_not_found' });
    const row = await inboxRow(eventId);
    expect(row.attempts).toBe(3);
    // The queue's job made attempts 2 and 3, knowing of the first.
    const job = await inbox.getJob(row.id);
    expect(job?.data).toMatchObject({ inboxId: row.id, attemptsBefore: 1 });
    expect(job?.opts.attempts).toBe(3);
    expect(sim.shipments.length).toBe(0);
  });
});
