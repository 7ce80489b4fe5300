import { randomUUID } from 'node:crypto';
import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { context, trace } from '@opentelemetry/api';
import { Observable } from 'rxjs';
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
 * Across attempts: every processing attempt of a delivery (a retry after a failure, an operator's
 * reprocess, a new worker after the old one died) is a span of its own that links to the same
 * receipt span, the one whose context is stored on the inbox row.
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
 * What a host's HTTP instrumentation does for a request, for the requests that ask for it (header
 * `x-test-server-span`): the handler runs with a server span active, `test request <path>`. The
 * module's own spans would take it as their parent wherever it is (still) the active span.
 */
@Injectable()
class TestServerSpan implements NestInterceptor {
  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = ctx.switchToHttp().getRequest<{ headers: Record<string, unknown>; url: string }>();
    if (!req.headers['x-test-server-span']) return next.handle();
    const span = trace.getTracer('test').startSpan(`test request ${req.url.split('?')[0]}`);
    return new Observable((subscriber) => {
      const subscription = context.with(trace.setSpan(context.active(), span), () =>
        next.handle().subscribe({
          next: (v) => subscriber.next(v),
          error: (err) => {
            span.end();
            subscriber.error(err);
          },
          complete: () => {
            span.end();
            subscriber.complete();
          },
        }),
      );
      return () => subscription.unsubscribe();
    });
  }
}
const SERVER_SPAN = { 'x-test-server-span': '1' };

/**
 * What asks for a run again decides its parent: an operator's retry of a dead outbox message is the
 * parent of the dispatch it asks for (the job's data carries its `traceparent`), which still links
 * to the span that wrote the message; a parked delivery released by a payment registration stays in
 * its delivery's trace, under its receipt, whatever request registered the payment.
 */
