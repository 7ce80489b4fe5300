import { Webhook } from 'standardwebhooks';
import type { PaymentWebhooksEvent } from '../../src';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { AUTH, eventually, TestApp } from '../support/app';
import { bodies, uniqueId } from '../support/domain';
import { driver, eventMessages, expectEventBody, outboxSettled, SinkRequest, SinkServer, sinkSecret, useEventsApp } from './support';

/**
 * CONTRACT §7 over HTTP: each sink of EVENT_SINKS gets the events of its `types` as `POST {url}`,
 * signed as Standard Webhooks with its secret (`webhook-id` = the event's id on every attempt),
 * retried like a carrier call (5xx, a timeout), dead at once on another 4xx. A real HTTP server on
 * 127.0.0.1 receives them; the `standardwebhooks` package verifies them as a receiver would.
 */

const SECRETS = { all: sinkSecret(), paid: sinkSecret(), rejecting: sinkSecret(), slow: sinkSecret() };

describe('§7 HTTP sinks (workers on, carrier simulator)', () => {
  const sim = new CarrierSimulator();
  const sink = new SinkServer();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(() => sink.start());
  afterAll(() => sink.stop());

  useEventsApp(
    sim,
    () => ({
      eventMaxAttempts: 5,
      eventSinks: [
        { name: 'all-events', url: sink.url('/all'), secret: SECRETS.all },
        { name: 'paid-only', url: sink.url('/paid'), secret: SECRETS.paid, types: ['order.paid'] },
        { name: 'rejecting', url: sink.url('/reject'), secret: SECRETS.rejecting, types: ['payment.succeeded'] },
        { name: 'slow', url: sink.url('/slow'), secret: SECRETS.slow, types: ['order.fulfilled'], timeoutMs: 300 },
      ],
      tuning: { inboxBackoffMs: 50, carrierBackoffBaseMs: 20, carrierBackoffCapMs: 100 },
    }),
    [],
    (app) => {
      t = app;
      d = driver(app);
    },
  );

  beforeEach(() => {
    sink.reset();
    // /all: the first two deliveries of each order.paid answer 500; /reject: 400; /slow: the first
    // delivery of each event never answered (past its 300 ms timeout).
    sink.respond = (req, earlier) => {
      const before = earlier.filter((r) => r.path === req.path && r.headers['webhook-id'] === req.headers['webhook-id']).length;
      const type = (JSON.parse(req.rawBody) as PaymentWebhooksEvent).type;
      if (req.path === '/all' && type === 'order.paid' && before < 2) return 500;
      if (req.path === '/reject') return 400;
      if (req.path === '/slow' && before === 0) return 'hang';
      return 200;
    };
  });

  async function paidAndSettled(): Promise<{ orderId: string; sourceEventId: string }> {
    const order = await d.createOrder();
    const paid = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    await d.send('standard-main', 'standard', paid.body, { eventId: paid.eventId });
    expect(await d.processed(paid.eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, 'the order fulfilled');
    await outboxSettled(t);
    return { orderId: order.id, sourceEventId: paid.eventId };
  }

  const forOrder = (path: string, orderId: string) => sink.at(path).filter((r) => (JSON.parse(r.rawBody) as PaymentWebhooksEvent).data.order.id === orderId);

  /** What a receiver does: verify with the package, with the raw body and the headers as received. */
  function verified(secret: string, req: SinkRequest): PaymentWebhooksEvent {
    return new Webhook(secret).verify(req.rawBody, req.headers as Record<string, string>) as PaymentWebhooksEvent;
  }

  it('every event, verifiable with the sink secret; a delivery answered 500 twice is retried with the same webhook-id and body, each one verifying', async () => {
    const { orderId, sourceEventId } = await paidAndSettled();
    const received = forOrder('/all', orderId);
    const byId = new Map<string, SinkRequest[]>();
    for (const req of received) {
      const event = verified(SECRETS.all, req);
      expect(req.headers['webhook-id']).toBe(event.id);
      expect(req.headers['content-type']).toBe('application/json');
      expect(req.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/);
      // The attempt's own time, in seconds.
      expect(Math.abs(Number(req.headers['webhook-timestamp']) - req.receivedAt / 1000)).toBeLessThan(5);
      expect(() => verified(SECRETS.paid, req)).toThrow();
      byId.set(event.id, [...(byId.get(event.id) ?? []), req]);
    }
    expect(byId.size).toBe(3);
    const firsts = [...byId.values()].map((reqs) => JSON.parse(reqs[0].rawBody) as PaymentWebhooksEvent);
    expect(firsts.map((e) => e.type).sort()).toEqual(['order.fulfilled', 'order.paid', 'payment.succeeded']);
    const paid = firsts.find((e) => e.type === 'order.paid')!;
    const payment = (await d.getOrder(orderId)).payments[0];
    expectEventBody(paid, { type: 'order.paid', orderId, orderStatus: 'paid', payment, sourceEventId });
    expectEventBody(firsts.find((e) => e.type === 'payment.succeeded')!, { type: 'payment.succeeded', orderId, payment, sourceEventId });
    expectEventBody(firsts.find((e) => e.type === 'order.fulfilled')!, { type: 'order.fulfilled', orderId, orderStatus: 'fulfilled', payment: null, sourceEventId: null });

    // order.paid: three deliveries (500, 500, 200), one webhook-id, the same body; each attempt signed anew.
    const retried = byId.get(paid.id)!;
    expect(retried.map((r) => r.answer)).toEqual([500, 500, 200]);
    expect(new Set(retried.map((r) => r.rawBody)).size).toBe(1);
    expect(new Set(retried.map((r) => r.headers['webhook-id']))).toEqual(new Set([paid.id]));
    for (const [id, reqs] of byId) if (id !== paid.id) expect(reqs.map((r) => r.answer)).toEqual([200]);

    const messages = await eventMessages(t, orderId);
    const mine = messages.filter((m) => m.subscriber === 'all-events');
    expect(mine.map((m) => [m.type, m.idempotencyKey, m.status, m.attempts])).toEqual(
      ['payment.succeeded', 'order.paid', 'order.fulfilled'].map((type) => {
        const id = firsts.find((e) => e.type === type)!.id;
        return [`event.${type}`, `${id}:all-events`, 'dispatched', type === 'order.paid' ? 3 : 1];
      }),
    );
  });

  it("a sink's types are honoured: the order.paid-only sink gets exactly that event", async () => {
    const { orderId } = await paidAndSettled();
    const received = forOrder('/paid', orderId);
    expect(received.length).toBe(1);
    const event = verified(SECRETS.paid, received[0]);
    expect(event.type).toBe('order.paid');
    expect(received[0].headers['webhook-id']).toBe(event.id);
    const mine = (await eventMessages(t, orderId)).filter((m) => m.subscriber === 'paid-only');
    expect(mine.map((m) => [m.type, m.status, m.attempts])).toEqual([['event.order.paid', 'dispatched', 1]]);
  });

  it('a sink answering 400 is dead after exactly one call, its reason naming the status', async () => {
    const { orderId } = await paidAndSettled();
    const received = forOrder('/reject', orderId);
    expect(received.length).toBe(1);
    expect(verified(SECRETS.rejecting, received[0]).type).toBe('payment.succeeded');
    const res = await d.http().get('/admin/outbox?status=dead').set(AUTH);
    expect(res.status).toBe(200);
    expect(res.body.items.length).toBe(1);
    expect(res.body.items[0]).toMatchObject({
      type: 'event.payment.succeeded',
      idempotencyKey: `${received[0].headers['webhook-id']}:rejecting`,
      status: 'dead',
      attempts: 1,
    });
    expect(res.body.items[0].lastError).toContain('400');
    expect(res.body.items[0].lastError).toContain('rejecting');
  });

  it('a sink that does not answer within its timeoutMs is retried with the same webhook-id', async () => {
    const { orderId } = await paidAndSettled();
    const received = forOrder('/slow', orderId);
    expect(received.map((r) => r.answer)).toEqual(['hang', 200]);
    const [first, second] = received.map((r) => verified(SECRETS.slow, r));
    expect(first).toEqual(second);
    expect(first.type).toBe('order.fulfilled');
    expect(new Set(received.map((r) => r.headers['webhook-id']))).toEqual(new Set([first.id]));
    const mine = (await eventMessages(t, orderId)).filter((m) => m.subscriber === 'slow');
    expect(mine.map((m) => [m.status, m.attempts, m.lastError])).toEqual([['dispatched', 2, null]]);
  });

  it('no sink secret appears in /admin/outbox answers (nor in the messages)', async () => {
    await paidAndSettled();
    const answers: string[] = [];
    for (const query of ['', '?status=pending', '?status=dispatched', '?status=dead', '?limit=1']) {
      const res = await d.http().get(`/admin/outbox${query}`).set(AUTH);
      expect(res.status).toBe(200);
      answers.push(res.text);
    }
    const [{ payloads }] = await t.dataSource.query(`SELECT string_agg(payload::text, ' ') AS payloads FROM outbox_message`);
    expect(JSON.parse(answers[0]).items.length).toBeGreaterThanOrEqual(7);
    for (const secret of Object.values(SECRETS)) {
      for (const text of [...answers, payloads as string]) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(secret.slice('whsec_'.length));
      }
    }
  });
});
