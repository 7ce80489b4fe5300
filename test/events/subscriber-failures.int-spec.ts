import { ConflictException, Injectable } from '@nestjs/common';
import { Client } from 'pg';
import type { EntityManager } from 'typeorm';
import { OnPaymentEvent, PaymentWebhooksEvent } from '../../src';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { AUTH, eventually, TestApp } from '../support/app';
import { bodies, uniqueId } from '../support/domain';
import { testPgConnection } from '../support/env';
import { Calls, driver, eventMessages, outboxSettled, useEventsApp } from './support';

/**
 * CONTRACT §7, when a subscriber throws. After the commit: its message is retried with the carrier
 * backoff up to EVENT_MAX_ATTEMPTS, then dead and retryable in /admin/outbox; one subscriber
 * failing never re-runs another. In the transaction: the change rolls back with what the
 * subscriber wrote; a webhook is retried like any failed attempt, an API action answers 500.
 */

interface OutboxItem {
  id: string;
  type: string;
  idempotencyKey: string;
  status: string;
  attempts: number;
  lastError: string | null;
}

const MAX_ATTEMPTS = 3;

const flaky = new Calls();
const flakyAt: number[] = [];
const broken = new Calls();
const steady = new Calls();
let brokenHealed = false;

/** Throws at its first two calls for each event, then succeeds. */
@Injectable()
class Flaky {
  @OnPaymentEvent('order.paid')
  onPaid(event: PaymentWebhooksEvent): void {
    flaky.push(event);
    flakyAt.push(Date.now());
    if (flaky.withId(event.id).length <= 2) throw new Error(`flaky call ${flaky.withId(event.id).length}`);
  }
}

/** Throws until the test heals it. */
@Injectable()
class Broken {
  @OnPaymentEvent('order.paid')
  async onPaid(event: PaymentWebhooksEvent): Promise<void> {
    broken.push(event);
    if (!brokenHealed) throw new Error('licence server down');
  }
}

/** Never fails: it must hear each event exactly once whatever the others do. */
@Injectable()
class Steady {
  @OnPaymentEvent(['payment.succeeded', 'order.paid'])
  onEvent(event: PaymentWebhooksEvent): void {
    steady.push(event);
  }
}

