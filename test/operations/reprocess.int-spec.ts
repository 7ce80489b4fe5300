import { getQueueToken } from '@nestjs/bullmq';
import { QueueName } from '../../src/jobs/queues';
import type { Job, Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';

import { CarrierSimulator } from '../../tools/carrier-sim';
import { useCarrierSimulator } from '../support/carrier-suite';
import { AUTH, eventually, TestApp } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';
import { testPgConnection } from '../support/env';

/**
 * POST /admin/webhook-deliveries/{id}/reprocess (CONTRACT §4): "runs processing again; safe at
 * any time because the transition is guarded". Workers on, the carrier simulator behind the
 * outbox, on the real PostgreSQL and Redis.
 */
describe('POST /admin/webhook-deliveries/{id}/reprocess', () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  let queue: Queue;

  useCarrierSimulator(
    sim,
    (url) => ({
      carriers: [{ name: 'default', url, timeoutMs: 1_000 }],
      // Two attempts: a webhook for a payment nobody knows ends unmatched quickly.
      tuning: { inboxAttempts: 2, inboxBackoffMs: 50 },
    }),
    (app) => {
      t = app;
      d = driver(app);
      queue = t.get<Queue>(getQueueToken(QueueName.Inbox));
    },
  );

  const reprocess = (id: string) => d.http().post(`/admin/webhook-deliveries/${id}/reprocess`).set(AUTH);

  const inboxRow = async (id: string) =>
    (
      await t.dataSource.query(
        `SELECT status, outcome, attempts, last_error AS "lastError", processed_at AS "processedAt" FROM webhook_inbox WHERE id = $1`,
        [id],
      )
    )[0];

  const inboxIdOf = async (eventId: string): Promise<string> =>
    (await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [eventId]))[0].id;

  /** Every row of the domain tables, with its row version. */
  const snapshot = async () => ({
    orders: await t.dataSource.query(`SELECT xmin::text, * FROM orders ORDER BY id`),
    payments: await t.dataSource.query(`SELECT xmin::text, * FROM payments ORDER BY id`),
    fulfillments: await t.dataSource.query(`SELECT xmin::text, * FROM fulfillments ORDER BY id`),
    outbox: await t.dataSource.query(`SELECT xmin::text, * FROM outbox_message ORDER BY id`),
  });

  /** The delivery's queue job, once a run added at or after `since` has completed. */
  const jobCompletedSince = (id: string, since: number) =>
    eventually(
      async (): Promise<Job | undefined> => {
        const job: Job | undefined = await queue.getJob(id);
        if (!job || job.timestamp < since) return undefined;
        return (await job.getState()) === 'completed' ? job : undefined;
      },
      15_000,
      `the reprocess job of ${id}`,
    );

  const fulfilled = (orderId: string) =>
    eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 15_000, `order ${orderId} fulfilled`);

  /** A Paymos invoice.paid for an invoice nobody registered and no order id: ends unmatched. */
  async function unmatchedDelivery(invoiceId: string): Promise<string> {
    const { eventId, body } = bodies.paymos('invoice.paid', invoiceId);
    expect((await d.send('paymos-a', 'paymos', body, { eventId })).status).toBe(200);
    expect(await d.processed(eventId)).toMatchObject({ status: 'unmatched', outcome: 'payment_not_found' });
    return inboxIdOf(eventId);
  }

  it('a processed delivery: 202 {"status":"queued"}, the job runs, and nothing changes anywhere', async () => {
    const order = await d.createOrder();
    const { eventId, body } = bodies.paymos('invoice.paid', uniqueId('inv'), { orderId: order.id });
    await d.send('paymos-a', 'paymos', body, { eventId });
    expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    await fulfilled(order.id);
    await eventually(
      async () => (await t.dataSource.query(`SELECT status FROM outbox_message`))[0]?.status === 'dispatched',
      10_000,
      'the outbox message dispatched',
    );
    const id = await inboxIdOf(eventId);
    const before = await snapshot();
    const rowBefore = await inboxRow(id);
    expect(rowBefore).toMatchObject({ status: 'processed', outcome: 'applied', attempts: 1 });

    const since = Date.now();
    const res = await reprocess(id);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ status: 'queued' });
    const job = await jobCompletedSince(id, since);
    expect(job!.returnvalue).toBeNull(); // the run found the delivery final and did nothing

    expect(await snapshot()).toEqual(before);
    expect(await inboxRow(id)).toEqual(rowBefore);
    expect(sim.shipments.length).toBe(1);
  });

  it('an ignored delivery: reprocessed, still ignored, nothing else touched', async () => {
    const { eventId, body } = bodies.paymos('invoice.something_else', uniqueId('inv'));
    await d.send('paymos-a', 'paymos', body, { eventId });
    expect(await d.processed(eventId)).toMatchObject({ status: 'ignored', outcome: 'no_handler' });
    const id = await inboxIdOf(eventId);
    const rowBefore = await inboxRow(id);
    const since = Date.now();
    expect((await reprocess(id)).status).toBe(202);
    await jobCompletedSince(id, since);
    expect(await inboxRow(id)).toEqual(rowBefore);
  });

  it('a failed delivery whose payment now exists: reprocessed, ends processed/applied, the order paid and shipped once', async () => {
    const order = await d.createOrder();
    const invoiceId = uniqueId('inv');
    const id = await unmatchedDelivery(invoiceId);
    // Processing kept failing (as a database outage would leave it): failed, replayable.
    await t.dataSource.query(
      `UPDATE webhook_inbox SET status = 'failed', outcome = 'internal_error', last_error = 'internal_error: connection lost'
        WHERE id = $1`,
      [id],
    );
    // The payment is registered now; a registration releases only parked (unmatched) deliveries.
    const payment = await d.registerPayment(order.id, 'paymos', invoiceId, 'acc_1');
    expect(payment.status).toBe('pending');
    expect(await inboxRow(id)).toMatchObject({ status: 'failed', outcome: 'internal_error' });

    const res = await reprocess(id);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ status: 'queued' });
    await eventually(async () => (await inboxRow(id)).status === 'processed', 15_000, 'the delivery processed');
    expect(await inboxRow(id)).toMatchObject({ status: 'processed', outcome: 'applied', lastError: null });
    const [p] = await t.dataSource.query(`SELECT status FROM payments WHERE id = $1`, [payment.id]);
    expect(p.status).toBe('succeeded');
    await fulfilled(order.id);
    expect(sim.shipments.filter((s) => s.orderId === order.id).length).toBe(1);
  });

  it('an unmatched delivery whose payment was registered by other means: reprocessed, ends processed/applied', async () => {
    const order = await d.createOrder();
    const invoiceId = uniqueId('inv');
    const id = await unmatchedDelivery(invoiceId);
    // Registered straight in the database (an import), so nothing released the parked delivery.
    const paymentId = randomUUID();
    await t.dataSource.query(
      `INSERT INTO payments (id, order_id, provider, provider_payment_id, merchant_account_id, status, amount_minor,
                             currency, refunded_minor, created_at, updated_at)
       VALUES ($1, $2, 'paymos', $3, 'acc_1', 'pending', 4990, 'EUR', 0, now(), now())`,
      [paymentId, order.id, invoiceId],
    );
    expect(await inboxRow(id)).toMatchObject({ status: 'unmatched' });

    const res = await reprocess(id);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ status: 'queued' });
    await eventually(async () => (await inboxRow(id)).status === 'processed', 15_000, 'the delivery processed');
    expect(await inboxRow(id)).toMatchObject({ status: 'processed', outcome: 'applied' });
    const [p] = await t.dataSource.query(`SELECT status FROM payments WHERE id = $1`, [paymentId]);
    expect(p.status).toBe('succeeded');
    await fulfilled(order.id);
    expect(sim.shipments.filter((s) => s.orderId === order.id).length).toBe(1);
  });

  it('while a processing transaction holds the row: 409 with an error code, and nothing runs', async () => {
    const order = await d.createOrder();
    const invoiceId = uniqueId('inv');
    const id = await unmatchedDelivery(invoiceId);
    await d.registerPayment(order.id, 'paymos', invoiceId, 'acc_1'); // releases and applies it
    await eventually(async () => (await inboxRow(id)).status === 'processed', 15_000, 'the delivery processed');
    await fulfilled(order.id);
    await t.dataSource.query(`UPDATE webhook_inbox SET status = 'failed', outcome = 'internal_error' WHERE id = $1`, [id]);
    const jobBefore = await queue.getJob(id);
    expect(jobBefore).toBeDefined();
    const stamp = { timestamp: jobBefore!.timestamp, finishedOn: jobBefore!.finishedOn };
    const rowBefore = await inboxRow(id);
    const domainBefore = await snapshot();

    const holder = new Client(testPgConnection());
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`SELECT id FROM webhook_inbox WHERE id = $1 FOR UPDATE`, [id]);
      const started = Date.now();
      const res = await reprocess(id);
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: expect.stringMatching(/^[a-z_]+$/), detail: expect.any(String) });
      expect(res.body.error).not.toBe('illegal_transition');
      expect(Date.now() - started).toBeLessThan(5_000); // refused at once, not after waiting for the lock
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      await holder.end();
    }
    // Nothing ran: the row as it was, no new job.
    expect(await inboxRow(id)).toEqual(rowBefore);
    const jobAfter = await queue.getJob(id);
    expect({ timestamp: jobAfter?.timestamp, finishedOn: jobAfter?.finishedOn }).toEqual(stamp);
    expect(await snapshot()).toEqual(domainBefore);

    // Once the lock is gone the same request is accepted, and the guard finds the payment already succeeded.
    const since = Date.now();
    expect((await reprocess(id)).status).toBe(202);
    await jobCompletedSince(id, since);
    await eventually(async () => (await inboxRow(id)).status !== 'received', 10_000, 'the delivery final');
    expect(await inboxRow(id)).toMatchObject({ status: 'processed', outcome: 'already_applied' });
  });

  it('unknown id, or not even a uuid: 404 {"error":"not_found"}', async () => {
    const res = await reprocess('0190f5d2-0000-7000-8000-000000000000');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: 'not_found' });
    const bad = await reprocess('nope');
    expect(bad.status).toBe(404);
    expect(bad.body).toEqual({ error: 'not_found' });
  });

  it('without the admin token: 401', async () => {
    const res = await d.http().post('/admin/webhook-deliveries/0190f5d2-0000-7000-8000-000000000000/reprocess');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'unauthorized' });
  });
});
