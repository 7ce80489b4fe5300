import { Injectable } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import request from 'supertest';
import { OnPaymentEvent, PaymentWebhooksEvent } from '../../src';
import { QueueName } from '../../src/jobs/queues';
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
 * Past the outbox: a sink's delivery carries the `traceparent` of its dispatch span, in the
 * webhook's trace; an after-commit subscriber's dispatch is in it too; and no span anywhere holds a
 * secret, a signature, a body or an address.
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
    // Settled: every message dispatched, and each one's dispatch span ended. Three events
    // (payment.succeeded, order.paid, order.fulfilled), each for the sink and for the subscriber.
    const messages = await present(
      async () => {
        const all = await eventMessages(order.id);
        const done = all.length >= 6 && all.every((m) => m.status === 'dispatched') && all.every((m) => dispatchSpansOf(m.id).length > 0);
        return done ? all : undefined;
      },
      15_000,
      'every event message dispatched',
    );
    expect(messages.length).toBe(6);
    const receipts = spansWith(exporter, 'messaging.message.id', eventId).filter((s) => s.name === 'webhook receive standard');
    expect(receipts.length).toBe(1);
    const [receipt] = receipts;
    return { order, eventId, text, headers, receipt, messages };
  }

  const dispatchSpansOf = (messageId: string) => spansWith(exporter, ATTR.messageId, messageId).filter((s) => s.name.startsWith('outbox dispatch '));

  it("the sink gets a traceparent in the delivery's trace, and the after-commit subscriber's dispatches are in it too", async () => {
    const { order, eventId, receipt, messages } = await paidAndSettled();
    const traceId = receipt.spanContext().traceId;
    const processings = await present(
      async () => {
        const found = spansWith(exporter, 'messaging.message.id', eventId).filter((s) => s.name === 'webhook process standard');
        return found.length > 0 ? found : undefined;
      },
      5_000,
      'the process span',
    );
    expect(processings.length).toBe(1);
    const [processing] = processings;

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
    // Its run finds the delivery already processed and starts no span (it has nothing to do): wait
    // until the inbox queue is idle, so that a span it would start has been exported.
    const inboxQueue = t.get<Queue>(getQueueToken(QueueName.Inbox));
    await eventually(
      async () => Object.values(await inboxQueue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children')).every((n) => n === 0),
      5_000,
      'the inbox queue idle',
    );

    // Every span the module made in this test, exactly: the paid order's receipt, its processing,
    // its fulfillment dispatch and its six event dispatches; the refused receipt; the reprocess
    // action (and no process span for the re-run of a delivery already processed).
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name).sort()).toEqual(
      [
        'webhook receive standard',
        'webhook process standard',
        'outbox dispatch fulfillment.dispatch',
        ...['event.payment.succeeded', 'event.order.paid', 'event.order.fulfilled'].flatMap((type) => [`outbox dispatch ${type}`, `outbox dispatch ${type}`]),
        'webhook receive standard',
        'payment_webhooks reprocess',
      ].sort(),
    );
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