describe("traces of what an operator's retry or a registration asks for (workers on, carrier simulator)", () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    await sim.start();
    t = await createTestApp(
      {
        runWorkers: true,
        carriers: [{ name: 'default', url: sim.url, timeoutMs: 1_000 }],
        // The sweepers wait their default 5 s: a retried message is enqueued by the retry itself (with
        // its trace), not found first by a sweep that would enqueue it without one.
        tuning: { ...FAST, sweepAfterMs: 5_000, inboxAttempts: 2 },
      },
      { providers: [{ provide: APP_INTERCEPTOR, useClass: TestServerSpan }] },
    );
    d = driver(t);
  });
  afterAll(async () => {
    await t?.close();
    await sim.stop();
  });
  beforeEach(async () => {
    await truncateAll(t.dataSource);
    sim.reset();
    exporter.reset();
  });

  const messageOf = async (orderId: string) =>
    (await t.dataSource.query(`SELECT id, status, attempts, trace_context AS "traceContext" FROM outbox_message WHERE payload->>'orderId' = $1`, [orderId]))[0];
  const inboxRowOf = async (eventId: string) => (await t.dataSource.query(`SELECT status FROM webhook_inbox WHERE event_id = $1`, [eventId]))[0];
  const dispatchSpansOf = (messageId: string) =>
    spansWith(exporter, 'messaging.message.id', messageId).filter((s) => s.name === 'outbox dispatch fulfillment.dispatch');

  it("a dead fulfillment dispatch retried by an operator: the new dispatch span is the retry span's child, linked to the processing that wrote the message", async () => {
    // The carrier rejects the first call (400): the message is dead after one attempt.
    sim.fault('reject', 1);
    const order = await d.createOrder();
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    expect((await d.send('standard-main', 'standard', body, { eventId })).status).toBe(200);
    expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    await eventually(async () => (await messageOf(order.id))?.status === 'dead', 10_000, 'a dead message');
    const message = await messageOf(order.id);
    const [deadDispatch] = await present(async () => (dispatchSpansOf(message.id).length === 1 ? dispatchSpansOf(message.id) : undefined), 5_000, 'the dead dispatch span');
    const processing = processSpansOf(eventId);
    expect(processing.length).toBe(1);
    const writerId = processing[0].spanContext().spanId;
    expect(spanIdOf(message.traceContext)).toBe(writerId);
    expect(deadDispatch.attributes['payment_webhooks.outcome']).toBe('dead');
    expect(deadDispatch.status.code).toBe(2); // ERROR
    expect(parentOf(deadDispatch)).toBe(writerId);
    expect(linksOf(deadDispatch)).toEqual([writerId]);

    // The retry, under a server span of its own (as a host's HTTP instrumentation has it).
    const res = await d.http().post(`/admin/outbox/${message.id}/retry`).set(AUTH).set(SERVER_SPAN);
    expect(res.status).toBe(202);
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, 'the order fulfilled');
    const spans = await present(async () => (dispatchSpansOf(message.id).length === 2 ? dispatchSpansOf(message.id) : undefined), 5_000, 'the retried dispatch span');
    const [retried] = spans.filter((s) => s.spanContext().spanId !== deadDispatch.spanContext().spanId);

    const actions = spansNamed(exporter, 'payment_webhooks retry');
    expect(actions.length).toBe(1);
    const [action] = actions;
    const [request] = spansNamed(exporter, `test request /admin/outbox/${message.id}/retry`);
    expect(parentOf(action)).toBe(request.spanContext().spanId);
    expect(retried.attributes['payment_webhooks.outcome']).toBe('dispatched');
    expect(retried.attributes['payment_webhooks.attempt']).toBe(1); // a fresh budget
    expect(parentOf(retried)).toBe(action.spanContext().spanId);
    expect(retried.spanContext().traceId).toBe(action.spanContext().traceId);
    expect(linksOf(retried)).toEqual([writerId]);
    // The message's stored context is still its writer's, and the carrier saw the retried dispatch's.
    expect(spanIdOf((await messageOf(order.id)).traceContext)).toBe(writerId);
    expect(sim.calls.map((c) => c.result)).toEqual(['reject', 'created']);
    expect(sim.calls[1].traceparent).toBe(`00-${action.spanContext().traceId}-${retried.spanContext().spanId}-01`);
  });

  it("a parked delivery released by a payment registration: its next process span is the receipt's child, in the receipt's trace, not the registration request's", async () => {
    const order = await d.createOrder();
    const invoiceId = uniqueId('inv');
    const { eventId, body } = bodies.paymos('invoice.paid', invoiceId);
    expect((await d.send('paymos-a', 'paymos', body, { eventId })).status).toBe(200);
    expect(await d.processed(eventId)).toMatchObject({ status: 'unmatched', outcome: 'payment_not_found' });
    const parked = await present(async () => (processSpansOf(eventId).length === 2 ? processSpansOf(eventId) : undefined), 5_000, 'two process spans');
    const receipts = receiveSpansOf(eventId);
    expect(receipts.length).toBe(1);
    const [receipt] = receipts;
    const receiptId = receipt.spanContext().spanId;
    expect(parked[1].attributes['payment_webhooks.status']).toBe('unmatched');

    // The registration, under a server span of its own (as a host's HTTP instrumentation has it).
    const registered = await d.http().post(`/orders/${order.id}/payments`).set(AUTH).set(SERVER_SPAN).send({ provider: 'paymos', providerPaymentId: invoiceId, merchantAccountId: 'acc_1' });
    expect(registered.status).toBe(201);
    const requests = spansNamed(exporter, `test request /orders/${order.id}/payments`);
    expect(requests.length).toBe(1);
    const [request] = requests;
    await eventually(async () => (await inboxRowOf(eventId)).status === 'processed', 15_000, 'the released delivery processed');
    const all = await present(async () => (processSpansOf(eventId).length === 3 ? processSpansOf(eventId) : undefined), 5_000, 'the third process span');
    const released = all.filter((s) => !parked.some((p) => p.spanContext().spanId === s.spanContext().spanId));
    expect(released.length).toBe(1);
    const [again] = released;
    expect(again.attributes['payment_webhooks.status']).toBe('processed');
    expect(again.attributes['payment_webhooks.outcome']).toBe('applied');
    expect(parentOf(again)).toBe(receiptId);
    expect(again.spanContext().traceId).toBe(receipt.spanContext().traceId);
    expect(again.spanContext().traceId).not.toBe(request.spanContext().traceId);
    expect(linksOf(again)).toEqual([receiptId]);
    // No operator action was involved, and what the run wrote is dispatched in the delivery's trace.
    expect(spansNamed(exporter, 'payment_webhooks *')).toEqual([]);
    const dispatch = await present(async () => spansNamed(exporter, 'outbox dispatch fulfillment.dispatch')[0], 15_000, 'the dispatch span');
    expect(spansNamed(exporter, 'outbox dispatch fulfillment.dispatch').length).toBe(1);
    expect(parentOf(dispatch)).toBe(again.spanContext().spanId);
    expect(dispatch.spanContext().traceId).toBe(receipt.spanContext().traceId);
    await eventually(async () => sim.shipments.length === 1, 15_000, 'the shipment');
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
