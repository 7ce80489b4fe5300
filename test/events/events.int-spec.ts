import { getQueueToken } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { Client } from 'pg';
import type { EntityManager } from 'typeorm';
import { OnPaymentEvent, PaymentWebhooksEvent } from '../../src';
import { QueueName } from '../../src/jobs/queues';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { AUTH, eventually, TestApp } from '../support/app';
import { bodies, uniqueId } from '../support/domain';
import { testPgConnection } from '../support/env';
import { Calls, driver, eventMessages, expectEventBody, outboxSettled, PROVIDER_CASES, useEventsApp, withoutPayments } from './support';

/**
 * CONTRACT §7 for a paid order: every change an event, announced exactly once, to an after-commit
 * subscriber (at least once, on the workers) and to an in-transaction one (once, with the change);
 * a duplicate, a reprocess or a stale webhook announces nothing. Signed webhooks over HTTP, the
 * BullMQ workers, the carrier simulator; the real PostgreSQL and Redis.
 */

const afterCommit = new Calls();
const inTransaction = new Calls();

/** A host provider hearing every event, after the commit and in the transaction. */
@Injectable()
class EveryEvent {
  @OnPaymentEvent('*')
  received(event: PaymentWebhooksEvent): void {
    afterCommit.push(event);
  }

  /** What it writes through the transaction's EntityManager commits with the change. */
  @OnPaymentEvent('*', { inTransaction: true })
  async inTransaction(event: PaymentWebhooksEvent, em: EntityManager): Promise<void> {
    inTransaction.push(event);
    await em.query(`INSERT INTO public.event_log (event_id, type, order_id) VALUES ($1, $2, $3)`, [event.id, event.type, event.data.order.id]);
  }
}

const PAID_TYPES = ['payment.succeeded', 'order.paid', 'order.fulfilled'];

