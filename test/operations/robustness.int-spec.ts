import { getQueueToken } from '@nestjs/bullmq';
import { QueueName } from '../../src/jobs/queues';
import type { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { DeliveryProcessingService } from '../../src/webhooks/delivery-processing.service';

import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { useCarrierSimulator } from '../support/carrier-suite';
import { AUTH, createTestApp, eventually, secretOf, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { TcpProxy } from '../support/tcp-proxy';

const UNSTORABLE_MESSAGE = 'must not contain NUL characters or unpaired surrogates';
const unstorable = (field: string) => ({ error: 'validation_failed', details: [{ field, message: UNSTORABLE_MESSAGE }] });

const SHIP_TO = { name: 'Ada Lovelace', line1: '12 Analytical Row', city: 'London', postalCode: 'N1 9GU', country: 'GB' };
const orderBody = (extra: Record<string, unknown> = {}) => ({
  amount: '49.90',
  currency: 'EUR',
  shipTo: SHIP_TO,
  items: [{ sku: 'SKU-1', quantity: 1 }],
  ...extra,
});

describe('input PostgreSQL cannot store is 400 validation_failed, never 500', () => {
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    t = await createTestApp();
    d = driver(t);
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  it('POST /orders with a NUL in shipTo.name', async () => {
    const res = await d.http().post('/orders').set(AUTH).send(orderBody({ shipTo: { ...SHIP_TO, name: 'Ada\u0000Lovelace' } }));
    expect(res.status).toBe(400);
    expect(res.body).toEqual(unstorable('shipTo.name'));
    expect(await d.count(`SELECT 1 FROM orders`)).toBe(0);
  });

  it('POST /orders with an unpaired high surrogate in reference', async () => {
    const res = await d.http().post('/orders').set(AUTH).send(orderBody({ reference: 'ORD-\ud800-1' }));
    expect(res.status).toBe(400);
    expect(res.body).toEqual(unstorable('reference'));
    expect(await d.count(`SELECT 1 FROM orders`)).toBe(0);
  });

  it('POST /orders with an unpaired low surrogate in an item sku', async () => {
    const res = await d
      .http()
      .post('/orders')
      .set(AUTH)
      .send(orderBody({ items: [{ sku: 'SKU-1', quantity: 1 }, { sku: 'SKU-\udc00', quantity: 1 }] }));
    expect(res.status).toBe(400);
    expect(res.body).toEqual(unstorable('items[1].sku'));
  });

  it('a paired surrogate (an emoji) is stored as it is', async () => {
    const res = await d.http().post('/orders').set(AUTH).send(orderBody({ reference: 'ORD-\ud83d\ude00' }));
    expect(res.status).toBe(201);
    expect(res.body.reference).toBe('ORD-😀');
  });

  it('POST /orders/{id}/mark-paid with a NUL in reason', async () => {
    const order = await d.createOrder();
    const res = await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'bank transfer\u0000' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(unstorable('reason'));
    expect((await d.getOrder(order.id)).status).toBe('awaiting_payment');
  });

  it('GET /payments?providerPaymentId=%00', async () => {
    const res = await d.http().get('/payments?providerPaymentId=%00').set(AUTH);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(unstorable('providerPaymentId'));
  });

  it('GET /admin/webhook-deliveries?eventId=%00', async () => {
    const res = await d.http().get('/admin/webhook-deliveries?eventId=%00').set(AUTH);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(unstorable('eventId'));
  });

  it('POST /admin/reconciliation with a NUL in eventIds', async () => {
    const res = await d
      .http()
      .post('/admin/reconciliation')
      .set(AUTH)
      .send({ provider: 'stripe', merchantAccountId: 'acct_1', eventIds: ['evt_ok', 'evt_\u0000'] });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(unstorable('eventIds[1]'));
  });
});

describe('/Webhooks/ in another case still reaches the webhook route with its raw bytes', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  it('POST /Webhooks/paymos-a, JSON body without a signature: 401 missing_signature', async () => {
    const body = JSON.stringify({ event_id: uniqueId('evt'), type: 'invoice.paid', data: { id: 'inv_case' } });
    const res = await request(t.app.getHttpServer())
      .post('/Webhooks/paymos-a')
      .set('content-type', 'application/json')
      .send(body);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'missing_signature' });
  });

  it('POST /Webhooks/paymos-a with a valid signature: 200 accepted, recorded', async () => {
    const eventId = uniqueId('evt');
    const body = JSON.stringify({ event_id: eventId, type: 'invoice.paid', data: { id: 'inv_case' } });
    const res = await request(t.app.getHttpServer())
      .post('/Webhooks/paymos-a')
      .set(signedHeaders('paymos', secretOf('paymos-a'), body, { eventId }))
      .send(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId });
    const rows = await t.dataSource.query(`SELECT endpoint_id AS "endpointId", body FROM webhook_inbox WHERE event_id = $1`, [eventId]);
    expect(rows).toEqual([{ endpointId: 'paymos-a', body }]);
  });
});

