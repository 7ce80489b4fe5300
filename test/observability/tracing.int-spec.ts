import { CarrierSimulator } from '../../tools/carrier-sim';
import { useCarrierSimulator } from '../support/carrier-suite';
import { eventually, TestApp } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';
import { linksOf, parentOf, spansNamed, spansWith, useInMemoryTracing } from '../support/tracing';

const exporter = useInMemoryTracing();

describe('traces: a paid order', () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  useCarrierSimulator(sim, (url) => ({ carriers: [{ name: 'default', url, timeoutMs: 1_000 }] }), (app) => {
    t = app;
    d = driver(app);
  });
  beforeEach(() => exporter.reset());

  it('receive, process and dispatch are one trace, linked, and the carrier sees its traceparent', async () => {
    const order = await d.createOrder();
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    const res = await d.send('standard-main', 'standard', body, { eventId });
    expect(res.status).toBe(200);
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, 'fulfilled');
    // Each span is exported when it ends: the process span may end after the order is fulfilled
    // (the dispatch ran on another worker), so wait for each, then check there is exactly one.
    const ofEvent = (name: string) => spansWith(exporter, 'messaging.message.id', eventId).filter((s) => s.name === name);
    await eventually(async () => spansNamed(exporter, 'outbox dispatch fulfillment.dispatch').length > 0, 5_000, 'the dispatch span');
    await eventually(async () => ofEvent('webhook process standard').length > 0, 5_000, 'the process span');
    const dispatches = spansNamed(exporter, 'outbox dispatch fulfillment.dispatch');
    const receipts = ofEvent('webhook receive standard');
    const processings = spansNamed(exporter, 'webhook process standard');
    expect(dispatches.length).toBe(1);
    expect(receipts.length).toBe(1);
    expect(processings.length).toBe(1);
    const [dispatch] = dispatches;
    const [receive] = receipts;
    const [processing] = processings;
    expect(processing.attributes['messaging.message.id']).toBe(eventId);
    expect(receive.attributes['payment_webhooks.outcome']).toBe('accepted');
    expect(receive.attributes['messaging.destination.name']).toBe('standard-main');
    expect(processing.attributes['payment_webhooks.outcome']).toBe('applied');
    expect(processing.attributes['payment_webhooks.status']).toBe('processed');
    expect(linksOf(processing)).toEqual([receive.spanContext().spanId]);
    expect(parentOf(processing)).toBe(receive.spanContext().spanId);
    expect(linksOf(dispatch)).toEqual([processing.spanContext().spanId]);
    expect(dispatch.spanContext().traceId).toBe(receive.spanContext().traceId);
    expect(dispatch.attributes['payment_webhooks.outcome']).toBe('dispatched');
    expect(sim.calls.length).toBe(1);
    const [call] = sim.calls;
    expect(call.traceparent).toBe(`00-${dispatch.spanContext().traceId}-${dispatch.spanContext().spanId}-01`);
  });
});