describe('§7 after-commit subscribers that throw (workers on, EVENT_MAX_ATTEMPTS 3, fast backoff)', () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  useEventsApp(
    sim,
    () => ({ eventMaxAttempts: MAX_ATTEMPTS, tuning: { inboxBackoffMs: 50, carrierBackoffBaseMs: 20, carrierBackoffCapMs: 100 } }),
    [Flaky, Broken, Steady],
    (app) => {
      t = app;
      d = driver(app);
    },
  );

  const outbox = async (status: string): Promise<OutboxItem[]> => {
    const res = await d.http().get(`/admin/outbox?status=${status}&limit=100`).set(AUTH);
    expect(res.status).toBe(200);
    return res.body.items;
  };

  async function paidOrder(): Promise<{ orderId: string; sourceEventId: string }> {
    const order = await d.createOrder();
    const paid = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    await d.send('standard-main', 'standard', paid.body, { eventId: paid.eventId });
    expect(await d.processed(paid.eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    return { orderId: order.id, sourceEventId: paid.eventId };
  }

  it('throws twice then succeeds: the same event id three times, its message dispatched after 3 attempts, with the backoff between', async () => {
    brokenHealed = true;
    const { orderId } = await paidOrder();
    await outboxSettled(t);
    const [event] = flaky.of(orderId);
    expect(event.type).toBe('order.paid');
    const calls = flaky.of(orderId);
    expect(calls.map((e) => e.id)).toEqual([event.id, event.id, event.id]);
    expect(calls).toEqual([event, event, event]);
    // The carrier backoff of §5: attempt n waits at least base·2^(n−1) (20 ms, then 40 ms).
    const at = flakyAt.slice(-3);
    expect(at[1] - at[0]).toBeGreaterThanOrEqual(20);
    expect(at[2] - at[1]).toBeGreaterThanOrEqual(40);

    const dispatched = await outbox('dispatched');
    const message = dispatched.find((m) => m.idempotencyKey === `${event.id}:Flaky.onPaid`);
    expect(message).toMatchObject({ type: 'event.order.paid', status: 'dispatched', attempts: 3, lastError: null });
    // The others heard it once.
    expect(steady.of(orderId).map((e) => e.type)).toEqual(['payment.succeeded', 'order.paid']);
    expect(broken.of(orderId).length).toBe(1);
  });

  it(`always throws: dead after exactly ${MAX_ATTEMPTS} attempts, listed dead, retried (202) it runs again and succeeds; the others never re-run`, async () => {
    brokenHealed = false;
    const { orderId } = await paidOrder();
    await outboxSettled(t);
    const [event] = broken.of(orderId);
    expect(broken.of(orderId).map((e) => e.id)).toEqual(Array(MAX_ATTEMPTS).fill(event.id));

    const dead = await outbox('dead');
    expect(dead.length).toBe(1);
    expect(dead[0]).toMatchObject({ type: 'event.order.paid', idempotencyKey: `${event.id}:Broken.onPaid`, status: 'dead', attempts: MAX_ATTEMPTS });
    expect(dead[0].lastError).toContain('Broken.onPaid threw: licence server down');
    expect(dead[0].lastError).toContain(`after ${MAX_ATTEMPTS} attempts`);
    // Every other message of the order was delivered once: Steady twice (two events), Flaky's after its retries.
    const messages = await eventMessages(t, orderId);
    expect(messages.map((m) => [m.subscriber, m.type, m.status]).sort()).toEqual(
      [
        ['Broken.onPaid', 'event.order.paid', 'dead'],
        ['Flaky.onPaid', 'event.order.paid', 'dispatched'],
        ['Steady.onEvent', 'event.order.paid', 'dispatched'],
        ['Steady.onEvent', 'event.payment.succeeded', 'dispatched'],
      ].sort(),
    );

    brokenHealed = true;
    const retried = await d.http().post(`/admin/outbox/${dead[0].id}/retry`).set(AUTH);
    expect(retried.status).toBe(202);
    await eventually(async () => (await outbox('dispatched')).some((m) => m.id === dead[0].id), 10_000, 'the retried message dispatched');
    await outboxSettled(t);
    expect(broken.of(orderId).map((e) => e.id)).toEqual(Array(MAX_ATTEMPTS + 1).fill(event.id));
    expect((await outbox('dispatched')).find((m) => m.id === dead[0].id)).toMatchObject({ attempts: 1, lastError: null });
    expect(await outbox('dead')).toEqual([]);
    // Nobody else was called again: once per event.
    expect(steady.of(orderId).map((e) => e.type)).toEqual(['payment.succeeded', 'order.paid']);
    expect(new Set(steady.of(orderId).map((e) => e.id)).size).toBe(2);
    expect(flaky.of(orderId).length).toBe(3);
  });
});

/** What the in-transaction subscriber does at its nth call for an order. */
type Plan = (call: number, em: EntityManager) => Promise<void> | void;
const plans = new Map<string, Plan>();
const grantCalls = new Map<string, number>();
const paidHeard = new Calls();
const shipPlans = new Map<string, Plan>();
const shipCalls = new Map<string, number>();
const shippedHeard = new Calls();

/** Grants a licence in the transaction that makes the order paid: one row in a table of the host's. */
@Injectable()
class Licences {
  @OnPaymentEvent('order.paid', { inTransaction: true })
  async grant(event: PaymentWebhooksEvent, em: EntityManager): Promise<void> {
    const orderId = event.data.order.id;
    const call = (grantCalls.get(orderId) ?? 0) + 1;
    grantCalls.set(orderId, call);
    await em.query(`INSERT INTO public.grants (event_id, order_id, kind) VALUES ($1, $2, 'licence')`, [event.id, orderId]);
    await plans.get(orderId)?.(call, em);
  }

  @OnPaymentEvent('order.paid')
  heard(event: PaymentWebhooksEvent): void {
    paidHeard.push(event);
  }

  /** Records the shipment in the transaction that makes the order fulfilled. */
  @OnPaymentEvent('order.fulfilled', { inTransaction: true })
  async shipped(event: PaymentWebhooksEvent, em: EntityManager): Promise<void> {
    const orderId = event.data.order.id;
    const call = (shipCalls.get(orderId) ?? 0) + 1;
    shipCalls.set(orderId, call);
    await em.query(`INSERT INTO public.grants (event_id, order_id, kind) VALUES ($1, $2, 'shipment')`, [event.id, orderId]);
    await shipPlans.get(orderId)?.(call, em);
  }

  @OnPaymentEvent('order.fulfilled')
  heardShipped(event: PaymentWebhooksEvent): void {
    shippedHeard.push(event);
  }
}

describe('§7 an in-transaction subscriber that throws (workers on)', () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  let raw: Client;

  beforeAll(async () => {
    raw = new Client(testPgConnection());
    await raw.connect();
    await raw.query(`CREATE TABLE IF NOT EXISTS public.grants (event_id uuid PRIMARY KEY, order_id uuid NOT NULL, kind text NOT NULL)`);
  });
  afterAll(async () => {
    await raw.query(`DROP TABLE IF EXISTS public.grants`);
    await raw.end();
  });

  // Recordings one at a time: two attempts recorded together in one transaction are recorded again
  // one by one when it fails, which calls a throwing in-transaction subscriber twice for one carrier
  // call, and the carrier calls below are counted exactly.
  useEventsApp(sim, () => ({ tuning: { inboxAttempts: 10, inboxBackoffMs: 50, processingBatchSize: 1 } }), [Licences], (app) => {
    t = app;
    d = driver(app);
  });

  /** The rows the subscribers committed for an order: licences (order.paid) or shipments (order.fulfilled). */
  const grantsOf = async (orderId: string, kind = 'licence') =>
    (await raw.query(`SELECT event_id AS "eventId" FROM public.grants WHERE order_id = $1 AND kind = $2`, [orderId, kind])).rows as Array<{ eventId: string }>;
  const count = (sql: string, params: unknown[] = []) => d.count(sql, params);

  /** Nothing of the change is there: the order unpaid, no fulfillment, no outbox message, no grant. */
  async function expectNothingChanged(orderId: string): Promise<void> {
    const view = await d.getOrder(orderId);
    expect(view.status).toBe('awaiting_payment');
    expect(view.fulfillment).toBeNull();
    expect(await count(`SELECT 1 FROM fulfillments WHERE order_id = $1`, [orderId])).toBe(0);
    expect(await count(`SELECT 1 FROM outbox_message`)).toBe(0);
    expect(await grantsOf(orderId)).toEqual([]);
  }

  it('a webhook: rolled back with its row while the subscriber throws, retried; then exactly one row, paid once, one shipment', async () => {
    const order = await d.createOrder();
    let letGo!: () => void;
    const gate = new Promise<void>((r) => (letGo = r));
    let third!: () => void;
    const thirdStarted = new Promise<void>((r) => (third = r));
    plans.set(order.id, async (call) => {
      if (call <= 2) throw new Error(`licence store refused (call ${call})`);
      // The third call: its row is written but not committed until the test lets it go.
      third();
      await gate;
    });
    const paid = bodies.paymos('invoice.paid', uniqueId('inv'), { orderId: order.id });
    expect((await d.send('paymos-a', 'paymos', paid.body, { eventId: paid.eventId })).status).toBe(200);
    try {
      await thirdStarted;
      // Two attempts rolled back, the third still open: nothing of the change is visible.
      await expectNothingChanged(order.id);
      const [row] = await t.dataSource.query(`SELECT status, attempts, last_error AS "lastError" FROM webhook_inbox WHERE event_id = $1`, [paid.eventId]);
      expect(row).toMatchObject({ status: 'received', attempts: 2 });
      expect(row.lastError).toContain('licence store refused (call 2)');
    } finally {
      letGo();
    }
    expect(await d.processed(paid.eventId)).toMatchObject({ status: 'processed', outcome: 'applied', attempts: 3 });
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, 'the order fulfilled');
    await outboxSettled(t);

    expect(grantCalls.get(order.id)).toBe(3);
    const heard = paidHeard.of(order.id);
    expect(heard.length).toBe(1);
    expect(await grantsOf(order.id)).toEqual([{ eventId: heard[0].id }]);
    expect(sim.shipments.filter((s) => s.orderId === order.id).length).toBe(1);
    expect(await count(`SELECT 1 FROM fulfillments WHERE order_id = $1`, [order.id])).toBe(1);
    expect((await eventMessages(t, order.id)).map((m) => [m.type, m.subscriber])).toEqual([
      ['event.order.paid', 'Licences.heard'],
      ['event.order.fulfilled', 'Licences.heardShipped'],
    ]);
    expect(await count(`SELECT 1 FROM payments WHERE order_id = $1`, [order.id])).toBe(1);
  });

  it("order.fulfilled's subscriber throws twice: the shipment's recording rolls back and is retried (the carrier replays the same key); then fulfilled once, one row", async () => {
    const order = await d.createOrder();
    shipPlans.set(order.id, (call) => {
      if (call <= 2) throw new Error(`shipping log refused (call ${call})`);
    });
    expect((await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'wire transfer' })).status).toBe(200);
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, 'the order fulfilled');
    await outboxSettled(t);

    expect(shipCalls.get(order.id)).toBe(3);
    // One shipment: the carrier was asked again under the same Idempotency-Key after each rollback.
    expect(sim.shipments.filter((s) => s.orderId === order.id).length).toBe(1);
    expect(sim.calls.map((c) => c.result)).toEqual(['created', 'replayed', 'replayed']);
    const heard = shippedHeard.of(order.id);
    expect(heard.length).toBe(1);
    expect(await grantsOf(order.id, 'shipment')).toEqual([{ eventId: heard[0].id }]);
    expect(await grantsOf(order.id, 'licence')).toEqual([{ eventId: paidHeard.of(order.id)[0].id }]);
    const [dispatch] = await t.dataSource.query(`SELECT status, attempts FROM outbox_message WHERE type = 'fulfillment.dispatch' AND payload->>'orderId' = $1`, [order.id]);
    expect(dispatch).toEqual({ status: 'dispatched', attempts: 3 });
  });

  it.each([
    ['an Error', () => Promise.reject(new Error('licence store refused'))],
    ['an HttpException of its own', () => Promise.reject(new ConflictException('licence already granted'))],
    [
      'a PostgreSQL data error from its own write',
      // invalid input syntax for type uuid (SQLSTATE 22P02): the host's error, not the request's.
      (em: EntityManager) => em.query(`SELECT 'not-a-uuid'::uuid`),
    ],
  ] as Array<[string, (em: EntityManager) => Promise<unknown>]>)(
    'mark-paid whose subscriber throws %s: 500 {"error":"internal_error"}, nothing changed; once it stops, paid with one row',
    async (_what, fail) => {
      const order = await d.createOrder();
      let failing = true;
      plans.set(order.id, async (_call, em) => {
        if (failing) await fail(em);
      });
      const res = await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'wire transfer' });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: 'internal_error' });
      await expectNothingChanged(order.id);

      failing = false;
      const again = await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'wire transfer' });
      expect(again.status).toBe(200);
      expect(again.body.status).toBe('paid');
      await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, 'the order fulfilled');
      await outboxSettled(t);
      const heard = paidHeard.of(order.id);
      expect(heard.length).toBe(1);
      expect(await grantsOf(order.id)).toEqual([{ eventId: heard[0].id }]);
      expect(sim.shipments.filter((s) => s.orderId === order.id).length).toBe(1);
    },
  );
});
