import {
  CURRENT_API_VERSION,
  OLD_API_VERSION,
  published,
  STRIPE_API_VERSIONS,
  stripeEvents,
  stripePayment,
  StripeApiVersion,
} from '../../test/fixtures/stripe';
import { stripeProvider } from './stripe.provider';

/**
 * What the Stripe adapter reads of the objects Stripe publishes (test/fixtures/stripe: copied from
 * stripe/openapi openapi/fixtures3.json), on an old (2020-08-27: PaymentIntent `charges` list, Charge
 * `refunds` list) and the current API version (`latest_charge`, no lists).
 */
const ORDER_ID = '0190a8e4-1c2d-7e3f-8a4b-5c6d7e8f9a0b';

function read(body: Record<string, any>) {
  return {
    identity: stripeProvider.identify(body, {}),
    event: stripeProvider.normalize(body, body.type),
  };
}

describe.each(STRIPE_API_VERSIONS)("the Stripe adapter on Stripe's published objects, API version %s", (version: StripeApiVersion) => {
  const payment = () => stripePayment(version, { orderId: ORDER_ID });
  const upper = (p: { currency: string }) => p.currency.toUpperCase();

  it('the envelope keeps every published field of the Event object, and the object every field of its kind', () => {
    const e = stripeEvents(payment());
    const { body } = e.succeeded();
    for (const field of Object.keys(published(version, 'event'))) expect(body).toHaveProperty([field]);
    for (const field of Object.keys(published(version, 'payment_intent'))) expect(body.data.object).toHaveProperty([field]);
    expect(body).toMatchObject({ object: 'event', api_version: version, livemode: false, pending_webhooks: 1 });
    expect(body.request).toEqual({ id: null, idempotency_key: null });
    if (version === OLD_API_VERSION) {
      expect(body.data.object.charges).toMatchObject({ object: 'list', data: [{ id: e.payment.chargeId }] });
      expect(body.data.object).not.toHaveProperty('latest_charge');
    } else {
      expect(body.data.object.latest_charge).toBe(e.payment.chargeId);
      expect(body.data.object).not.toHaveProperty('charges');
    }
  });

  it('payment_intent.succeeded: the PaymentIntent, amount_received, the order id of its metadata', () => {
    const e = stripeEvents(payment());
    const { eventId, body } = e.succeeded();
    const { identity, event } = read(body);
    expect(identity).toEqual({
      eventId,
      eventType: 'payment_intent.succeeded',
      resourceId: e.payment.paymentIntentId,
      deliveryId: null,
      account: null,
      apiVersion: version,
    });
    expect(event).toEqual({
      kind: 'succeeded',
      resourceId: e.payment.paymentIntentId,
      orderId: ORDER_ID,
      amount: { form: 'minor', value: e.payment.amount },
      currency: upper(e.payment),
      refundedAmount: null,
      declaredAccount: null,
      occurredAt: new Date(body.created * 1000),
    });
  });

  it("charge.refunded, partial then full: the charge's PaymentIntent and its cumulative amount_refunded, never one refund's amount", () => {
    const e = stripeEvents(payment());
    const partial = e.refunded(500).body;
    const full = e.refunded(e.payment.amount - 500).body;
    expect(partial.data.object.amount_refunded).toBe(500);
    expect(full.data.object.amount_refunded).toBe(e.payment.amount);
    if (version === OLD_API_VERSION) {
      // The charge lists its refunds, newest first: the last refund is not the refunded total.
      expect(full.data.object.refunds.data.map((r: { amount: number }) => r.amount)).toEqual([e.payment.amount - 500, 500]);
    } else {
      expect(full.data.object).not.toHaveProperty('refunds');
    }
    for (const [body, refunded] of [[partial, 500], [full, e.payment.amount]] as const) {
      const { identity, event } = read(body);
      expect(identity.resourceId).toBe(e.payment.paymentIntentId);
      expect(identity.apiVersion).toBe(version);
      expect(event).toEqual({
        kind: 'refunded',
        resourceId: e.payment.paymentIntentId,
        orderId: ORDER_ID,
        amount: { form: 'minor', value: e.payment.amount },
        currency: upper(e.payment),
        refundedAmount: { form: 'minor', value: refunded },
        declaredAccount: null,
        occurredAt: new Date(body.created * 1000),
      });
    }
  });

  it("charge.dispute.created: the dispute's payment_intent, no amount checked, no order id (a dispute has none)", () => {
    const e = stripeEvents(payment());
    const { body } = e.disputeCreated();
    expect(body.data.object).toMatchObject({ object: 'dispute', charge: e.payment.chargeId, metadata: {} });
    const { identity, event } = read(body);
    expect(identity.resourceId).toBe(e.payment.paymentIntentId);
    expect(event).toEqual({
      kind: 'disputed',
      resourceId: e.payment.paymentIntentId,
      orderId: null,
      amount: null,
      currency: upper(e.payment),
      refundedAmount: null,
      declaredAccount: null,
      occurredAt: new Date(body.created * 1000),
    });
  });

  it.each([
    ['won', 'dispute_won'],
    ['lost', 'dispute_lost'],
    ['warning_closed', null],
  ] as const)('charge.dispute.closed with status %s: %s', (status, kind) => {
    const e = stripeEvents(payment());
    e.disputeCreated();
    const { body } = e.disputeClosed(status);
    const { identity, event } = read(body);
    expect(identity.resourceId).toBe(e.payment.paymentIntentId);
    expect(event?.kind ?? null).toBe(kind);
    if (event) expect(event).toMatchObject({ resourceId: e.payment.paymentIntentId, amount: null, refundedAmount: null });
  });

  it('a Connect event: the account the envelope declares', () => {
    const e = stripeEvents(stripePayment(version, { orderId: ORDER_ID, account: 'acct_1Connected0000000000' }));
    const { identity, event } = read(e.succeeded().body);
    expect(identity.account).toBe('acct_1Connected0000000000');
    expect(event?.declaredAccount).toBe('acct_1Connected0000000000');
  });
});

