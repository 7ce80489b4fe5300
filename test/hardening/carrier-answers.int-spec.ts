import type { CarrierAdapter, ShipmentResult } from '../../src/fulfillment/carriers/carrier';
import { MetricsService } from '../../src/observability/metrics.service';
import { OutboxRelay } from '../../src/outbox/outbox-relay.service';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { useCarrierSimulator } from '../support/carrier-suite';
import { eventually, TestApp } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';

/**
 * Issue 12, findings 2 and 3: a carrier's answer that cannot be used (a shipment id PostgreSQL
 * cannot store, an answer of many megabytes) is a "2xx without an id" (CONTRACT §5), counted as an
 * attempt, and bounded by CARRIER_MAX_ATTEMPTS; and an outcome that cannot be recorded still spends
 * an attempt. Real PostgreSQL and Redis; the carrier is the in-process simulator, or a host adapter.
 */

const MAX_ATTEMPTS = 4;
const MiB = 1024 * 1024;

/** A host adapter that answers success with an id PostgreSQL refuses (NUL in text). */
class UnrecordableAdapter implements CarrierAdapter {
  readonly name = 'unrecordable';
  calls = 0;
  async ship(): Promise<ShipmentResult> {
    this.calls++;
    return { ok: true, shipmentId: 'lic_\u0000x', status: 'ok' };
  }
}

/** A host adapter that throws, its message carrying a NUL and an escape sequence. */
class ThrowingAdapter implements CarrierAdapter {
  readonly name = 'throwing';
  calls = 0;
  async ship(): Promise<ShipmentResult> {
    this.calls++;
    throw new Error('licence server \u0000 down \u001b[31m');
  }
}