describe('a refunded order is not shipped again, and a call that may have shipped it is named', () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  useCarrierSimulator(
    sim,
    (url) => ({
      carriers: [{ name: 'default', url, timeoutMs: 300 }],
      carrierMaxAttempts: 50,
      tuning: { carrierBackoffBaseMs: 200, carrierBackoffCapMs: 400, sweepIntervalMs: 200, sweepAfterMs: 100 },
    }),
    (app) => {
      t = app;
      d = driver(app);
    },
  );

  it('a full refund while the shipment is being retried: the message goes dead, the carrier is never asked again', async () => {
    sim.fault('fail', 100);

    const order = await d.createOrder();
    const paymentId = uniqueId('pay');
    const paid = bodies.standard('payment.succeeded', paymentId, { orderId: order.id });
    expect((await d.send('standard-main', 'standard', paid.body, { eventId: paid.eventId })).status).toBe(200);
    expect((await d.processed(paid.eventId)).outcome).toBe('applied');
    await eventually(async () => sim.calls.some((c) => c.result === 'fail'), 15_000, 'a failed carrier call');

    const refund = bodies.standard('payment.refunded', paymentId, { orderId: order.id, refunded: 4990 });
    expect((await d.send('standard-main', 'standard', refund.body, { eventId: refund.eventId })).status).toBe(200);
    expect((await d.processed(refund.eventId)).outcome).toBe('applied');
    expect((await d.getOrder(order.id)).status).toBe('refunded');

    sim.reset(); // the carrier would now accept the shipment
    const message = await eventually(
      async () => {
        const [row] = await t.dataSource.query(
          `SELECT status, last_error AS "lastError" FROM outbox_message WHERE payload->>'orderId' = $1`,
          [order.id],
        );
        return row?.status === 'dead' ? row : undefined;
      },
      15_000,
      'the outbox message to be dead',
    );
    expect(message).toEqual({ status: 'dead', lastError: 'order refunded' });
    expect(sim.shipments).toHaveLength(0);
    expect(sim.calls.filter((c) => c.result === 'created')).toHaveLength(0);
    const view = await d.getOrder(order.id);
    expect(view.status).toBe('refunded');
    expect(view.fulfillment).toMatchObject({ shipmentId: null });
    expect(view.fulfillment.status).not.toBe('dispatched');
  });

  it('a full refund while the message is already dead: an operator retry later never ships the refunded order', async () => {
    sim.fault('reject', 1); // the carrier refuses the address: the message is dead at once

    const order = await d.createOrder();
    const paymentId = uniqueId('pay');
    const paid = bodies.standard('payment.succeeded', paymentId, { orderId: order.id });
    expect((await d.send('standard-main', 'standard', paid.body, { eventId: paid.eventId })).status).toBe(200);
    const messageOf = async () =>
      (
        await t.dataSource.query(`SELECT id, status, last_error AS "lastError" FROM outbox_message WHERE payload->>'orderId' = $1`, [
          order.id,
        ])
      )[0];
    await eventually(async () => (await messageOf())?.status === 'dead', 15_000, 'a dead message');

    const refund = bodies.standard('payment.refunded', paymentId, { orderId: order.id, refunded: 4990 });
    expect((await d.send('standard-main', 'standard', refund.body, { eventId: refund.eventId })).status).toBe(200);
    expect((await d.processed(refund.eventId)).outcome).toBe('applied');
    expect((await d.getOrder(order.id)).status).toBe('refunded');

    // The carrier would now accept it; an operator retries the dead message without looking.
    const { id } = await messageOf();
    expect((await d.http().post(`/admin/outbox/${id}/retry`).set(AUTH)).status).toBe(202);
    await eventually(async () => (await messageOf())?.lastError === 'order refunded', 15_000, 'the retried message dead again');
    expect((await messageOf()).status).toBe('dead');
    expect(sim.shipments).toHaveLength(0);
    expect(sim.calls.map((c) => c.result)).toEqual(['reject']);
  });

  it('a full refund after a carrier call that got no answer: dead, naming the call that may have shipped', async () => {
    sim.fault('hang', 100); // the carrier takes the shipment and never answers

    const order = await d.createOrder();
    const paymentId = uniqueId('pay');
    const paid = bodies.standard('payment.succeeded', paymentId, { orderId: order.id });
    expect((await d.send('standard-main', 'standard', paid.body, { eventId: paid.eventId })).status).toBe(200);
    expect((await d.processed(paid.eventId)).outcome).toBe('applied');
    await eventually(async () => sim.calls.some((c) => c.result === 'hang'), 15_000, 'a carrier call left unanswered');

    const refund = bodies.standard('payment.refunded', paymentId, { orderId: order.id, refunded: 4990 });
    expect((await d.send('standard-main', 'standard', refund.body, { eventId: refund.eventId })).status).toBe(200);
    expect((await d.processed(refund.eventId)).outcome).toBe('applied');

    const message = await eventually(
      async () => {
        const [row] = await t.dataSource.query(
          `SELECT status, last_error AS "lastError", payload->>'fulfillmentId' AS "fulfillmentId"
             FROM outbox_message WHERE payload->>'orderId' = $1`,
          [order.id],
        );
        return row?.status === 'dead' ? row : undefined;
      },
      15_000,
      'the outbox message to be dead',
    );
    expect(message.lastError).toBe(
      `order refunded after a carrier call began that may have shipped (Idempotency-Key ${message.fulfillmentId}): confirm with the carrier`,
    );
    // It did: the simulator created one shipment under that key, and no call was ever answered.
    expect(sim.calls.every((c) => c.result === 'hang')).toBe(true);
    expect(sim.shipments).toHaveLength(1);
    const view = await d.getOrder(order.id);
    expect(view.status).toBe('refunded');
    expect(view.fulfillment).toMatchObject({ status: 'failed', shipmentId: null });
  });
});

