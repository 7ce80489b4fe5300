import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';

import { QueueName } from '../../src/jobs/queues';
import { signedHeaders, SigningProvider } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { useCarrierSimulator } from '../support/carrier-suite';
import { AUTH, eventually, PLATFORMS, secretOf, TestApp } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';

/**
 * POST /admin/webhook-deliveries/reprocess (docs/operations.md#replaying-many-deliveries): many
 * deliveries, by ids or by the archive's filter, each run again as the single reprocess runs one.
 * Workers on, the carrier simulator behind the outbox, on the real PostgreSQL and Redis.
 */
describe.each(PLATFORMS)('POST /admin/webhook-deliveries/reprocess (%s)', (platform) => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  let queue: Queue;

  useCarrierSimulator(
    sim,
    (url) => ({
      carriers: [{ name: 'default', url, timeoutMs: 5_000 }],
      // Two attempts: a webhook for a payment nobody knows ends unmatched quickly.
      tuning: { inboxAttempts: 2, inboxBackoffMs: 50 },
    }),
    (app) => {
      t = app;
      d = driver(app);
      queue = t.get<Queue>(getQueueToken(QueueName.Inbox));
    },
    { platform },
  );

  const bulk = (body: unknown) => d.http().post('/admin/webhook-deliveries/reprocess').set(AUTH).send(body as object);

  type Row = { id: string; status: string; outcome: string | null; attempts: number; lastError: string | null; receivedAt: Date };
  const rows = async (): Promise<Row[]> =>
    t.dataSource.query(
      `SELECT id, status, outcome, attempts, last_error AS "lastError", received_at AS "receivedAt" FROM webhook_inbox ORDER BY id`,
    );
  const rowOf = async (id: string): Promise<Row> => (await rows()).find((r) => r.id === id)!;
  const inboxIdOf = async (eventId: string): Promise<string> =>
    (await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [eventId]))[0].id;
  const count = (sql: string, params: unknown[] = []) => d.count(sql, params);
  const noneReceived = (what: string, timeoutMs = 20_000) =>
    eventually(async () => (await count(`SELECT 1 FROM webhook_inbox WHERE status = 'received'`)) === 0, timeoutMs, what);

  /** A signed delivery through the receive path, processed to its end; its inbox id. */
  async function delivered(endpointId: string, provider: SigningProvider, made: { eventId: string; body: object }): Promise<string> {
    const res = await d.send(endpointId, provider, made.body, { eventId: made.eventId });
    expect(res.status).toBe(200);
    await d.processed(made.eventId);
    return inboxIdOf(made.eventId);
  }

  /** An order paid by a Paymos invoice.paid and shipped; the delivery's inbox id. */
  async function paidAndShipped(): Promise<{ orderId: string; inboxId: string }> {
    const order = await d.createOrder();
    const inboxId = await delivered('paymos-a', 'paymos', bodies.paymos('invoice.paid', uniqueId('inv'), { orderId: order.id }));
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, `order ${order.id} fulfilled`);
    return { orderId: order.id, inboxId };
  }

  /** What processing would do wrong twice: rows of the domain tables and the outbox, each with its row version. */
  const domain = async () => ({
    orders: await t.dataSource.query(`SELECT xmin::text, * FROM orders ORDER BY id`),
    payments: await t.dataSource.query(`SELECT xmin::text, * FROM payments ORDER BY id`),
    fulfillments: await t.dataSource.query(`SELECT xmin::text, * FROM fulfillments ORDER BY id`),
    outbox: await t.dataSource.query(`SELECT id, type, idempotency_key FROM outbox_message ORDER BY id`),
  });

  it('by ids: failed, unmatched and rejected are opened again and counted; processed, ignored and unknown ids are left and not counted', async () => {
    // Processed: an order paid and shipped.
    const paid = await paidAndShipped();
    // Failed: another paid order's delivery, as a database outage would have left it.
    const other = await paidAndShipped();
    await t.dataSource.query(
      `UPDATE webhook_inbox SET status = 'failed', outcome = 'internal_error', last_error = 'internal_error: connection lost' WHERE id = $1`,
      [other.inboxId],
    );
    // Unmatched: a Paymos invoice nobody registered; its payment then imported straight into the database.
    const order = await d.createOrder();
    const invoiceId = uniqueId('inv');
    const unmatched = await delivered('paymos-a', 'paymos', bodies.paymos('invoice.paid', invoiceId));
    expect(await rowOf(unmatched)).toMatchObject({ status: 'unmatched', outcome: 'payment_not_found' });
    await t.dataSource.query(
      `INSERT INTO payments (id, order_id, provider, provider_payment_id, merchant_account_id, status, amount_minor,
                             currency, refunded_minor, created_at, updated_at)
       VALUES ($1, $2, 'paymos', $3, 'acc_1', 'pending', 4990, 'EUR', 0, now(), now())`,
      [randomUUID(), order.id, invoiceId],
    );
    // Rejected: an underpayment of a registered invoice.
    const under = await d.createOrder();
    const underInvoice = uniqueId('inv');
    await d.registerPayment(under.id, 'paymos', underInvoice, 'acc_1');
    const rejected = await delivered('paymos-a', 'paymos', bodies.paymos('invoice.paid', underInvoice, { orderId: under.id, amount: '10.00' }));
    expect(await rowOf(rejected)).toMatchObject({ status: 'rejected', outcome: 'amount_mismatch' });
    // Ignored: a type the service does not act on.
    const ignored = await delivered('paymos-a', 'paymos', bodies.paymos('invoice.something_else', uniqueId('inv')));
    expect(await rowOf(ignored)).toMatchObject({ status: 'ignored', outcome: 'no_handler' });

    const paidBefore = await rowOf(paid.inboxId);
    const ignoredBefore = await rowOf(ignored);
    const shipmentsBefore = sim.shipments.length;
    const unknown = '0190f5d2-0000-7000-8000-000000000000';

    const res = await bulk({ ids: [paid.inboxId, other.inboxId, unmatched, rejected, ignored, unknown, other.inboxId] });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ queued: 3 });

    await noneReceived('the reprocessed deliveries final');
    expect(await rowOf(other.inboxId)).toMatchObject({ status: 'processed', outcome: 'already_applied', lastError: null });
    expect(await rowOf(unmatched)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(await rowOf(rejected)).toMatchObject({ status: 'rejected', outcome: 'amount_mismatch' });
    expect(await rowOf(paid.inboxId)).toEqual(paidBefore);
    expect(await rowOf(ignored)).toEqual(ignoredBefore);
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, 'the imported payment applied and shipped');
    expect(sim.shipments.length).toBe(shipmentsBefore + 1);
    expect(sim.shipments.filter((s) => s.orderId === order.id).length).toBe(1);
  });

  it('a delivery being processed right now is skipped and not counted; the others go on', async () => {
    const a = await paidAndShipped();
    const b = await paidAndShipped();
    await t.dataSource.query(`UPDATE webhook_inbox SET status = 'failed', outcome = 'internal_error' WHERE id = ANY($1)`, [[a.inboxId, b.inboxId]]);
    const holder = t.dataSource.createQueryRunner();
    await holder.connect();
    try {
      // A processing transaction holds a's row (as the processor locks the rows it processes).
      await holder.startTransaction();
      await holder.query(`SELECT id FROM webhook_inbox WHERE id = $1 FOR UPDATE`, [a.inboxId]);
      const started = Date.now();
      const res = await bulk({ ids: [a.inboxId, b.inboxId] });
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ queued: 1 });
      expect(Date.now() - started).toBeLessThan(5_000); // not waited for
      await eventually(async () => (await rowOf(b.inboxId)).status === 'processed', 15_000, 'b processed');
      expect(await rowOf(b.inboxId)).toMatchObject({ status: 'processed', outcome: 'already_applied' });
    } finally {
      await holder.rollbackTransaction().catch(() => undefined);
      await holder.release();
    }
    expect(await rowOf(a.inboxId)).toMatchObject({ status: 'failed', outcome: 'internal_error' });
    expect(sim.shipments.length).toBe(2);
  });

  it('by filter: each field selects exactly what the archive lists; from inclusive, to exclusive, to the millisecond', async () => {
    // Four deliveries the service ignores, so each run ends at once; sent one after another, each a
    // millisecond or more after the last.
    const d1 = await delivered('paymos-a', 'paymos', bodies.paymos('invoice.something_else', uniqueId('inv')));
    const d2 = await delivered('paymos-b', 'paymos', bodies.paymos('invoice.other_thing', uniqueId('inv')));
    const d3 = await delivered('stripe-main', 'stripe', bodies.stripe('customer.created', uniqueId('cus')));
    const d4 = await delivered('paymos-a', 'paymos', bodies.paymos('invoice.other_thing', uniqueId('inv')));
    const all = [d1, d2, d3, d4];
    const at = async (id: string) => (await rowOf(id)).receivedAt;
    const [t2, t4] = [await at(d2), await at(d4)];
    expect(new Set((await Promise.all(all.map(at))).map((x) => x.getTime())).size).toBe(4);
    const ms = (date: Date, plus = 0) => new Date(date.getTime() + plus).toISOString();

    const cases: Array<[filter: Record<string, string>, expected: string[], unmatchedToo?: string[]]> = [
      [{ endpointId: 'paymos-a' }, [d1, d4]],
      [{ provider: 'stripe' }, [d3]],
      [{ eventType: 'invoice.other_thing' }, [d2, d4]],
      [{ status: 'unmatched' }, [d3], [d3]],
      [{ from: ms(t2) }, [d2, d3, d4]],
      [{ to: ms(t4) }, [d1, d2, d3]],
      [{ from: ms(t2), to: ms(t4) }, [d2, d3]],
      [{ from: ms(t2, 1), to: ms(t4, 1) }, [d3, d4]],
      [{ from: ms(t2), to: ms(t2) }, []],
      [{ endpointId: 'paymos-a', eventType: 'invoice.other_thing', from: ms(t2) }, [d4]],
      [{}, all],
    ];
    for (const [filter, expected, unmatchedToo = []] of cases) {
      // Every delivery failed (or, for the status case, one unmatched): each can be opened again.
      await t.dataSource.query(`UPDATE webhook_inbox SET status = 'failed', outcome = 'internal_error' WHERE id = ANY($1)`, [all]);
      await t.dataSource.query(`UPDATE webhook_inbox SET status = 'unmatched', outcome = 'payment_not_found' WHERE id = ANY($1)`, [unmatchedToo]);
      const res = await bulk({ filter });
      expect({ filter, status: res.status, body: res.body }).toEqual({ filter, status: 202, body: { queued: expected.length } });
      await noneReceived(`the deliveries of ${JSON.stringify(filter)} final`);
      // A delivery run again ends ignored; one not selected is still as it was left.
      const after = await rows();
      const ran = after.filter((r) => r.status === 'ignored').map((r) => r.id);
      expect({ filter, ran: ran.sort() }).toEqual({ filter, ran: [...expected].sort() });
    }
  });

  it(`the bound: a filter selecting more than 10,000 deliveries answers 400 naming filter, with the count, and changes nothing; 10,000 is accepted`, async () => {
    // Arrange cheaply: 10,001 rows written straight into the inbox (through the receive path this
    // would take minutes). Rows the receive path could have written: a key each, UUIDv7-shaped ids
    // are not needed since no time window is asked for.
    await t.dataSource.query(
      `INSERT INTO webhook_inbox (id, endpoint_id, provider, merchant_account_id, event_id, event_type, headers, body, status, outcome, attempts)
       SELECT gen_random_uuid(), 'paymos-a', 'paymos', 'acc_1', 'evt_bound_' || n, 'invoice.something_else', '{}'::jsonb, '{}',
              'ignored', 'no_handler', 1
         FROM generate_series(1, 10000) AS n`,
    );
    await t.dataSource.query(
      `INSERT INTO webhook_inbox (id, endpoint_id, provider, merchant_account_id, event_id, event_type, headers, body, status, outcome, attempts)
       VALUES (gen_random_uuid(), 'paymos-a', 'paymos', 'acc_1', 'evt_bound_10001', 'invoice.paid', '{}'::jsonb, '{}', 'failed', 'internal_error', 1)`,
    );
    const before = await t.dataSource.query(`SELECT xmin::text, id, status, outcome FROM webhook_inbox ORDER BY id`);
    const jobsBefore = await queue.getJobCountByTypes('waiting', 'delayed', 'active', 'completed', 'failed', 'prioritized');

    const res = await bulk({ filter: { endpointId: 'paymos-a' } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'validation_failed',
      details: [{ field: 'filter', message: 'the filter selects 10001 deliveries; at most 10000 may be reprocessed in one call' }],
    });
    expect(await t.dataSource.query(`SELECT xmin::text, id, status, outcome FROM webhook_inbox ORDER BY id`)).toEqual(before);
    expect(await queue.getJobCountByTypes('waiting', 'delayed', 'active', 'completed', 'failed', 'prioritized')).toBe(jobsBefore);

    // Exactly 10,000 selected: accepted; all ignored, so none is queued.
    const atBound = await bulk({ filter: { endpointId: 'paymos-a', eventType: 'invoice.something_else' } });
    expect(atBound.status).toBe(202);
    expect(atBound.body).toEqual({ queued: 0 });
    expect(await t.dataSource.query(`SELECT xmin::text, id, status, outcome FROM webhook_inbox ORDER BY id`)).toEqual(before);
  });

  it.each<[string, (id: string) => unknown, string]>([
    ['neither ids nor filter', () => ({}), 'ids'],
    ['ids and filter both', (id) => ({ ids: [id], filter: {} }), 'filter'],
    ['an empty ids list', () => ({ ids: [] }), 'ids'],
    ['more than 1,000 ids', (id) => ({ ids: [id, ...Array.from({ length: 1_000 }, () => randomUUID())] }), 'ids'],
    ['an id that is not a uuid', (id) => ({ ids: [id, 'nope'] }), 'ids'],
    ['ids not a list', (id) => ({ ids: id }), 'ids'],
    ['an unknown field', (id) => ({ ids: [id], force: true }), 'force'],
    ['an unknown filter field', () => ({ filter: { eventId: 'evt_1' } }), 'filter.eventId'],
    ['a filter that is not an object', () => ({ filter: 'failed' }), 'filter'],
    ['an unknown status', () => ({ filter: { status: 'stuck' } }), 'filter.status'],
    ['an unknown provider', () => ({ filter: { provider: 'nopay' } }), 'filter.provider'],
    ['an endpointId too long', () => ({ filter: { endpointId: 'e'.repeat(65) } }), 'filter.endpointId'],
    ['an eventType not a string', () => ({ filter: { eventType: 42 } }), 'filter.eventType'],
    ['from without a time zone', () => ({ filter: { from: '2026-11-29T10:00:00' } }), 'filter.from'],
    ['to not an instant', () => ({ filter: { to: 'yesterday' } }), 'filter.to'],
  ])('%s: 400 validation_failed naming the field, and nothing changes', async (_case, body, field) => {
    const { inboxId } = await paidAndShipped();
    await t.dataSource.query(`UPDATE webhook_inbox SET status = 'failed', outcome = 'internal_error' WHERE id = $1`, [inboxId]);
    const before = await rows();
    const jobsBefore = await queue.getJobCountByTypes('waiting', 'delayed', 'active', 'completed', 'failed', 'prioritized');
    const res = await bulk(body(inboxId));
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'validation_failed', details: [{ field, message: expect.any(String) }] });
    expect(await rows()).toEqual(before);
    expect(await queue.getJobCountByTypes('waiting', 'delayed', 'active', 'completed', 'failed', 'prioritized')).toBe(jobsBefore);
  });

  it('without the admin token: 401, and nothing changes', async () => {
    const { inboxId } = await paidAndShipped();
    await t.dataSource.query(`UPDATE webhook_inbox SET status = 'failed', outcome = 'internal_error' WHERE id = $1`, [inboxId]);
    const before = await rows();
    const res = await d.http().post('/admin/webhook-deliveries/reprocess').send({ ids: [inboxId] });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'unauthorized' });
    expect(await rows()).toEqual(before);
  });

  it('bulk reprocess of 1,000 deliveries doubles nothing, even with a second bulk call of the same running alongside', async () => {
    const N = 1_000;
    const orders: string[] = [];
    for (let start = 0; start < N; start += 25) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(25, N - start) }, async () => {
          const order = await d.createOrder();
          const { eventId, body } = bodies.paymos('invoice.paid', uniqueId('inv'), { orderId: order.id });
          const text = JSON.stringify(body);
          const res = await d.http().post('/webhooks/paymos-a').set(signedHeaders('paymos', secretOf('paymos-a'), text, { eventId })).send(text);
          if (res.status !== 200) throw new Error(`delivery refused: ${res.status} ${res.text}`);
          return order.id;
        }),
      );
      orders.push(...batch);
    }
    // Fulfilled once each: every order shipped, every outbox message dispatched.
    await eventually(async () => sim.shipments.length === N, 120_000, `${N} shipments`);
    await eventually(
      async () => (await count(`SELECT 1 FROM outbox_message WHERE status <> 'dispatched'`)) === 0,
      60_000,
      'the outbox dispatched',
    );
    expect(await count(`SELECT 1 FROM webhook_inbox WHERE status = 'processed' AND outcome = 'applied'`)).toBe(N);
    // As an outage in the middle of processing would have left them: failed, so a replay opens
    // every one again and runs it through the guard (a processed delivery would be left as it is).
    await t.dataSource.query(`UPDATE webhook_inbox SET status = 'failed', outcome = 'internal_error', last_error = 'internal_error: connection lost'`);
    const outboxBefore = await count(`SELECT 1 FROM outbox_message`);
    const domainBefore = await domain();

    const [first, second] = await Promise.all([bulk({ filter: { endpointId: 'paymos-a' } }), bulk({ filter: { endpointId: 'paymos-a' } })]);
    expect([first.status, second.status]).toEqual([202, 202]);
    // Each delivery is counted by at least one call: a call skips a row only while the other call
    // (or a worker running what the other call queued) holds it.
    const [q1, q2] = [first.body.queued as number, second.body.queued as number];
    expect(q1).toBeLessThanOrEqual(N);
    expect(q2).toBeLessThanOrEqual(N);
    expect(q1 + q2).toBeGreaterThanOrEqual(N);

    await eventually(
      async () => (await count(`SELECT 1 FROM webhook_inbox WHERE status = 'processed' AND outcome = 'already_applied'`)) === N,
      120_000,
      `${N} deliveries final again`,
    );
    const after = await rows();
    expect(after.length).toBe(N);
    expect(after.filter((r) => r.status === 'processed' && r.outcome === 'already_applied' && r.lastError === null).length).toBe(N);
    expect(await count(`SELECT 1 FROM outbox_message`)).toBe(outboxBefore);
    expect(await domain()).toEqual(domainBefore);
    expect(sim.shipments.length).toBe(N);
    expect(new Set(sim.shipments.map((s) => s.orderId))).toEqual(new Set(orders));
  }, 300_000);
});
