import { Injectable } from '@nestjs/common';
import { OnPaymentEvent, PaymentWebhooksEvent } from '../../src';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { AUTH, eventually, TestApp } from '../support/app';
import { bodies, uniqueId } from '../support/domain';
import { Calls, driver, eventMessages, expectEventBody, outboxSettled, stripeChargeEvent, useEventsApp } from './support';

/**
 * CONTRACT §7 types: each change of an order or a payment is exactly its event — API actions
 * (mark-paid, cancel) with no payment and no source event; refunds (again each time the refunded
 * amount rises), a full refund with the order's, a dispute and its win — and nothing else.
 */

const received = new Calls();

@Injectable()
class AllEvents {
  @OnPaymentEvent('*')
  got(event: PaymentWebhooksEvent): void {
    received.push(event);
  }
}

describe('§7 event types per change (workers on, carrier simulator)', () => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  useEventsApp(sim, () => ({ tuning: { inboxBackoffMs: 50 } }), [AllEvents], (app) => {
    t = app;
    d = driver(app);
  });

  /** Once every message is delivered: the order's events exactly as written, and as received. */
  async function settledTypes(orderId: string): Promise<string[]> {
    await outboxSettled(t);
    const written = (await eventMessages(t, orderId)).map((m) => m.type.slice('event.'.length));
    expect(received.typesOf(orderId)).toEqual(written);
    return written;
  }

  const fulfilled = (orderId: string) =>
    eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 15_000, `order ${orderId} fulfilled`);

  async function deliver(endpoint: string, provider: 'paymos' | 'stripe', e: { eventId: string; body: object }, outcome = 'applied') {
    expect((await d.send(endpoint, provider, e.body, { eventId: e.eventId })).body).toEqual({ status: 'accepted', eventId: e.eventId });
    expect(await d.processed(e.eventId)).toMatchObject({ status: 'processed', outcome });
  }

  it('mark-paid: order.paid with payment null and sourceEventId null, then order.fulfilled', async () => {
    const order = await d.createOrder();
    const res = await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'wire transfer' });
    expect(res.status).toBe(200);
    await fulfilled(order.id);
    // Marked paid again: a fulfilled order is refused (409), and nothing is announced.
    expect((await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'again' })).status).toBe(409);
    expect(await settledTypes(order.id)).toEqual(['order.paid', 'order.fulfilled']);
    const [paid, shipped] = received.of(order.id);
    expectEventBody(paid, { type: 'order.paid', orderId: order.id, orderStatus: 'paid', payment: null, sourceEventId: null });
    expectEventBody(shipped, { type: 'order.fulfilled', orderId: order.id, orderStatus: 'fulfilled', payment: null, sourceEventId: null });
  });

  it('cancel: order.canceled, nothing else', async () => {
    const order = await d.createOrder();
    expect((await d.http().post(`/orders/${order.id}/cancel`).set(AUTH)).status).toBe(200);
    // A second cancel is refused (409) and announces nothing.
    expect((await d.http().post(`/orders/${order.id}/cancel`).set(AUTH)).status).toBe(409);
    expect(await settledTypes(order.id)).toEqual(['order.canceled']);
    expectEventBody(received.of(order.id)[0], { type: 'order.canceled', orderId: order.id, orderStatus: 'canceled', payment: null, sourceEventId: null });
  });

  it('Paymos refunds: partially_refunded, again when the amount rises, then refunded + order.refunded; a repeated amount emits nothing', async () => {
    const order = await d.createOrder();
    const invoice = uniqueId('inv');
    const paid = bodies.paymos('invoice.paid', invoice, { orderId: order.id });
    await deliver('paymos-a', 'paymos', paid);
    await fulfilled(order.id);

    const first = bodies.paymos('invoice.refunded', invoice, { orderId: order.id, refunded: '20.00' });
    await deliver('paymos-a', 'paymos', first);
    // Another event stating the same refunded amount: nothing new.
    const same = bodies.paymos('invoice.refunded', invoice, { orderId: order.id, refunded: '20.00' });
    await deliver('paymos-a', 'paymos', same, 'already_applied');
    const second = bodies.paymos('invoice.refunded', invoice, { orderId: order.id, refunded: '30.00' });
    await deliver('paymos-a', 'paymos', second);
    const full = bodies.paymos('invoice.refunded', invoice, { orderId: order.id, refunded: '49.90' });
    await deliver('paymos-a', 'paymos', full);

    expect(await settledTypes(order.id)).toEqual([
      'payment.succeeded',
      'order.paid',
      'order.fulfilled',
      'payment.partially_refunded',
      'payment.partially_refunded',
      'payment.refunded',
      'order.refunded',
    ]);
    const events = received.of(order.id);
    const payment = { provider: 'paymos', providerPaymentId: invoice, amount: '49.90', currency: 'EUR' };
    expectEventBody(events[3], {
      type: 'payment.partially_refunded',
      orderId: order.id,
      payment: { ...payment, status: 'partially_refunded', refundedAmount: '20.00' },
      sourceEventId: first.eventId,
    });
    expectEventBody(events[4], {
      type: 'payment.partially_refunded',
      orderId: order.id,
      payment: { ...payment, status: 'partially_refunded', refundedAmount: '30.00' },
      sourceEventId: second.eventId,
    });
    expectEventBody(events[5], { type: 'payment.refunded', orderId: order.id, payment: { ...payment, status: 'refunded', refundedAmount: '49.90' }, sourceEventId: full.eventId });
    expectEventBody(events[6], {
      type: 'order.refunded',
      orderId: order.id,
      orderStatus: 'refunded',
      payment: { ...payment, status: 'refunded', refundedAmount: '49.90' },
      sourceEventId: full.eventId,
    });
    expect(new Set(events.map((e) => e.id)).size).toBe(7);
  });

  it('Stripe refunds (charge.refunded with amount_refunded): partially_refunded, then refunded + order.refunded', async () => {
    const order = await d.createOrder();
    const pi = uniqueId('pi');
    await d.registerPayment(order.id, 'stripe', pi);
    await deliver('stripe-main', 'stripe', bodies.stripe('payment_intent.succeeded', pi));
    await fulfilled(order.id);
    const charge = uniqueId('ch');
    const partial = stripeChargeEvent('charge.refunded', pi, { id: charge, object: 'charge', amount: 4990, amount_refunded: 1000, refunded: false, status: 'succeeded' });
    await deliver('stripe-main', 'stripe', partial);
    const full = stripeChargeEvent('charge.refunded', pi, { id: charge, object: 'charge', amount: 4990, amount_refunded: 4990, refunded: true, status: 'succeeded' });
    await deliver('stripe-main', 'stripe', full);

    expect(await settledTypes(order.id)).toEqual(['payment.succeeded', 'order.paid', 'order.fulfilled', 'payment.partially_refunded', 'payment.refunded', 'order.refunded']);
    const events = received.of(order.id);
    expectEventBody(events[3], { type: 'payment.partially_refunded', orderId: order.id, payment: { status: 'partially_refunded', refundedAmount: '10.00' }, sourceEventId: partial.eventId });
    expectEventBody(events[4], { type: 'payment.refunded', orderId: order.id, payment: { status: 'refunded', refundedAmount: '49.90' }, sourceEventId: full.eventId });
    expectEventBody(events[5], { type: 'order.refunded', orderId: order.id, orderStatus: 'refunded', payment: { status: 'refunded' }, sourceEventId: full.eventId });
  });

  it('Stripe dispute created, then closed won: payment.disputed, payment.dispute_won; repeats emit nothing', async () => {
    const order = await d.createOrder();
    const pi = uniqueId('pi');
    await d.registerPayment(order.id, 'stripe', pi);
    await deliver('stripe-main', 'stripe', bodies.stripe('payment_intent.succeeded', pi));
    await fulfilled(order.id);
    const dispute = { id: uniqueId('dp'), object: 'dispute', amount: 4990, charge: uniqueId('ch') };
    const opened = stripeChargeEvent('charge.dispute.created', pi, { ...dispute, status: 'needs_response' });
    await deliver('stripe-main', 'stripe', opened);
    const won = stripeChargeEvent('charge.dispute.closed', pi, { ...dispute, status: 'won' });
    await deliver('stripe-main', 'stripe', won);
    // The same outcome told again, and a late opening of the same dispute: nothing new.
    await deliver('stripe-main', 'stripe', stripeChargeEvent('charge.dispute.closed', pi, { ...dispute, status: 'won' }), 'already_applied');
    await deliver('stripe-main', 'stripe', stripeChargeEvent('charge.dispute.created', pi, { ...dispute, status: 'needs_response' }), 'stale');

    expect(await settledTypes(order.id)).toEqual(['payment.succeeded', 'order.paid', 'order.fulfilled', 'payment.disputed', 'payment.dispute_won']);
    const events = received.of(order.id);
    expectEventBody(events[3], { type: 'payment.disputed', orderId: order.id, orderStatus: 'fulfilled', payment: { status: 'disputed' }, sourceEventId: opened.eventId });
    expectEventBody(events[4], { type: 'payment.dispute_won', orderId: order.id, orderStatus: 'fulfilled', payment: { status: 'succeeded' }, sourceEventId: won.eventId });
    expect((await d.getOrder(order.id)).status).toBe('fulfilled');
  });
});