describe('/metrics while the database is away', () => {
  const proxy = new TcpProxy('127.0.0.1', Number(new URL(TEST_DATABASE_URL).port || 5432));
  let t: TestApp;

  beforeAll(async () => {
    await proxy.up();
    t = await createTestApp({ databaseUrl: proxy.urlFor(TEST_DATABASE_URL) });
  });
  afterAll(async () => {
    await proxy.up();
    await t?.close();
    await proxy.down();
  });

  const GAUGES = ['pw_inbox_backlog', 'pw_inbox_oldest_unprocessed_age_seconds', 'pw_outbox_backlog', 'pw_outbox_dead'];
  const gauge = (text: string, name: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line?.slice(name.length + 1);
  };
  const scrape = () => request(t.app.getHttpServer()).get('/metrics').set(AUTH);

  it('answers 200 with the backlog gauges NaN, and numbers again once the database is back', async () => {
    await truncateAll(t.dataSource);
    const before = await scrape();
    expect(before.status).toBe(200);
    expect(GAUGES.map((g) => gauge(before.text, g))).toEqual(['0', '0', '0', '0']);

    await proxy.down();
    let away;
    try {
      away = await scrape();
    } finally {
      await proxy.up();
    }
    expect(away.status).toBe(200);
    expect(away.headers['content-type']).toMatch(/^text\/plain/);
    // prom-client writes NaN as `Nan` (Prometheus parses it case-insensitively).
    expect(GAUGES.map((g) => gauge(away.text, g))).toEqual(['Nan', 'Nan', 'Nan', 'Nan']);
    // The rest of the exposition is still there.
    expect(away.text).toContain('# TYPE pw_webhook_deliveries_total counter');

    const back = await eventually(
      async () => {
        const res = await scrape();
        return res.status === 200 && gauge(res.text, 'pw_inbox_backlog') === '0' ? res.text : '';
      },
      10_000,
      'the gauges once the database is back',
    );
    expect(GAUGES.map((g) => gauge(back, g))).toEqual(['0', '0', '0', '0']);
  });
});