describe('carrier answers that cannot be used or recorded (issue 12: 2, 3)', () => {
  const sim = new CarrierSimulator();
  const adapter = new UnrecordableAdapter();
  const throwing = new ThrowingAdapter();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  useCarrierSimulator(
    sim,
    (url) => ({
      carriers: [{ name: 'default', url, timeoutMs: 2_000 }],
      carrierAdapters: [adapter, throwing],
      carrierMaxAttempts: MAX_ATTEMPTS,
    }),
    (app) => {
      t = app;
      d = driver(app);
    },
  );

  beforeEach(() => {
    adapter.calls = 0;
    throwing.calls = 0;
    t.get(MetricsService).carrierCalls.reset();
  });

  async function paidOrder(extra: Record<string, unknown> = {}): Promise<string> {
    const order = await d.createOrder('49.90', 'EUR', extra);
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    await d.send('standard-main', 'standard', body, { eventId });
    expect((await d.processed(eventId)).outcome).toBe('applied');
    return order.id;
  }

  const settled = (orderId: string, status: 'dead' | 'dispatched') =>
    eventually(async () => (await d.outboxMessage(orderId))?.status === status, 20_000, `message of ${orderId} ${status}`);

  async function carrierCalls(): Promise<Record<string, number>> {
    const metric = await t.get(MetricsService).carrierCalls.get();
    return Object.fromEntries(metric.values.map((v) => [`${v.labels.carrier}:${v.labels.status}`, v.value]));
  }

  it('201 {"id":"shp_\\u0000x"}: each call is an attempt without an id; dead after CARRIER_MAX_ATTEMPTS calls, never a success', async () => {
    sim.answerWith({ status: 201, body: '{"id":"shp_\\u0000x"}' }, 100);
    const orderId = await paidOrder();
    await settled(orderId, 'dead');
    expect(await d.outboxMessage(orderId)).toEqual({
      status: 'dead',
      attempts: MAX_ATTEMPTS,
      lastError: `carrier answered 201 with an unusable shipment id (after ${MAX_ATTEMPTS} attempts)`,
      dispatched: false,
    });
    // Bounded: exactly the budget reached the carrier, and a sweep finds nothing more to do.
    expect(await t.get(OutboxRelay).runOnce()).toBe(0);
    expect(sim.calls.map((c) => c.result)).toEqual(Array(MAX_ATTEMPTS).fill('answer'));
    const view = await d.getOrder(orderId);
    expect(view.status).toBe('paid');
    expect(view.fulfillment).toMatchObject({ status: 'failed', shipmentId: null });
    // The metrics call none of them a success (a 201 label is a shipment).
    expect(await carrierCalls()).toEqual({ 'default:no_shipment_id': MAX_ATTEMPTS });
  });

  it.each([
    ['a lone surrogate', '{"id":"shp_\\ud800"}'],
    ['a control character', '{"id":"shp_\\u001b[2J"}'],
    ['256 characters', JSON.stringify({ id: 'x'.repeat(256) })],
  ])('an id with %s is no shipment id either: retried, then dispatched once the carrier answers properly', async (_what, body) => {
    sim.answerWith({ status: 201, body }, 1);
    const orderId = await paidOrder();
    await settled(orderId, 'dispatched');
    expect(sim.calls.map((c) => c.result)).toEqual(['answer', 'replayed']);
    expect(await d.outboxMessage(orderId)).toMatchObject({ status: 'dispatched', attempts: 2 });
    expect((await d.getOrder(orderId)).fulfillment.shipmentId).toBe(sim.shipments[0].id);
  });

  it("a host adapter's yes with an id PostgreSQL refuses is no shipment id either: dead after CARRIER_MAX_ATTEMPTS calls", async () => {
    const orderId = await paidOrder({ carrier: 'unrecordable' });
    await settled(orderId, 'dead');
    expect(await d.outboxMessage(orderId)).toEqual({
      status: 'dead',
      attempts: MAX_ATTEMPTS,
      lastError: `carrier unrecordable answered an unusable shipment id (after ${MAX_ATTEMPTS} attempts)`,
      dispatched: false,
    });
    expect(await t.get(OutboxRelay).runOnce()).toBe(0);
    expect(adapter.calls).toBe(MAX_ATTEMPTS);
    expect((await d.getOrder(orderId)).fulfillment).toMatchObject({ status: 'failed', shipmentId: null });
    // The adapter said ok, but with nothing that could be kept: not a success in the metrics.
    expect(await carrierCalls()).toEqual({ 'unrecordable:no_shipment_id': MAX_ATTEMPTS });
  });

  it("a host adapter's throw whose message PostgreSQL cannot store: recorded as said, made storable, dead after the budget", async () => {
    const orderId = await paidOrder({ carrier: 'throwing' });
    await settled(orderId, 'dead');
    const reason = `carrier adapter failed: licence server   down  [31m (after ${MAX_ATTEMPTS} attempts)`;
    expect(await d.outboxMessage(orderId)).toEqual({ status: 'dead', attempts: MAX_ATTEMPTS, lastError: reason, dispatched: false });
    expect(throwing.calls).toBe(MAX_ATTEMPTS);
    const [row] = await t.dataSource.query(`SELECT status, last_error AS "lastError" FROM fulfillments WHERE order_id = $1`, [orderId]);
    expect(row).toEqual({ status: 'failed', lastError: reason });
  });

  it('a 201 of 20 MiB: read up to the bound, the rest refused; a "2xx without an id", retried, one shipment', async () => {
    sim.answerWith({ status: 201, streamBytes: 20 * MiB }, 1);
    const orderId = await paidOrder();
    await settled(orderId, 'dispatched');
    expect(sim.calls.map((c) => c.result)).toEqual(['answer', 'replayed']);
    expect(await d.outboxMessage(orderId)).toMatchObject({ status: 'dispatched', attempts: 2, lastError: null });
    expect(sim.shipments.length).toBe(1);
    // The client hung up long before the end: what crossed is the bound plus the sockets' buffers.
    await eventually(async () => sim.streamed[0]?.closedEarly, 5_000, 'the oversized answer cut off');
    expect(sim.streamed[0].bytesWritten).toBeLessThan(20 * MiB);
    expect(await carrierCalls()).toEqual({ 'default:no_shipment_id': 1, 'default:200': 1 });
  });

  it('a 500 of 20 MiB: retried as a 500, its body not read past the bound', async () => {
    sim.answerWith({ status: 500, streamBytes: 20 * MiB }, 1);
    const orderId = await paidOrder();
    await settled(orderId, 'dispatched');
    expect(sim.calls.map((c) => c.result)).toEqual(['answer', 'replayed']);
    expect(await d.outboxMessage(orderId)).toMatchObject({ status: 'dispatched', attempts: 2 });
    await eventually(async () => sim.streamed[0]?.closedEarly, 5_000, 'the oversized answer cut off');
    expect(sim.streamed[0].bytesWritten).toBeLessThan(20 * MiB);
    expect(await carrierCalls()).toEqual({ 'default:500': 1, 'default:200': 1 });
  });
});
