import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { AUTH, createTestApp, eventually, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';
import { testPgConnection } from '../support/env';
import { linksOf, parentOf, spansNamed, spansWith, useInMemoryTracing } from '../support/tracing';

const exporter = useInMemoryTracing();

const FAST = { carrierBackoffBaseMs: 20, carrierBackoffCapMs: 200, sweepIntervalMs: 200, sweepAfterMs: 100, inboxBackoffMs: 50 };

const processSpansOf = (eventId: string) =>
  spansWith(exporter, 'messaging.message.id', eventId)
    .filter((s) => s.name.startsWith('webhook process '))
    .sort((a, b) => Number(a.attributes['payment_webhooks.attempt']) - Number(b.attributes['payment_webhooks.attempt']));
/** Polls until `probe` gives something (eventually, typed without the undefined it polls past). */
const present = <T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> => eventually(probe, timeoutMs, what) as Promise<T>;
const receiveSpansOf = (eventId: string) => spansWith(exporter, 'messaging.message.id', eventId).filter((s) => s.name.startsWith('webhook receive '));

/** The span id a stored W3C `traceparent` names. */
const spanIdOf = (traceparent: string) => traceparent.split('-')[2];

/**
 * CONTRACT §9 across attempts: every processing attempt of a delivery (a retry after a failure, an
 * operator's reprocess, a new worker after the old one died) is a span of its own that links to the
 * same receipt span, the one whose context is stored on the inbox row.
 */
describe('traces across attempts (workers on, carrier simulator)', () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  let raw: Client;

  beforeAll(async () => {
    await sim.start();
    // Two attempts: a webhook for a payment nobody knows ends unmatched quickly.
    t = await createTestApp({ runWorkers: true, carriers: [{ name: 'default', url: sim.url, timeoutMs: 1_000 }], tuning: { ...FAST, inboxAttempts: 2 } });
    d = driver(t);
    raw = new Client(testPgConnection());
    await raw.connect();
  });
  afterAll(async () => {
    await raw?.end();
    await t?.close();
    await sim.stop();
  });
  beforeEach(async () => {
    await truncateAll(t.dataSource);
    sim.reset();
    exporter.reset();
  });

  const inboxRow = async (eventId: string) =>
    (await t.dataSource.query(`SELECT id, status, outcome, attempts, trace_context AS "traceContext" FROM webhook_inbox WHERE event_id = $1`, [eventId]))[0];

  it('the database refuses the first attempt: the retry is a new span, attempt 2, linked to the same receipt', async () => {
    const order = await d.createOrder();
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    // The statement that finishes this delivery fails once (a sequence, so the rollback does not undo the count).
    await raw.query(`CREATE SEQUENCE trace_refuse_once`);
    await raw.query(`
      CREATE FUNCTION trace_refuse_once() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval('trace_refuse_once') = 1 THEN RAISE EXCEPTION 'refused once by the test'; END IF;
        RETURN NEW;
      END $$`);
    await raw.query(`
      CREATE TRIGGER trace_refuse_once BEFORE UPDATE ON webhook_inbox FOR EACH ROW
        WHEN (NEW.event_id = '${eventId}' AND NEW.status <> 'received') EXECUTE FUNCTION trace_refuse_once()`);
    try {
      expect((await d.send('standard-main', 'standard', body, { eventId })).status).toBe(200);
      expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied', attempts: 2 });
    } finally {
      await raw.query(`DROP TRIGGER IF EXISTS trace_refuse_once ON webhook_inbox`);
      await raw.query(`DROP FUNCTION IF EXISTS trace_refuse_once()`);
      await raw.query(`DROP SEQUENCE IF EXISTS trace_refuse_once`);
    }
    const spans = await present(async () => (processSpansOf(eventId).length === 2 ? processSpansOf(eventId) : undefined), 5_000, 'two process spans');
    const receipts = receiveSpansOf(eventId);
    expect(receipts.length).toBe(1);
    const receiptId = receipts[0].spanContext().spanId;
    const [first, second] = spans;
    expect(first.attributes['payment_webhooks.attempt']).toBe(1);
    expect(second.attributes['payment_webhooks.attempt']).toBe(2);
    expect(first.status.code).toBe(2); // ERROR
    expect(first.attributes['payment_webhooks.status']).toBe('retrying');
    expect(second.attributes['payment_webhooks.status']).toBe('processed');
    expect(second.attributes['payment_webhooks.outcome']).toBe('applied');
    expect(second.spanContext().spanId).not.toBe(first.spanContext().spanId);
    expect(linksOf(first)).toEqual([receiptId]);
    expect(linksOf(second)).toEqual([receiptId]);
    expect(spanIdOf((await inboxRow(eventId)).traceContext)).toBe(receiptId);
    await eventually(async () => spansNamed(exporter, 'outbox dispatch fulfillment.dispatch').length === 1, 15_000, 'the dispatch span');
    expect(sim.shipments.length).toBe(1);
  });

  it('a payment not registered yet: each unmatched attempt links to the receipt; the reprocess after it is registered is a child of the operator action', async () => {
    const order = await d.createOrder();
    const invoiceId = uniqueId('inv');
    const { eventId, body } = bodies.paymos('invoice.paid', invoiceId);
    expect((await d.send('paymos-a', 'paymos', body, { eventId })).status).toBe(200);
    expect(await d.processed(eventId)).toMatchObject({ status: 'unmatched', outcome: 'payment_not_found' });
    const unmatched = await present(async () => (processSpansOf(eventId).length === 2 ? processSpansOf(eventId) : undefined), 5_000, 'two process spans');
    const [receipt] = receiveSpansOf(eventId);
    const receiptId = receipt.spanContext().spanId;
    expect(unmatched.map((s) => s.attributes['payment_webhooks.attempt'])).toEqual([1, 2]);
    expect(unmatched[0].spanContext().spanId).not.toBe(unmatched[1].spanContext().spanId);
    for (const s of unmatched) expect(linksOf(s)).toEqual([receiptId]);
    expect(unmatched[1].attributes['payment_webhooks.status']).toBe('unmatched');

    // Registered straight in the database (an import), so nothing released the parked delivery.
    await t.dataSource.query(
      `INSERT INTO payments (id, order_id, provider, provider_payment_id, merchant_account_id, status, amount_minor,
                             currency, refunded_minor, created_at, updated_at)
       VALUES ($1, $2, 'paymos', $3, 'acc_1', 'pending', 4990, 'EUR', 0, now(), now())`,
      [randomUUID(), order.id, invoiceId],
    );
    const row = await inboxRow(eventId);
    const res = await d.http().post(`/admin/webhook-deliveries/${row.id}/reprocess`).set(AUTH);
    expect(res.status).toBe(202);
    await eventually(async () => (await inboxRow(eventId)).status === 'processed', 15_000, 'the delivery processed');
    const all = await present(async () => (processSpansOf(eventId).length === 3 ? processSpansOf(eventId) : undefined), 5_000, 'the third process span');

    const actions = spansNamed(exporter, 'payment_webhooks reprocess');
    expect(actions.length).toBe(1);
    const [action] = actions;
    expect(action.attributes['messaging.system']).toBe('payment_webhooks');
    const reprocessed = all.filter((s) => !unmatched.some((u) => u.spanContext().spanId === s.spanContext().spanId));
    expect(reprocessed.length).toBe(1);
    const [again] = reprocessed;
    expect(again.attributes['payment_webhooks.status']).toBe('processed');
    expect(again.spanContext().traceId).toBe(action.spanContext().traceId);
    expect(parentOf(again)).toBe(action.spanContext().spanId);
    expect(linksOf(again)).toEqual([receiptId]);
    expect(spanIdOf(row.traceContext)).toBe(receiptId);
    // What the reprocess wrote is dispatched in the action's trace.
    const dispatch = await present(async () => spansNamed(exporter, 'outbox dispatch fulfillment.dispatch')[0], 15_000, 'the dispatch span');
    expect(spansNamed(exporter, 'outbox dispatch fulfillment.dispatch').length).toBe(1);
    expect(linksOf(dispatch)).toEqual([again.spanContext().spanId]);
    expect(dispatch.spanContext().traceId).toBe(action.spanContext().traceId);
    expect(sim.shipments.length).toBe(1);
  });
});

