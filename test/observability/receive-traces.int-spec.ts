import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import request from 'supertest';
import type { EndpointDefinition } from '../../src/config/options';
import { QueueName } from '../../src/jobs/queues';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { NotificationItem, signedBody } from '../fixtures/adyen';
import { createTestApp, eventually, PLATFORMS, TEST_ENDPOINTS, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';
import { linksOf, parentOf, spansNamed, spansWith, useInMemoryTracing } from '../support/tracing';

const exporter = useInMemoryTracing();

const ADYEN_KEY = 'A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F90';
const ADYEN_ACCOUNT = 'ShopEU';
const ENDPOINTS: EndpointDefinition[] = [...TEST_ENDPOINTS, { id: 'adyen-main', provider: 'adyen', secrets: [ADYEN_KEY], merchantAccountId: ADYEN_ACCOUNT }];
const FAST = { carrierBackoffBaseMs: 20, carrierBackoffCapMs: 200, sweepIntervalMs: 200, sweepAfterMs: 100, inboxBackoffMs: 50 };

/** A W3C trace context as an upstream sender (a gateway that traces) would put on the request. */
const UPSTREAM_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const UPSTREAM_SPAN = '00f067aa0ba902b7';
const UPSTREAM = `00-${UPSTREAM_TRACE}-${UPSTREAM_SPAN}-01`;

const receiveSpans = () => spansNamed(exporter, 'webhook receive *');
const processSpansOf = (eventId: string) => spansWith(exporter, 'messaging.message.id', eventId).filter((s) => s.name.startsWith('webhook process '));
/** Polls until `probe` gives something (eventually, typed without the undefined it polls past). */
const present = <T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<T> => eventually(probe, timeoutMs, what) as Promise<T>;
const receiveSpansOf = (eventId: string) => spansWith(exporter, 'messaging.message.id', eventId).filter((s) => s.name.startsWith('webhook receive '));

/**
 * On the receive side, on both HTTP platforms: the receipt span of a paid order joins
 * the sender's trace, a duplicate has a receipt of its own and nothing else, each refused delivery
 * has exactly one receipt span and no processing, and an Adyen batch has one receipt per item.
 */
describe.each(PLATFORMS)('%s: receive traces (workers on, carrier simulator)', (platform) => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  let queue: Queue;

  beforeAll(async () => {
    await sim.start();
    t = await createTestApp(
      { endpoints: ENDPOINTS, runWorkers: true, carriers: [{ name: 'default', url: sim.url, timeoutMs: 1_000 }], tuning: FAST },
      { platform },
    );
    d = driver(t);
    queue = t.get<Queue>(getQueueToken(QueueName.Inbox));
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

  /** Nothing is waiting, running or scheduled on the inbox queue. */
  const inboxQueueIdle = async () => {
    const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children');
    return Object.values(counts).every((n) => n === 0);
  };

  /** Sends a signed standard delivery, with extra headers (a traceparent). */
  const sendStandard = (body: object, eventId: string, extra: Record<string, string> = {}) => {
    const text = JSON.stringify(body);
    return request(t.app.getHttpServer())
      .post('/webhooks/standard-main')
      .set({ ...signedHeaders('standard', 'whsec_c3RhbmRhcmQtd2ViaG9va3MtdGVzdC1rZXktMDAwMQ==', text, { eventId }), ...extra })
      .send(text);
  };

  const dispatched = (orderId: string) =>
    eventually(
      async () => (await d.outboxMessage(orderId))?.status === 'dispatched' && spansNamed(exporter, 'outbox dispatch fulfillment.dispatch').length > 0,
      15_000,
      'the fulfillment dispatched and its span ended',
    );

  it("a paid order sent with a W3C traceparent: its receipt is that span's child, and processing and dispatch stay in the trace", async () => {
    const order = await d.createOrder();
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    const res = await sendStandard(body, eventId, { traceparent: UPSTREAM });
    expect(res.status).toBe(200);
    await dispatched(order.id);
    const processing = await present(async () => processSpansOf(eventId)[0], 5_000, 'the process span');

    const receipts = receiveSpansOf(eventId);
    expect(receipts.length).toBe(1);
    const [receipt] = receipts;
    expect(receipt.name).toBe('webhook receive standard');
    expect(receipt.spanContext().traceId).toBe(UPSTREAM_TRACE);
    expect(parentOf(receipt)).toBe(UPSTREAM_SPAN);
    expect(receipt.attributes).toMatchObject({
      'messaging.system': 'payment_webhooks',
      'messaging.destination.name': 'standard-main',
      'messaging.message.id': eventId,
      'payment_webhooks.outcome': 'accepted',
    });
    expect(processSpansOf(eventId).length).toBe(1);
    expect(processing.spanContext().traceId).toBe(UPSTREAM_TRACE);
    expect(parentOf(processing)).toBe(receipt.spanContext().spanId);
    expect(linksOf(processing)).toEqual([receipt.spanContext().spanId]);
    const dispatches = spansNamed(exporter, 'outbox dispatch fulfillment.dispatch');
    expect(dispatches.length).toBe(1);
    expect(dispatches[0].spanContext().traceId).toBe(UPSTREAM_TRACE);
    expect(sim.calls.length).toBe(1);
    expect(sim.calls[0].traceparent).toBe(`00-${UPSTREAM_TRACE}-${dispatches[0].spanContext().spanId}-01`);
    // The row keeps the receipt's context: a later attempt links to it.
    const [row] = await t.dataSource.query(`SELECT trace_context AS "traceContext" FROM webhook_inbox WHERE event_id = $1`, [eventId]);
    expect(row.traceContext).toBe(`00-${UPSTREAM_TRACE}-${receipt.spanContext().spanId}-01`);
  });

  it('a duplicate delivery: a second receipt span with outcome duplicate, no second processing, no second shipment', async () => {
    const order = await d.createOrder();
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    expect((await sendStandard(body, eventId)).status).toBe(200);
    await dispatched(order.id);
    await eventually(async () => processSpansOf(eventId).length === 1, 5_000, 'the process span');

    const again = await sendStandard(body, eventId);
    expect(again.status).toBe(200);
    const receipts = await present(async () => (receiveSpansOf(eventId).length === 2 ? receiveSpansOf(eventId) : undefined), 5_000, 'two receipt spans');
    expect(receipts.map((s) => s.attributes['payment_webhooks.outcome']).sort()).toEqual(['accepted', 'duplicate']);
    const duplicate = receipts.find((s) => s.attributes['payment_webhooks.outcome'] === 'duplicate')!;
    expect(duplicate.status.code).not.toBe(2); // not an error
    // The duplicate enqueued nothing: the queue is idle, so no processing of it can still come.
    await eventually(inboxQueueIdle, 5_000, 'the inbox queue idle');
    expect(processSpansOf(eventId).length).toBe(1);
    expect(linksOf(processSpansOf(eventId)[0])).not.toContain(duplicate.spanContext().spanId);
    expect(spansNamed(exporter, 'outbox dispatch fulfillment.dispatch').length).toBe(1);
    expect(sim.shipments.length).toBe(1);
    expect(await d.count(`SELECT 1 FROM outbox_message`)).toBe(1);
  });

  it('a bad signature: one receipt span, invalid_signature, status ERROR; no row, no processing', async () => {
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'));
    const text = JSON.stringify(body);
    const res = await request(t.app.getHttpServer())
      .post('/webhooks/standard-main')
      .set(signedHeaders('standard', `whsec_${Buffer.from('not-the-endpoint-key-0000000001').toString('base64')}`, text, { eventId }))
      .send(text);
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_signature');
    const [receipt] = await present(async () => (receiveSpans().length > 0 ? receiveSpans() : undefined), 5_000, 'the receipt span');
    expect(receiveSpans().length).toBe(1);
    expect(receipt.name).toBe('webhook receive standard');
    expect(receipt.attributes['payment_webhooks.outcome']).toBe('invalid_signature');
    expect(receipt.attributes['messaging.destination.name']).toBe('standard-main');
    expect(receipt.status.code).toBe(2); // SpanStatusCode.ERROR
    expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(0);
    expect(await inboxQueueIdle()).toBe(true);
    expect(spansNamed(exporter, 'webhook process *').length).toBe(0);
  });

  it('an unknown endpoint: one receipt span, unknown_endpoint; no processing', async () => {
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'));
    const text = JSON.stringify(body);
    const res = await request(t.app.getHttpServer())
      .post('/webhooks/no-such-endpoint')
      .set(signedHeaders('standard', 'whsec_c3RhbmRhcmQtd2ViaG9va3MtdGVzdC1rZXktMDAwMQ==', text, { eventId }))
      .send(text);
    expect(res.status).toBe(404);
    const [receipt] = await present(async () => (receiveSpans().length > 0 ? receiveSpans() : undefined), 5_000, 'the receipt span');
    expect(receiveSpans().length).toBe(1);
    expect(receipt.attributes['payment_webhooks.outcome']).toBe('unknown_endpoint');
    expect(receipt.status.code).toBe(2);
    expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(0);
    expect(spansNamed(exporter, 'webhook process *').length).toBe(0);
  });

  it('an authentic body that is not JSON: one receipt span, malformed_payload; no processing', async () => {
    const text = 'this is not json';
    const res = await request(t.app.getHttpServer())
      .post('/webhooks/standard-main')
      .set(signedHeaders('standard', 'whsec_c3RhbmRhcmQtd2ViaG9va3MtdGVzdC1rZXktMDAwMQ==', text, { eventId: uniqueId('msg') }))
      .send(text);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('malformed_payload');
    const [receipt] = await present(async () => (receiveSpans().length > 0 ? receiveSpans() : undefined), 5_000, 'the receipt span');
    expect(receiveSpans().length).toBe(1);
    expect(receipt.attributes['payment_webhooks.outcome']).toBe('malformed_payload');
    expect(receipt.attributes['messaging.destination.name']).toBe('standard-main');
    expect(receipt.status.code).toBe(2);
    expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(0);
    expect(spansNamed(exporter, 'webhook process *').length).toBe(0);
  });

  it('an event processed to rejected (amount mismatch): its process span has status rejected', async () => {
    const order = await d.createOrder('49.90');
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id, amount: 1000 });
    expect((await sendStandard(body, eventId)).status).toBe(200);
    const row = await d.processed(eventId);
    expect(row.status).toBe('rejected');
    const [processing] = await present(async () => (processSpansOf(eventId).length > 0 ? processSpansOf(eventId) : undefined), 5_000, 'the process span');
    expect(processSpansOf(eventId).length).toBe(1);
    expect(processing.attributes['payment_webhooks.status']).toBe('rejected');
    expect(processing.attributes['payment_webhooks.outcome']).toBe(row.outcome);
    const [receipt] = receiveSpansOf(eventId);
    expect(receipt.attributes['payment_webhooks.outcome']).toBe('accepted');
    expect(linksOf(processing)).toEqual([receipt.spanContext().spanId]);
    expect(sim.shipments.length).toBe(0);
  });

  it('an Adyen batch of 3 items: 3 receipt spans in one trace, each item processed in a span linked to its own receipt', async () => {
    const orders = await Promise.all([0, 1, 2].map(async () => {
      const reference = uniqueId('ORD');
      return { reference, order: await d.createOrder('49.90', 'EUR', { reference }) };
    }));
    const items: NotificationItem[] = orders.map(({ reference }) => ({
      eventCode: 'AUTHORISATION',
      success: 'true',
      pspReference: uniqueId('psp'),
      originalReference: '',
      merchantAccountCode: ADYEN_ACCOUNT,
      merchantReference: reference,
      eventDate: '2026-12-01T10:00:00+01:00',
      amount: { value: 4990, currency: 'EUR' },
      paymentMethod: 'visa',
      reason: '',
      additionalData: { authCode: '1234' },
    }));
    const eventIds = items.map((i) => `${i.pspReference}:${i.eventCode}:${i.success}`);
    const res = await request(t.app.getHttpServer())
      .post('/webhooks/adyen-main')
      .set('content-type', 'application/json')
      .send(JSON.stringify(signedBody(items, ADYEN_KEY)));
    expect(res.status).toBe(200);
    for (const eventId of eventIds) expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    await eventually(async () => eventIds.every((id) => processSpansOf(id).length > 0), 5_000, 'the process spans');

    const receipts = receiveSpans();
    expect(receipts.length).toBe(3);
    expect(receipts.map((s) => s.attributes['messaging.message.id']).sort()).toEqual([...eventIds].sort());
    expect(new Set(receipts.map((s) => s.spanContext().traceId)).size).toBe(1);
    expect(new Set(receipts.map((s) => s.spanContext().spanId)).size).toBe(3);
    for (const receipt of receipts) {
      expect(receipt.name).toBe('webhook receive adyen');
      expect(receipt.attributes['payment_webhooks.outcome']).toBe('accepted');
      expect(receipt.attributes['messaging.destination.name']).toBe('adyen-main');
    }
    for (const eventId of eventIds) {
      const [receipt] = receiveSpansOf(eventId);
      const processing = processSpansOf(eventId);
      expect(processing.length).toBe(1);
      expect(processing[0].name).toBe('webhook process adyen');
      expect(linksOf(processing[0])).toEqual([receipt.spanContext().spanId]);
      expect(processing[0].spanContext().traceId).toBe(receipt.spanContext().traceId);
    }
  });
});
