import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { OnPaymentEvent, type PaymentWebhooksEvent } from '../../src';
import { OutboxRelay } from '../../src/outbox/outbox-relay.service';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { eventually, TestApp } from '../support/app';
import { bodies, uniqueId } from '../support/domain';
import { driver, useEventsApp } from '../events/support';

/**
 * Issue 12, finding 2, the outbox's side: when the transaction that records an attempt's outcome
 * fails (here a host's in-transaction `order.fulfilled` subscriber that throws, its message carrying
 * a NUL that PostgreSQL cannot store), the attempt is still recorded, in a transaction of its own
 * that the bad value cannot reach: the count rises, CARRIER_MAX_ATTEMPTS ends it as `dead`, and the
 * fulfillment is `failed`. Nothing loops. Real PostgreSQL and Redis; the carrier simulator.
 */

const MAX_ATTEMPTS = 3;
/** What the subscriber throws, per order: the message it throws with. */
const refusals = new Map<string, string>();
const heard = new Map<string, number>();

@Injectable()
class RefusingShipmentBook {
  @OnPaymentEvent('order.fulfilled', { inTransaction: true })
  async shipped(event: PaymentWebhooksEvent, _em: EntityManager): Promise<void> {
    const orderId = event.data.order.id;
    heard.set(orderId, (heard.get(orderId) ?? 0) + 1);
    const message = refusals.get(orderId);
    if (message !== undefined) throw new Error(message);
  }
}

describe('an outcome that cannot be recorded still spends an attempt (issue 12: 2)', () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  useEventsApp(sim, () => ({ carrierMaxAttempts: MAX_ATTEMPTS }), [RefusingShipmentBook], (app) => {
    t = app;
    d = driver(app);
  });

  async function paidOrder(refusal: string): Promise<string> {
    const order = await d.createOrder();
    refusals.set(order.id, refusal);
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'), { orderId: order.id });
    await d.send('standard-main', 'standard', body, { eventId });
    expect((await d.processed(eventId)).outcome).toBe('applied');
    return order.id;
  }

  it.each([
    ['a plain message', 'shipment book refused', 'shipment book refused'],
    // The message would poison a fallback that stored it as it is: PostgreSQL refuses NUL in text.
    ['a NUL in its message', 'shipment book refused shp_\u0000x', 'shipment book refused shp_ x'],
  ])('a subscriber refusing every time, with %s: every attempt recorded, then dead; the fulfillment failed', async (_what, refusal, stored) => {
    const orderId = await paidOrder(refusal);
    await eventually(async () => (await d.outboxMessage(orderId))?.status === 'dead', 20_000, 'a dead message');
    expect(await d.outboxMessage(orderId)).toEqual({
      status: 'dead',
      attempts: MAX_ATTEMPTS,
      lastError: `the outcome could not be recorded (error): RefusingShipmentBook.shipped threw in the transaction of order.fulfilled: ${stored} (after ${MAX_ATTEMPTS} attempts)`,
      dispatched: false,
    });
    // Exactly the budget of calls, each answered with the one shipment; nothing more is due.
    expect(await t.get(OutboxRelay).runOnce()).toBe(0);
    expect(sim.calls.map((c) => c.result)).toEqual(['created', ...Array(MAX_ATTEMPTS - 1).fill('replayed')]);
    expect(sim.shipments.length).toBe(1);
    expect(heard.get(orderId)).toBe(MAX_ATTEMPTS);
    const view = await d.getOrder(orderId);
    expect(view.status).toBe('paid');
    expect(view.fulfillment).toMatchObject({ status: 'failed', shipmentId: null });
  });
});
