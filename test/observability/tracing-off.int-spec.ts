import { trace } from '@opentelemetry/api';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { useCarrierSimulator } from '../support/carrier-suite';
import { eventually, TestApp } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';

/**
 * Without an SDK, tracing adds nothing: `@opentelemetry/api` is installed but no SDK is registered
 * (this file never calls useInMemoryTracing), so no context is stored on the rows, the carrier call
 * carries no traceparent, and the order ships once as always.
 */
describe('tracing off: the API without an SDK', () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  useCarrierSimulator(sim, (url) => ({ carriers: [{ name: 'default', url, timeoutMs: 1_000 }] }), (app) => {
    t = app;
    d = driver(app);
  });

  it('a paid order: trace_context NULL on the inbox row and the outbox message, no traceparent, shipped once', async () => {
    // Nothing registered a tracer provider: the global one is the API's no-op proxy.
    expect(trace.getTracer('probe').startSpan('probe').isRecording()).toBe(false);

    const order = await d.createOrder();
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    const res = await d.send('standard-main', 'standard', body, { eventId });
    expect(res.status).toBe(200);
    expect(await d.processed(eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    await eventually(async () => (await d.outboxMessage(order.id))?.status === 'dispatched', 15_000, 'the fulfillment dispatched');
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, 'the order fulfilled');

    const inbox = await t.dataSource.query(`SELECT trace_context AS "traceContext" FROM webhook_inbox`);
    expect(inbox.length).toBe(1);
    expect(inbox[0].traceContext).toBeNull();
    const outbox = await t.dataSource.query(`SELECT trace_context AS "traceContext" FROM outbox_message`);
    expect(outbox.length).toBe(1);
    expect(outbox[0].traceContext).toBeNull();
    expect(sim.shipments.length).toBe(1);
    expect(sim.calls.length).toBe(1);
    expect(sim.calls[0].traceparent).toBeNull();
  });
});
