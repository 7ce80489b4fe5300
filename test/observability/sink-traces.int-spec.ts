import { Injectable } from '@nestjs/common';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import request from 'supertest';
import { OnPaymentEvent, PaymentWebhooksEvent } from '../../src';
import { ATTR } from '../../src/observability/tracing';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { ADMIN_TOKEN, AUTH, createTestApp, eventually, secretOf, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';
import { SinkServer, sinkSecret } from '../events/support';
import { linksOf, parentOf, spansNamed, spansWith, useInMemoryTracing } from '../support/tracing';

const exporter = useInMemoryTracing();

const present = <T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> => eventually(probe, timeoutMs, what) as Promise<T>;

const SINK_SECRET = sinkSecret();
const CARRIER_API_KEY = 'carrier-api-key-9f8e7d6c5b4a';
const FAST = { carrierBackoffBaseMs: 20, carrierBackoffCapMs: 100, sweepIntervalMs: 200, sweepAfterMs: 100, inboxBackoffMs: 50 };

/** An after-commit host subscriber hearing every event. */
const heard: PaymentWebhooksEvent[] = [];
@Injectable()
class EveryEventAfterCommit {
  @OnPaymentEvent('*')
  received(event: PaymentWebhooksEvent): void {
    heard.push(structuredClone(event));
  }
}

/**
 * CONTRACT §9 past the outbox: a sink's delivery carries the `traceparent` of its dispatch span, in
 * the webhook's trace; an after-commit subscriber's dispatch is in it too; and no span anywhere
 * holds a secret, a signature, a body or an address.
 */
describe('traces of event sinks and subscribers (workers on, carrier simulator)', () => {
  const sim = new CarrierSimulator({ apiKey: CARRIER_API_KEY });
  const sink = new SinkServer();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    await sim.start();
    await sink.start();
    t = await createTestApp(
      {
        runWorkers: true,
        carriers: [{ name: 'default', url: sim.url, timeoutMs: 2_000, apiKey: CARRIER_API_KEY }],
        eventSinks: [{ name: 'trace-sink', url: sink.url('/events'), secret: SINK_SECRET }],
        tuning: FAST,
      },
      { providers: [EveryEventAfterCommit] },
    );
    d = driver(t);
  });
  afterAll(async () => {
    await t?.close();
    await sink.stop();
    await sim.stop();
  });
  beforeEach(async () => {
    await truncateAll(t.dataSource);
    sim.reset();
    sink.reset();
    heard.length = 0;
    exporter.reset();
  });

  /** The outbox messages of an order's events: id, type, subscriber, status. */
  const eventMessages = async (orderId: string) =>
    (await t.dataSource.query(
      `SELECT id, type, payload->>'subscriber' AS subscriber, status FROM outbox_message
        WHERE payload->'event'->'data'->'order'->>'id' = $1 ORDER BY id`,
      [orderId],
    )) as Array<{ id: string; type: string; subscriber: string; status: string }>;

  /** A paid order, its events delivered to the sink and the subscriber: the receipt span and the order. */
  async function paidAndSettled() {
    const order = await d.createOrder();
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    const text = JSON.stringify(body);
    const headers = signedHeaders('standard', secretOf('standard-main'), text, { eventId });
    const res = await request(t.app.getHttpServer()).post('/webhooks/standard-main').set(headers).send(text);
    expect(res.status).toBe(200);
    expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, 'the order fulfilled');
    // Settled: every message dispatched, and each one's dispatch span ended.
    const messages = await present(
      async () => {
        const all = await eventMessages(order.id);
        const done = all.length >= 6 && all.every((m) => m.status === 'dispatched') && all.every((m) => dispatchSpansOf(m.id).length > 0);
        return done ? all : undefined;
      },
      15_000,
      'every event message dispatched',
    );
    const [receipt] = spansWith(exporter, 'messaging.message.id', eventId).filter((s) => s.name === 'webhook receive standard');
    return { order, eventId, text, headers, receipt, messages };
  }

  const dispatchSpansOf = (messageId: string) => spansWith(exporter, ATTR.messageId, messageId).filter((s) => s.name.startsWith('outbox dispatch '));

  it("the sink gets a traceparent in the delivery's trace, and the after-commit subscriber's dispatches are in it too", async () => {
    const { order, eventId, receipt, messages } = await paidAndSettled();
    const traceId = receipt.spanContext().traceId;
    const [processing] = spansWith(exporter, 'messaging.message.id', eventId).filter((s) => s.name === 'webhook process standard');

    const toSink = messages.filter((m) => m.subscriber === 'trace-sink');
    const toSubscriber = messages.filter((m) => m.subscriber !== 'trace-sink');
    expect(toSink.map((m) => m.type).sort()).toEqual(['event.order.fulfilled', 'event.order.paid', 'event.payment.succeeded']);
    expect(toSubscriber.map((m) => m.type).sort()).toEqual(['event.order.fulfilled', 'event.order.paid', 'event.payment.succeeded']);

    // The sink: one request per event, each with the traceparent of its message's dispatch span.
    const requests = sink.at('/events').filter((r) => (JSON.parse(r.rawBody) as PaymentWebhooksEvent).data.order.id === order.id);
    expect(requests.length).toBe(3);
    for (const m of toSink) {
      const spans = dispatchSpansOf(m.id);
      expect(spans.length).toBe(1);
      const [span] = spans;
      expect(span.name).toBe(`outbox dispatch ${m.type}`);
      expect(span.attributes['payment_webhooks.outcome']).toBe('dispatched');
      expect(span.spanContext().traceId).toBe(traceId);
      const carried = requests.filter((r) => r.headers.traceparent === `00-${traceId}-${span.spanContext().spanId}-01`);
      expect(carried.length).toBe(1);
    }
    for (const r of requests) expect(String(r.headers.traceparent).split('-')[1]).toBe(traceId);

    // The after-commit subscriber: heard each event once, each dispatch span in the trace.
    expect(heard.filter((e) => e.data.order.id === order.id).length).toBe(3);
    for (const m of toSubscriber) {
      const spans = dispatchSpansOf(m.id);
      expect(spans.length).toBe(1);
      expect(spans[0].spanContext().traceId).toBe(traceId);
      expect(spans[0].attributes['payment_webhooks.outcome']).toBe('dispatched');
    }
    // What processing wrote (payment.succeeded, order.paid) is its child and linked to it.
    for (const m of messages.filter((x) => x.type !== 'event.order.fulfilled')) {
      const [span] = dispatchSpansOf(m.id);
      expect(parentOf(span)).toBe(processing.spanContext().spanId);
      expect(linksOf(span)).toEqual([processing.spanContext().spanId]);
    }
    // order.fulfilled is written as the carrier's answer is recorded: in the fulfillment dispatch's span.
    const [shipping] = spansNamed(exporter, 'outbox dispatch fulfillment.dispatch');
    for (const m of messages.filter((x) => x.type === 'event.order.fulfilled')) {
      const [span] = dispatchSpansOf(m.id);
      expect(parentOf(span)).toBe(shipping.spanContext().spanId);
      expect(linksOf(span)).toEqual([shipping.spanContext().spanId]);
    }
  });

  it('no span holds a secret, a token, a signature, a body or personal data; only known attribute keys appear', async () => {
    const { order, text, headers } = await paidAndSettled();
    // A bad signature, signed with a key of its own.
    const badKey = `whsec_${Buffer.from('a-key-that-is-not-configured-01').toString('base64')}`;
    const bad = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    const badText = JSON.stringify(bad.body);
    const badHeaders = signedHeaders('standard', badKey, badText, { eventId: bad.eventId });
    expect((await request(t.app.getHttpServer()).post('/webhooks/standard-main').set(badHeaders).send(badText)).status).toBe(401);
    await eventually(async () => spansWith(exporter, ATTR.outcome, 'invalid_signature').length === 1, 5_000, 'the refused receipt span');
    // An operator action, under the admin token.
    const [row] = await t.dataSource.query(`SELECT id FROM webhook_inbox LIMIT 1`);
    expect((await d.http().post(`/admin/webhook-deliveries/${row.id}/reprocess`).set(AUTH)).status).toBe(202);
    await eventually(async () => spansNamed(exporter, 'payment_webhooks reprocess').length === 1, 5_000, 'the reprocess span');

    const spans = exporter.getFinishedSpans();
    expect(spans.length).toBeGreaterThan(10);
    const endpointSecret = secretOf('standard-main');
    const forbidden = [
      endpointSecret,
      Buffer.from(endpointSecret.replace(/^whsec_/, ''), 'base64').toString('utf8'),
      badKey,
      ADMIN_TOKEN,
      headers['webhook-signature'],
      ...headers['webhook-signature'].split(' ').map((s) => s.replace(/^v1,/, '')),
      badHeaders['webhook-signature'].replace(/^v1,/, ''),
      text,
      badText,
      'Ada Lovelace',
      'Lovelace',
      '12 Analytical Row',
      'Analytical',
      'N1 9GU',
      CARRIER_API_KEY,
      SINK_SECRET,
      SINK_SECRET.replace(/^whsec_/, ''),
    ];
    for (const v of forbidden) expect(v.length).toBeGreaterThan(5);
    const texts = spans.flatMap((s) => textsOf(s));
    for (const secret of forbidden) {
      const holders = texts.filter((x) => x.includes(secret));
      expect({ secret, holders }).toEqual({ secret, holders: [] });
    }

    const allowed = new Set<string>(Object.values(ATTR));
    const keys = new Set(spans.flatMap((s) => [...Object.keys(s.attributes), ...s.events.flatMap((e) => Object.keys(e.attributes ?? {}))]));
    expect([...keys].filter((k) => !allowed.has(k))).toEqual([]);
    // No span events at all: outcomes are attributes, failures statuses.
    expect(spans.flatMap((s) => s.events).length).toBe(0);
  });
});

/** Every text a span exports: name, attribute values, events, status message, links' attributes. */
function textsOf(span: ReadableSpan): string[] {
  const values = (attributes: Record<string, unknown> | undefined) => Object.values(attributes ?? {}).map((v) => (Array.isArray(v) ? v.join('\u0000') : String(v)));
  return [
    span.name,
    span.status.message ?? '',
    ...values(span.attributes),
    ...span.events.flatMap((e) => [e.name, ...values(e.attributes)]),
    ...span.links.flatMap((l) => values(l.attributes)),
  ];
}