describe('the published objects exactly as published, in an event', () => {
  const envelope = (version: StripeApiVersion, type: string, object: Record<string, unknown>) => ({
    ...published(version, 'event'),
    api_version: version,
    type,
    data: { object },
  });

  it('a Charge without a PaymentIntent (the Charges API; the current published Charge): ignored, keyed by the charge', () => {
    const charge = published(CURRENT_API_VERSION, 'charge');
    expect(charge.payment_intent).toBeNull();
    const body = envelope(CURRENT_API_VERSION, 'charge.refunded', charge);
    expect(stripeProvider.identify(body, {}).resourceId).toBe(charge.id);
    expect(stripeProvider.normalize(body, 'charge.refunded')).toBeNull();
  });

  it('a Dispute without a PaymentIntent (the current published Dispute): ignored', () => {
    const dispute = published(CURRENT_API_VERSION, 'dispute');
    expect(dispute.payment_intent).toBeNull();
    expect(stripeProvider.normalize(envelope(CURRENT_API_VERSION, 'charge.dispute.created', dispute), 'charge.dispute.created')).toBeNull();
  });

  it('the 2020-08-27 published Dispute names its PaymentIntent: disputed, on that PaymentIntent', () => {
    const dispute = published(OLD_API_VERSION, 'dispute');
    const body = envelope(OLD_API_VERSION, 'charge.dispute.created', dispute);
    expect(stripeProvider.identify(body, {}).resourceId).toBe(dispute.payment_intent);
    expect(stripeProvider.normalize(body, 'charge.dispute.created')).toMatchObject({
      kind: 'disputed',
      resourceId: dispute.payment_intent,
      currency: 'USD',
      amount: null,
    });
  });

  it('the published Event itself (plan.created, api_version null): identified, not acted on', () => {
    for (const version of STRIPE_API_VERSIONS) {
      const event = published(version, 'event');
      expect(stripeProvider.identify(event, {})).toMatchObject({ eventId: event.id, eventType: event.type });
      expect(stripeProvider.normalize(event, event.type)).toBeNull();
    }
  });
});
