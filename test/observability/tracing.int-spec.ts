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
    const dispatch = await eventually(async () => spansNamed(exporter, 'outbox dispatch fulfillment.dispatch')[0], 5_000, 'dispatch span');

    const [receive] = spansWith(exporter, 'messaging.message.id', eventId).filter((s) => s.name === 'webhook receive standard');
    const [processing] = spansNamed(exporter, 'webhook process standard');
    expect(receive.attributes['payment_webhooks.outcome']).toBe('accepted');
    expect(receive.attributes['messaging.destination.name']).toBe('standard-main');
    expect(processing.attributes['payment_webhooks.outcome']).toBe('applied');
    expect(processing.attributes['payment_webhooks.status']).toBe('processed');
    expect(linksOf(processing)).toEqual([receive.spanContext().spanId]);
    expect(parentOf(processing)).toBe(receive.spanContext().spanId);
    expect(linksOf(dispatch)).toEqual([processing.spanContext().spanId]);
    expect(dispatch.spanContext().traceId).toBe(receive.spanContext().traceId);
    expect(dispatch.attributes['payment_webhooks.outcome']).toBe('dispatched');
    const [call] = sim.calls;
    expect(call.traceparent).toBe(`00-${dispatch.spanContext().traceId}-${dispatch.spanContext().spanId}-01`);
  });
});