describe('§7 events of a paid order (workers on, carrier simulator)', () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  let inboxQueue: Queue;
  let raw: Client;

  beforeAll(async () => {
    raw = new Client(testPgConnection());
    await raw.connect();
    await raw.query(`CREATE TABLE IF NOT EXISTS public.event_log (event_id uuid PRIMARY KEY, type text NOT NULL, order_id uuid NOT NULL)`);
  });
  afterAll(async () => {
    await raw.query(`DROP TABLE IF EXISTS public.event_log`);
    await raw.end();
  });

  useEventsApp(sim, () => ({ tuning: { inboxBackoffMs: 50 } }), [EveryEvent], (app) => {
    t = app;
    d = driver(app);
    inboxQueue = t.get<Queue>(getQueueToken(QueueName.Inbox));
  });

  const committedRows = async (orderId: string) =>
    (await raw.query(`SELECT event_id AS "eventId", type FROM public.event_log WHERE order_id = $1 ORDER BY event_id`, [orderId])).rows;

  /** The inbox job of a delivery, once a run added at or after `since` has completed. */
  const jobCompletedSince = (id: string, since: number) =>
    eventually(
      async (): Promise<Job | undefined> => {
        const job: Job | undefined = await inboxQueue.getJob(id);
        if (!job || job.timestamp < since) return undefined;
        return (await job.getState()) === 'completed' ? job : undefined;
      },
      15_000,
      `the reprocess job of ${id}`,
    );

  describe.each(PROVIDER_CASES)('paid by a $provider webhook', (c) => {
    it('emits payment.succeeded, order.paid, order.fulfilled once each, in order, with the §7 body; repeats, a reprocess and a stale event emit nothing', async () => {
      const order = await d.createOrder();
      const resourceId = c.newResourceId();
      const registered = await d.registerPayment(order.id, c.provider, resourceId);
      const paid = c.success(resourceId);
      const send = () => d.send(c.endpoint, c.provider, paid.body, { eventId: paid.eventId });

      expect((await send()).body).toEqual({ status: 'accepted', eventId: paid.eventId });
      expect(await d.processed(paid.eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
      await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, 'the order fulfilled');
      await eventually(async () => afterCommit.of(order.id).length >= 3, 15_000, 'three events delivered');

      const view = await d.getOrder(order.id);
      const [payment] = view.payments;
      expect(payment).toMatchObject({ id: registered.id, status: 'succeeded', providerPaymentId: resourceId });
      const events = afterCommit.of(order.id);
      expect(events.map((e) => e.type)).toEqual(PAID_TYPES);
      const [succeeded, orderPaid, fulfilled] = events;
      expectEventBody(succeeded, { type: 'payment.succeeded', orderId: order.id, payment, sourceEventId: paid.eventId });
      expectEventBody(orderPaid, { type: 'order.paid', orderId: order.id, orderStatus: 'paid', payment, sourceEventId: paid.eventId });
      expectEventBody(fulfilled, { type: 'order.fulfilled', orderId: order.id, orderStatus: 'fulfilled', payment: null, sourceEventId: null });
      // The payment as it is now (nothing moved it since); the order as it is now, without payments.
      expect(succeeded.data.payment).toEqual(payment);
      expect(orderPaid.data.payment).toEqual(payment);
      expect(fulfilled.data.order).toEqual(withoutPayments(view));
      expect(fulfilled.data.order.fulfillment).toMatchObject({ status: 'dispatched', shipmentId: sim.shipments[0].id });
      // Each event's own id, time-ordered in the order they were made.
      expect(new Set(events.map((e) => e.id)).size).toBe(3);
      expect([...events.map((e) => e.id)].sort()).toEqual(events.map((e) => e.id));
      for (let i = 1; i < events.length; i++) expect(Date.parse(events[i].occurredAt)).toBeGreaterThanOrEqual(Date.parse(events[i - 1].occurredAt));

      // The same webhook five more times, three of them at once.
      for (let i = 0; i < 2; i++) expect((await send()).body).toEqual({ status: 'duplicate', eventId: paid.eventId });
      const parallel = await Promise.all([send(), send(), send()]);
      for (const res of parallel) expect(res.body).toEqual({ status: 'duplicate', eventId: paid.eventId });

      // A reprocess of it: the run finds the delivery final.
      const [{ id: inboxId }] = await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [paid.eventId]);
      const since = Date.now();
      const reprocessed = await d.http().post(`/admin/webhook-deliveries/${inboxId}/reprocess`).set(AUTH);
      expect(reprocessed.status).toBe(202);
      await jobCompletedSince(inboxId, since);

      // A stale, earlier-status event for the same payment.
      const stale = c.stale(resourceId);
      expect((await d.send(c.endpoint, c.provider, stale.body, { eventId: stale.eventId })).body).toEqual({ status: 'accepted', eventId: stale.eventId });
      expect(await d.processed(stale.eventId)).toMatchObject({ status: 'processed', outcome: 'stale' });

      // Nothing new was written, and everything written was delivered: the counts stay exactly 3.
      await outboxSettled(t);
      const messages = await eventMessages(t, order.id);
      expect(messages.map((m) => ({ type: m.type, key: m.idempotencyKey, status: m.status, attempts: m.attempts }))).toEqual(
        events.map((e) => ({ type: `event.${e.type}`, key: `${e.id}:EveryEvent.received`, status: 'dispatched', attempts: 1 })),
      );
      expect(afterCommit.typesOf(order.id)).toEqual(PAID_TYPES);
      expect(afterCommit.of(order.id).map((e) => e.id)).toEqual(events.map((e) => e.id));

      // In the transaction: the same three events, once each, and what it wrote committed once each.
      expect(inTransaction.typesOf(order.id)).toEqual(PAID_TYPES);
      expect(inTransaction.of(order.id)).toEqual(events);
      expect(await committedRows(order.id)).toEqual(events.map((e) => ({ eventId: e.id, type: e.type })));
      expect(sim.shipments.filter((s) => s.orderId === order.id).length).toBe(1);
    });
  });
});

