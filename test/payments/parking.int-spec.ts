import { Client } from 'pg';
import { DeliveryProcessingService } from '../../src/webhooks/delivery-processing.service';
import { AUTH, createTestApp, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';
import { testPgConnection } from '../support/env';

/**
 * Parked deliveries (`unmatched`: the last attempt found no payment) are released when their
 * payment appears: a registration racing the worker that parks one waits for it and releases it;
 * a payment created by a webhook that carries the order id releases them too. Workers off: the
 * test drives processing itself.
 */
describe('parked deliveries are released when their payment appears', () => {
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  let processing: DeliveryProcessingService;
  const clients: Client[] = [];

  beforeAll(async () => {
    t = await createTestApp();
    d = driver(t);
    processing = t.get(DeliveryProcessingService);
  });
  afterAll(async () => {
    for (const c of clients) await c.end().catch(() => undefined);
    await t?.close();
  });
  beforeEach(() => truncateAll(t.dataSource));

  const inboxIdOf = async (eventId: string): Promise<string> => {
    const rows: Array<{ id: string }> = await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [eventId]);
    expect(rows).toHaveLength(1);
    return rows[0].id;
  };
  const inboxRow = async (id: string) =>
    (
      await t.dataSource.query(
        `SELECT status, outcome, processed_at IS NOT NULL AS processed FROM webhook_inbox WHERE id = $1`,
        [id],
      )
    )[0];

  /**
   * What a worker's last attempt does, on a connection of its own: lock the row and park it, not
   * committed yet. `commit` ends it; `abandon` (in a finally) rolls it back if the test failed first.
   */
  const parkingWorker = async (id: string) => {
    const worker = new Client(testPgConnection());
    clients.push(worker);
    await worker.connect();
    await worker.query('BEGIN');
    let open = true;
    const locked = await worker.query(`SELECT id, status FROM webhook_inbox WHERE id = $1 FOR UPDATE`, [id]);
    expect(locked.rows).toEqual([{ id, status: 'received' }]);
    await worker.query(
      `UPDATE webhook_inbox SET status = 'unmatched', outcome = 'payment_not_found', processed_at = now(), attempts = attempts + 1
        WHERE id = $1`,
      [id],
    );
    return {
      commit: async () => {
        await worker.query('COMMIT');
        open = false;
      },
      abandon: async () => {
        if (open) await worker.query('ROLLBACK').catch(() => undefined);
      },
    };
  };

  /** 'pending' when `work` has not settled after 300 ms (it waits on a lock), else 'answered'. */
  const after300ms = async (work: Promise<unknown>): Promise<'answered' | 'pending'> => {
    let timer: NodeJS.Timeout | undefined;
    const first = await Promise.race([
      work.then(() => 'answered' as const),
      new Promise<'pending'>((resolve) => {
        timer = setTimeout(() => resolve('pending'), 300);
      }),
    ]);
    clearTimeout(timer);
    return first;
  };

  it('a registration racing the worker parking its delivery waits for it, then releases the delivery', async () => {
    const order = await d.createOrder();
    const pi = uniqueId('pi');
    const { eventId, body } = bodies.stripe('payment_intent.succeeded', pi); // no metadata.order_id
    const received = await d.send('stripe-main', 'stripe', body);
    expect(received.status).toBe(200);
    expect(received.body).toEqual({ status: 'accepted', eventId });
    const id = await inboxIdOf(eventId);
    expect(await inboxRow(id)).toEqual({ status: 'received', outcome: null, processed: false });

    const worker = await parkingWorker(id);
    try {
      const registration = d
        .http()
        .post(`/orders/${order.id}/payments`)
        .set(AUTH)
        .send({ provider: 'stripe', providerPaymentId: pi })
        .then((res) => res);
      // It waits for the worker's row lock instead of missing the row it is about to park.
      expect(await after300ms(registration)).toBe('pending');

      await worker.commit();
      const res = await registration;
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ orderId: order.id, provider: 'stripe', providerPaymentId: pi, status: 'pending' });

      // Released: not left parked.
      expect(await inboxRow(id)).toEqual({ status: 'received', outcome: null, processed: false });

      expect(await processing.process(id, false)).toEqual({ status: 'processed', outcome: 'applied' });
      expect(await inboxRow(id)).toEqual({ status: 'processed', outcome: 'applied', processed: true });
      const view = await d.getOrder(order.id);
      expect(view.status).toBe('paid');
      expect(view.payments).toHaveLength(1);
      expect(view.payments[0]).toMatchObject({ providerPaymentId: pi, status: 'succeeded', refundedAmount: '0.00' });
    } finally {
      // A failed assertion must not leave the row locked for the next test.
      await worker.abandon();
    }
  });

  it('a payment created from the order id while a worker is parking its other delivery: released once that worker commits', async () => {
    const order = await d.createOrder();
    const paymentId = uniqueId('pay');
    const refund = bodies.standard('payment.refunded', paymentId, { refunded: 2000 }); // no order id
    expect((await d.send('standard-main', 'standard', refund.body, { eventId: refund.eventId })).status).toBe(200);
    const refundId = await inboxIdOf(refund.eventId);
    const capture = bodies.standard('payment.succeeded', paymentId, { orderId: order.id });
    expect((await d.send('standard-main', 'standard', capture.body, { eventId: capture.eventId })).status).toBe(200);
    const captureId = await inboxIdOf(capture.eventId);

    // Another worker's last attempt at the refund: row locked, being parked, not committed yet.
    const worker = await parkingWorker(refundId);
    try {
      // The capture creates the payment; inside its transaction it must skip the locked refund.
      const captured = processing.process(captureId, false);
      // Committed, then waiting for the parking worker instead of leaving its delivery parked.
      expect(await after300ms(captured)).toBe('pending');
      expect((await d.getOrder(order.id)).status).toBe('paid');

      await worker.commit();
      expect(await captured).toEqual({ status: 'processed', outcome: 'applied' });
      expect(await inboxRow(refundId)).toEqual({ status: 'received', outcome: null, processed: false });
      expect(await processing.process(refundId, false)).toEqual({ status: 'processed', outcome: 'applied' });
      expect((await d.getOrder(order.id)).payments[0]).toMatchObject({ status: 'partially_refunded', refundedAmount: '20.00' });
    } finally {
      await worker.abandon();
    }
  });

  it('a payment created from the order id in a webhook releases the deliveries parked for it', async () => {
    const order = await d.createOrder();
    const paymentId = uniqueId('pay');

    // The refund arrives first, without the order id: nobody knows the payment; the last attempt parks it.
    const refund = bodies.standard('payment.refunded', paymentId, { refunded: 2000 });
    expect((await d.send('standard-main', 'standard', refund.body, { eventId: refund.eventId })).status).toBe(200);
    const refundId = await inboxIdOf(refund.eventId);
    expect(await processing.process(refundId, true)).toEqual({ status: 'unmatched', outcome: 'payment_not_found' });
    expect(await inboxRow(refundId)).toEqual({ status: 'unmatched', outcome: 'payment_not_found', processed: true });

    // The capture names the order: it creates the payment, and so makes the refund processable.
    const capture = bodies.standard('payment.succeeded', paymentId, { orderId: order.id });
    expect((await d.send('standard-main', 'standard', capture.body, { eventId: capture.eventId })).status).toBe(200);
    const captureId = await inboxIdOf(capture.eventId);
    expect(await processing.process(captureId, false)).toEqual({ status: 'processed', outcome: 'applied' });

    expect(await inboxRow(refundId)).toEqual({ status: 'received', outcome: null, processed: false });
    expect(await processing.process(refundId, false)).toEqual({ status: 'processed', outcome: 'applied' });
    expect(await inboxRow(refundId)).toEqual({ status: 'processed', outcome: 'applied', processed: true });

    const payments = await d.http().get('/payments').query({ providerPaymentId: paymentId }).set(AUTH);
    expect(payments.status).toBe(200);
    expect(payments.body.items).toHaveLength(1);
    expect(payments.body.items[0]).toMatchObject({
      orderId: order.id,
      provider: 'standard',
      providerPaymentId: paymentId,
      merchantAccountId: 'acc_1',
      status: 'partially_refunded',
      amount: '49.90',
      refundedAmount: '20.00',
    });
    expect((await d.getOrder(order.id)).status).toBe('paid');
  });
});
