import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WaterfallSpan } from '../../tools/trace-waterfall';
import { createTestApp, eventually, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';
import { parentOf, spansWith, useInMemoryTracing } from '../support/tracing';

/**
 * The trace of one paid order as docs/operations.md draws it (docs/images/trace-paid-order.png):
 * receipt, processing, the carrier's dispatch and the carrier's own server span for the call. With
 * TRACE_WATERFALL_OUT set, the spans are written there as JSON for tools/trace-waterfall.ts; CI
 * writes nothing and only checks that the trace has that shape.
 */
const exporter = useInMemoryTracing();

/** The attributes the picture labels spans with: identifiers and outcomes, as the module sets them. */
const SHOWN = [
  'messaging.message.id',
  'messaging.destination.name',
  'payment_webhooks.outcome',
  'payment_webhooks.status',
  'payment_webhooks.attempt',
  'payment_webhooks.outbox.type',
  'http.response.status_code',
];

/**
 * A carrier that traces: it answers `POST /shipments` as the carrier API says and records a server
 * span under the `traceparent` the call carried, as a carrier with its own SDK would.
 */
function tracingCarrier(): Server {
  const tracer = trace.getTracer('carrier');
  return createServer((req, res) => {
    const parent = propagation.extract(context.active(), req.headers);
    const span = tracer.startSpan('POST /shipments', { kind: SpanKind.SERVER }, parent);
    req.resume();
    req.on('end', () => {
      // A carrier's work takes a moment; the picture shows it as the call's own bar.
      setTimeout(() => {
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: `shp_${randomUUID().slice(0, 8)}`, status: 'created' }));
        span.setAttribute('http.response.status_code', 201);
        span.end();
      }, 15);
    });
  });
}

function toWaterfall(span: ReadableSpan): WaterfallSpan {
  const ms = ([s, ns]: [number, number]) => s * 1_000 + ns / 1e6;
  const attributes: Record<string, string | number> = {};
  for (const key of SHOWN) {
    const v = span.attributes[key];
    if (typeof v === 'string' || typeof v === 'number') attributes[key] = v;
  }
  return {
    name: span.name,
    service: span.instrumentationScope.name === 'carrier' ? 'carrier' : 'payment-webhooks',
    kind: SpanKind[span.kind].toLowerCase(),
    traceId: span.spanContext().traceId,
    spanId: span.spanContext().spanId,
    parentSpanId: parentOf(span) ?? null,
    links: span.links.map((l) => l.context.spanId),
    startMs: ms(span.startTime),
    endMs: ms(span.endTime),
    attributes,
  };
}

describe('the trace of a paid order, as docs/operations.md draws it', () => {
  const carrier = tracingCarrier();
  let t: TestApp;

  beforeAll(async () => {
    await new Promise<void>((resolve) => carrier.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(carrier.address() as AddressInfo).port}`;
    t = await createTestApp({ runWorkers: true, carriers: [{ name: 'default', url, timeoutMs: 2_000 }] });
    await truncateAll(t.dataSource);
  });
  afterAll(async () => {
    await t?.close();
    await new Promise((resolve) => carrier.close(resolve));
  });

  it('receive, process, dispatch and the carrier call are one trace', async () => {
    const d = driver(t);
    const order = await d.createOrder();
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    expect((await d.send('standard-main', 'standard', body, { eventId })).status).toBe(200);
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, 'fulfilled');
    // eventually waits for a value: the carrier's span has ended.
    const call = (await eventually(async () => exporter.getFinishedSpans().find((s) => s.name === 'POST /shipments'), 5_000, 'carrier span'))!;

    const [receive] = spansWith(exporter, 'messaging.message.id', eventId).filter((s) => s.name.startsWith('webhook receive'));
    const traceId = receive.spanContext().traceId;
    // Every span of the delivery's trace that has ended by now, in the order they started.
    const spans = exporter
      .getFinishedSpans()
      .filter((s) => s.spanContext().traceId === traceId)
      .map(toWaterfall)
      .sort((a, b) => a.startMs - b.startMs);

    const byName = (name: string) => spans.find((s) => s.name === name)!;
    const processing = byName('webhook process standard');
    const dispatch = byName('outbox dispatch fulfillment.dispatch');
    expect(processing.parentSpanId).toBe(receive.spanContext().spanId);
    expect(processing.links).toEqual([receive.spanContext().spanId]);
    expect(dispatch.parentSpanId).toBe(processing.spanId);
    expect(dispatch.links).toEqual([processing.spanId]);
    expect(call.spanContext().traceId).toBe(traceId);
    expect(parentOf(call)).toBe(dispatch.spanId);

    const out = process.env.TRACE_WATERFALL_OUT;
    if (out) writeFileSync(out, `${JSON.stringify({ title: `A paid order: event ${eventId}`, spans }, null, 2)}\n`);
  });
});
