import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import {
  STRIPE_API_VERSIONS,
  stripeEvents,
  stripePayment,
  StripeApiVersion,
} from '../fixtures/stripe';
import { AUTH, eventually, TestApp } from '../support/app';
import { useCarrierSimulator } from '../support/carrier-suite';
import { driver } from '../support/domain';

/**
 * Stripe's published objects (test/fixtures/stripe, from stripe/openapi openapi/fixtures3.json) as
 * signed webhooks on an old (2020-08-27) and the current API version, through the whole service:
 * the receive path, the BullMQ workers, the Payment and Order aggregates on the real PostgreSQL,
 * the outbox to the carrier simulator (CONTRACT §2.3, §3, §4).
 */
const ENDPOINT = {
  id: 'stripe-published',
  provider: 'stripe' as const,
  secrets: ['whsec_published_shapes_test_secret'],
  merchantAccountId: 'acct_1PublishedShapes',
};

describe.each(STRIPE_API_VERSIONS)("Stripe's published objects drive the service, API version %s", (version: StripeApiVersion) => {
  const sim = new CarrierSimulator();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  useCarrierSimulator(
    sim,
    (url) => ({ endpoints: [ENDPOINT], carriers: [{ name: 'default', url, timeoutMs: 1_000 }] }),
    (app) => {
      t = app;
      d = driver(app);
    },
  );

  /** Minor units as the order's decimal string (both versions' currencies have two decimals). */
  const decimal = (minor: number) => (minor / 100).toFixed(2);

  /** Sends `body` signed as Stripe does; resolves with its archive item once it is processed. */
  async function deliver(eventId: string, body: Record<string, unknown>) {
    const text = JSON.stringify(body);
    const res = await d
      .http()
      .post(`/webhooks/${ENDPOINT.id}`)
      .set(signedHeaders('stripe', ENDPOINT.secrets[0], text))
      .send(text);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId });
    await d.processed(eventId);
    const archive = await d.http().get('/admin/webhook-deliveries').query({ eventId }).set(AUTH);
    expect(archive.status).toBe(200);
    expect(archive.body.items.length).toBe(1);
    const [item] = archive.body.items;
    // The archive keeps the envelope's api_version and where the event came from.
    expect(item).toMatchObject({
      endpointId: ENDPOINT.id,
      provider: 'stripe',
      merchantAccountId: ENDPOINT.merchantAccountId,
      eventId,
      eventType: body.type,
      deliveryId: null,
      apiVersion: version,
      source: 'webhook',
    });
    // …and the envelope itself, every published field of it.
    const detail = await d.http().get(`/admin/webhook-deliveries/${item.id}`).set(AUTH);
    expect(detail.body.body).toEqual(body);
    return item;
  }

  const shipmentsFor = (orderId: string) => sim.shipments.filter((s) => s.orderId === orderId);
  const fulfillmentsOf = (orderId: string) => d.count(`SELECT 1 FROM fulfillments WHERE order_id = $1`, [orderId]);
  const paymentsOf = (orderId: string) => d.count(`SELECT 1 FROM payments WHERE order_id = $1`, [orderId]);

  /**
   * An order for the published PaymentIntent's amount and currency, paid by
   * `payment_intent.succeeded` (matched by `metadata.order_id`) and fulfilled by the carrier.
   */
  async function paidAndFulfilled() {
    const base = stripePayment(version);
    const order = await d.createOrder(decimal(base.amount), base.currency.toUpperCase());
    const events = stripeEvents({ ...base, orderId: order.id });
    const succeeded = events.succeeded();
    const item = await deliver(succeeded.eventId, succeeded.body);
    expect(item).toMatchObject({
      eventType: 'payment_intent.succeeded',
      resourceId: base.paymentIntentId,
      status: 'processed',
      outcome: 'applied',
    });
    await eventually(async () => (await d.getOrder(order.id)).status === 'fulfilled', 15_000, `order ${order.id} fulfilled`);
    return { order, events, succeeded, payment: events.payment };
  }

  it('payment_intent.succeeded: the order is paid, then fulfilled with exactly one shipment', async () => {
    const { order, payment, events, succeeded } = await paidAndFulfilled();
    const view = await d.getOrder(order.id);
    const shipments = shipmentsFor(order.id);
    expect(shipments.length).toBe(1);
    expect(await fulfillmentsOf(order.id)).toBe(1);
    expect(await paymentsOf(order.id)).toBe(1);
    expect(view.status).toBe('fulfilled');
    expect(view.fulfillment).toMatchObject({ status: 'dispatched', shipmentId: shipments[0].id });
    expect(view.payments.length).toBe(1);
    expect(view.payments[0]).toMatchObject({
      provider: 'stripe',
      providerPaymentId: payment.paymentIntentId,
      merchantAccountId: ENDPOINT.merchantAccountId,
      status: 'succeeded',
      amount: decimal(payment.amount),
      currency: payment.currency.toUpperCase(),
      refundedAmount: '0.00',
    });

    // Stripe sending the same event again (the same bytes): a duplicate, nothing changes.
    const text = JSON.stringify(succeeded.body);
    const resent = await d.http().post(`/webhooks/${ENDPOINT.id}`).set(signedHeaders('stripe', ENDPOINT.secrets[0], text)).send(text);
    expect(resent.status).toBe(200);
    expect(resent.body).toEqual({ status: 'duplicate', eventId: succeeded.eventId });
    expect(await d.count(`SELECT 1 FROM webhook_inbox WHERE event_id = $1`, [succeeded.eventId])).toBe(1);

    // Another event for the same PaymentIntent succeeding (a new evt_…): already applied, nothing shipped again.
    const other = events.succeeded();
    expect((await deliver(other.eventId, other.body)).outcome).toBe('already_applied');
    expect(shipmentsFor(order.id).length).toBe(1);
    expect(await fulfillmentsOf(order.id)).toBe(1);
    expect(await paymentsOf(order.id)).toBe(1);
  });

  it('charge.refunded, partial (amount_refunded < amount): the payment is partially_refunded, the order stays fulfilled', async () => {
    const { order, events, payment } = await paidAndFulfilled();
    const partial = events.refunded(500);
    expect(partial.body.data).toMatchObject({ object: { amount: payment.amount, amount_refunded: 500, refunded: false } });
    expect(await deliver(partial.eventId, partial.body)).toMatchObject({
      eventType: 'charge.refunded',
      resourceId: payment.paymentIntentId,
      status: 'processed',
      outcome: 'applied',
    });
    const view = await d.getOrder(order.id);
    expect(view.status).toBe('fulfilled');
    expect(view.payments.length).toBe(1);
    expect(view.payments[0]).toMatchObject({ status: 'partially_refunded', refundedAmount: '5.00', amount: decimal(payment.amount) });
    expect(shipmentsFor(order.id).length).toBe(1);
    expect(await fulfillmentsOf(order.id)).toBe(1);
  });

  it('charge.refunded, partial then the rest (cumulative amount_refunded = amount): the payment and the order are refunded', async () => {
    const { order, events, payment } = await paidAndFulfilled();
    const partial = events.refunded(500);
    await deliver(partial.eventId, partial.body);
    // The second refund is of the rest; the charge says how much is refunded in all.
    const rest = events.refunded(payment.amount - 500);
    expect(rest.body.data).toMatchObject({ object: { amount_refunded: payment.amount, refunded: true } });
    expect(await deliver(rest.eventId, rest.body)).toMatchObject({ status: 'processed', outcome: 'applied' });
    const view = await d.getOrder(order.id);
    expect(view.status).toBe('refunded');
    expect(view.payments.length).toBe(1);
    expect(view.payments[0]).toMatchObject({ status: 'refunded', refundedAmount: decimal(payment.amount) });
    // The shipment made before the refund stays the one shipment.
    expect(shipmentsFor(order.id).length).toBe(1);
    expect(await fulfillmentsOf(order.id)).toBe(1);
    expect(view.fulfillment).toMatchObject({ status: 'dispatched', shipmentId: shipmentsFor(order.id)[0].id });
  });

  it('charge.refunded, full at once: the payment and the order are refunded', async () => {
    const { order, events, payment } = await paidAndFulfilled();
    const full = events.refunded(payment.amount);
    expect(await deliver(full.eventId, full.body)).toMatchObject({
      eventType: 'charge.refunded',
      resourceId: payment.paymentIntentId,
      status: 'processed',
      outcome: 'applied',
    });
    const view = await d.getOrder(order.id);
    expect(view.status).toBe('refunded');
    expect(view.payments[0]).toMatchObject({ status: 'refunded', refundedAmount: decimal(payment.amount) });
    expect(await paymentsOf(order.id)).toBe(1);
    expect(shipmentsFor(order.id).length).toBe(1);
  });

  it('charge.dispute.created: the payment is disputed (found by the dispute\'s payment_intent), the order stays fulfilled', async () => {
    const { order, events, payment } = await paidAndFulfilled();
    const created = events.disputeCreated();
    expect(created.body.data).toMatchObject({ object: { object: 'dispute', payment_intent: payment.paymentIntentId, metadata: {} } });
    expect(await deliver(created.eventId, created.body)).toMatchObject({
      eventType: 'charge.dispute.created',
      resourceId: payment.paymentIntentId,
      status: 'processed',
      outcome: 'applied',
    });
    const view = await d.getOrder(order.id);
    expect(view.status).toBe('fulfilled');
    expect(view.payments.length).toBe(1);
    expect(view.payments[0]).toMatchObject({ status: 'disputed', refundedAmount: '0.00' });
    expect(await paymentsOf(order.id)).toBe(1);
    expect(shipmentsFor(order.id).length).toBe(1);
  });

  it('charge.dispute.closed with status won: the payment is succeeded again, the order stays fulfilled, nothing shipped again', async () => {
    const { order, events, payment } = await paidAndFulfilled();
    const created = events.disputeCreated();
    await deliver(created.eventId, created.body);
    const won = events.disputeClosed('won');
    expect(won.body.data).toMatchObject({ object: { status: 'won', id: created.body.data.object.id } });
    expect(await deliver(won.eventId, won.body)).toMatchObject({
      eventType: 'charge.dispute.closed',
      resourceId: payment.paymentIntentId,
      status: 'processed',
      outcome: 'applied',
    });
    const view = await d.getOrder(order.id);
    expect(view.status).toBe('fulfilled');
    expect(view.payments.length).toBe(1);
    expect(view.payments[0]).toMatchObject({ status: 'succeeded', refundedAmount: '0.00', amount: decimal(payment.amount) });
    expect(await paymentsOf(order.id)).toBe(1);
    expect(shipmentsFor(order.id).length).toBe(1);
    expect(await fulfillmentsOf(order.id)).toBe(1);
  });
});