/**
 * The worker dies mid-processing (its processing transaction, holding the delivery's row, waits on
 * a lock when its database connection goes, and the app is closed): a new app takes the delivery over and its
 * processing span links to the receipt stored on the row, not to anything the dead worker held.
 */
describe('traces after the worker died mid-processing', () => {
  const sim = new CarrierSimulator();
  let raw: Client;
  const apps: TestApp[] = [];

  beforeAll(async () => {
    await sim.start();
    raw = new Client(testPgConnection());
    await raw.connect();
  });
  afterAll(async () => {
    await raw?.end();
    for (const app of apps) await app.close().catch(() => undefined);
    await sim.stop();
  });

  it("the new worker's process span links to the receipt span stored on the row", async () => {
    const first = await createTestApp({ runWorkers: true, carriers: [{ name: 'default', url: sim.url, timeoutMs: 1_000 }], tuning: { ...FAST, inboxAttempts: 5, inboxBackoffMs: 60_000 } });
    apps.push(first);
    await truncateAll(first.dataSource);
    exporter.reset();
    const d = driver(first);
    const order = await d.createOrder();
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });

    // Processing locks the delivery's row, then waits, as the statement finishing it waits on an
    // advisory lock this test holds (a trigger): the worker is mid-transaction, holding the row.
    await raw.query(`SELECT pg_advisory_lock(4242)`);
    await raw.query(`
      CREATE FUNCTION trace_hold() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_advisory_xact_lock(4242); RETURN NEW; END $$`);
    await raw.query(`
      CREATE TRIGGER trace_hold BEFORE UPDATE ON webhook_inbox FOR EACH ROW
        WHEN (NEW.event_id = '${eventId}' AND NEW.status <> 'received') EXECUTE FUNCTION trace_hold()`);
    expect((await d.send('standard-main', 'standard', body, { eventId })).status).toBe(200);
    const [row] = await first.dataSource.query(`SELECT id, trace_context AS "traceContext" FROM webhook_inbox WHERE event_id = $1`, [eventId]);
    const waiting = await present(
      async () => {
        const { rows: pids } = await raw.query<{ pid: number }>(
          `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'`,
        );
        return pids.length > 0 ? pids : undefined;
      },
      10_000,
      'the processing transaction waiting',
    );
    // The worker dies: its connection goes (its transaction rolls back), and the app is gone.
    const closing = first.close();
    for (const { pid } of waiting) await raw.query(`SELECT pg_terminate_backend($1)`, [pid]);
    await closing;
    apps.splice(apps.indexOf(first), 1);
    await raw.query(`DROP TRIGGER trace_hold ON webhook_inbox`);
    await raw.query(`DROP FUNCTION trace_hold()`);
    await raw.query(`SELECT pg_advisory_unlock(4242)`);
    const {
      rows: [left],
    } = await raw.query(`SELECT status FROM webhook_inbox WHERE id = $1`, [row.id]);
    expect(left.status).toBe('received');

    const [receipt] = receiveSpansOf(eventId);
    expect(receiveSpansOf(eventId).length).toBe(1);
    expect(spanIdOf(row.traceContext)).toBe(receipt.spanContext().spanId);
    const before = new Set(processSpansOf(eventId).map((s) => s.spanContext().spanId));

    // A new app (another queue prefix: nothing of the first's queue survives) sweeps the delivery up.
    const second = await createTestApp({ runWorkers: true, carriers: [{ name: 'default', url: sim.url, timeoutMs: 1_000 }], tuning: FAST });
    apps.push(second);
    await eventually(async () => (await driver(second).processed(eventId)).status === 'processed', 15_000, 'processed by the new app');
    const taken = await present(
      async () => {
        const fresh = processSpansOf(eventId).filter((s) => !before.has(s.spanContext().spanId));
        return fresh.length > 0 ? fresh : undefined;
      },
      5_000,
      "the new app's process span",
    );
    expect(taken.length).toBe(1);
    expect(taken[0].attributes['payment_webhooks.status']).toBe('processed');
    expect(linksOf(taken[0])).toEqual([receipt.spanContext().spanId]);
    expect(parentOf(taken[0])).toBe(receipt.spanContext().spanId);
    expect(taken[0].spanContext().traceId).toBe(receipt.spanContext().traceId);
    await eventually(async () => sim.shipments.length === 1, 15_000, 'the shipment');
  });
});