describe('reprocess while Redis is away', () => {
  const proxy = new TcpProxy('127.0.0.1', Number(new URL(TEST_REDIS_URL).port || 6379));
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    await proxy.up();
    t = await createTestApp({ redisUrl: proxy.urlFor(TEST_REDIS_URL) });
    d = driver(t);
  });
  afterAll(async () => {
    await proxy.up();
    // The receive path's producer connection (offline queue off) must have reconnected before the
    // app closes: closed mid-reconnect, it keeps reconnecting for ever (BullMQ ends it with QUIT,
    // which fails while it is down) and the process never exits. A delivery whose job appears in
    // Redis shows it is back.
    if (t) {
      const queue = t.get<Queue>(getQueueToken(QueueName.Inbox));
      await eventually(
        async () => {
          const { eventId, body } = bodies.paymos('invoice.paid', 'inv_probe');
          if ((await d.send('paymos-a', 'paymos', body, { eventId })).status !== 200) return false;
          const [row] = await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [eventId]);
          return Boolean(row && (await queue.getJob(row.id).catch(() => undefined)));
        },
        15_000,
        'the receive path to enqueue again',
      ).catch(() => undefined);
    }
    await t?.close();
    await proxy.down();
  });

  it('POST /admin/webhook-deliveries/{id}/reprocess answers 202 within 3 s; the row is received again', async () => {
    await truncateAll(t.dataSource);
    const { eventId, body } = bodies.stripe('payment_intent.succeeded', uniqueId('pi'));
    expect((await d.send('stripe-main', 'stripe', body)).status).toBe(200);
    const [{ id }] = await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [eventId]);
    // Parked: a final status that reprocess puts back to `received`.
    expect(await t.get(DeliveryProcessingService).process(id, true)).toEqual({ status: 'unmatched', outcome: 'payment_not_found' });

    await proxy.down();
    const started = Date.now();
    let res;
    let elapsed;
    try {
      res = await d.http().post(`/admin/webhook-deliveries/${id}/reprocess`).set(AUTH).timeout(10_000);
      elapsed = Date.now() - started;
    } finally {
      await proxy.up();
    }
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ status: 'queued' });
    expect(elapsed).toBeLessThan(3_000);
    const [row] = await t.dataSource.query(`SELECT status, outcome FROM webhook_inbox WHERE id = $1`, [id]);
    expect(row).toEqual({ status: 'received', outcome: null });
  });

  it('an unknown delivery is still 404 (the bound does not hide the database answer)', async () => {
    const res = await d.http().post(`/admin/webhook-deliveries/${randomUUID()}/reprocess`).set(AUTH);
    expect(res.status).toBe(404);
  });
});