/** Who was called with what, and when each call started and ended. */
const ordered: Array<{ orderId: string; type: string; id: string; startedAt: number; endedAt?: number }> = [];
/** Orders whose payment.succeeded call waits until the test lets it go. */
const held = new Map<string, { release: () => void; released: Promise<void> }>();

@Injectable()
class OrderedSubscriber {
  @OnPaymentEvent('*')
  async got(event: PaymentWebhooksEvent): Promise<void> {
    const call: (typeof ordered)[number] = { orderId: event.data.order.id, type: event.type, id: event.id, startedAt: Date.now() };
    ordered.push(call);
    const hold = held.get(event.data.order.id);
    if (hold && event.type === 'payment.succeeded') await hold.released;
    call.endedAt = Date.now();
  }
}

describe("§7 order: one order's events reach a subscriber in the order they were made", () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  useEventsApp(sim, () => ({ tuning: { inboxBackoffMs: 50, workerConcurrency: 8 } }), [OrderedSubscriber], (app) => {
    t = app;
    d = driver(app);
  });

  async function payByWebhook(): Promise<string> {
    const order = await d.createOrder();
    const paid = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    expect((await d.send('standard-main', 'standard', paid.body, { eventId: paid.eventId })).status).toBe(200);
    return order.id;
  }

  const callsOf = (orderId: string) => ordered.filter((c) => c.orderId === orderId);

  it('while payment.succeeded is being delivered, order.paid and order.fulfilled (written, due) wait for it', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const orderId = await d.createOrder().then((o) => o.id);
    held.set(orderId, { release, released });
    try {
      const paid = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId });
      await d.send('standard-main', 'standard', paid.body, { eventId: paid.eventId });
      await eventually(async () => callsOf(orderId).length === 1, 15_000, 'payment.succeeded being delivered');
      // The shipment leaves meanwhile: order.fulfilled is written too; both later events are due.
      await eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 15_000, 'the order fulfilled');
      const messages = await eventMessages(t, orderId);
      expect(messages.map((m) => [m.type, m.status])).toEqual([
        ['event.payment.succeeded', 'pending'],
        ['event.order.paid', 'pending'],
        ['event.order.fulfilled', 'pending'],
      ]);
      expect(callsOf(orderId).map((c) => c.type)).toEqual(['payment.succeeded']);
    } finally {
      release();
    }
    await eventually(async () => callsOf(orderId).filter((c) => c.endedAt).length === 3, 15_000, 'all three delivered');
    const calls = callsOf(orderId);
    expect(calls.map((c) => c.type)).toEqual(PAID_TYPES);
    // Each call began only after the one before it had ended.
    for (let i = 1; i < calls.length; i++) expect(calls[i].startedAt).toBeGreaterThanOrEqual(calls[i - 1].endedAt!);
    await outboxSettled(t);
    expect((await eventMessages(t, orderId)).map((m) => m.attempts)).toEqual([1, 1, 1]);
  });

  it('several orders at once: each order in order, every event at its first attempt', async () => {
    const orders = await Promise.all([payByWebhook(), payByWebhook(), payByWebhook(), payByWebhook()]);
    await eventually(async () => orders.every((id) => callsOf(id).filter((c) => c.endedAt).length === 3), 20_000, 'every event delivered');
    await outboxSettled(t);
    for (const id of orders) {
      const calls = callsOf(id);
      expect(calls.map((c) => c.type)).toEqual(PAID_TYPES);
      for (let i = 1; i < calls.length; i++) {
        expect(calls[i].startedAt).toBeGreaterThanOrEqual(calls[i - 1].endedAt!);
        expect(calls[i].id > calls[i - 1].id).toBe(true);
      }
      expect((await eventMessages(t, id)).map((m) => m.attempts)).toEqual([1, 1, 1]);
    }
  });
});
