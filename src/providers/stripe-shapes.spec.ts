import {
  CURRENT_API_VERSION,
  OLD_API_VERSION,
  published,
  refundObject,
  STRIPE_API_VERSIONS,
  stripeEvent,
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
        // 2020-08-27 lists the charge's refunds: each confirms a refund the module may have asked for.
        ...(version === OLD_API_VERSION
          ? { refundOutcomes: body.data.object.refunds.data.map((r: { id: string }) => ({ id: r.id, status: 'succeeded' })) }
          : {}),
        declaredAccount: null,
        occurredAt: new Date(body.created * 1000),
      });
    }
    if (version === OLD_API_VERSION) expect(read(full).event?.refundOutcomes).toHaveLength(2);
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

  describe('the events of one Refund: its outcome, which moves no amount (docs/commands.md#stripe)', () => {
    const refundEventOf = (type: string, status: string, fields: Record<string, unknown> = {}) => {
      const p = stripePayment(version, { orderId: ORDER_ID, account: 'acct_1Connected0000000000' });
      const refund: Record<string, any> = { ...refundObject(p, 700), status, ...fields };
      return { p, refund, body: stripeEvent(p, type, refund).body };
    };

    it.each(['refund.updated', 'charge.refund.updated', 'refund.created'])('%s with status succeeded: refund_outcome succeeded, on its PaymentIntent', (type) => {
      const { p, refund, body } = refundEventOf(type, 'succeeded');
      const { identity, event } = read(body);
      expect(identity.resourceId).toBe(p.paymentIntentId);
      expect(event).toEqual({
        kind: 'refund_outcome',
        resourceId: p.paymentIntentId,
        orderId: null,
        amount: null,
        currency: upper(p),
        refundedAmount: null,
        refundOutcomes: [{ id: refund.id, status: 'succeeded' }],
        declaredAccount: 'acct_1Connected0000000000',
        occurredAt: new Date(body.created * 1000),
      });
    });

    it.each([
      ['refund.updated', 'failed', 'expired_or_canceled_card', 'expired_or_canceled_card'],
      ['charge.refund.updated', 'failed', 'lost_or_stolen_card', 'lost_or_stolen_card'],
      ['refund.updated', 'canceled', null, 'canceled'],
      ['refund.failed', 'failed', 'declined', 'declined'],
      // refund.failed says it failed whatever the status it carries.
      ['refund.failed', 'pending', null, 'failed'],
    ] as const)('%s with status %s (failure_reason %s): refund_outcome failed, reason %s', (type, status, failureReason, reason) => {
      const { p, refund, body } = refundEventOf(type, status, { failure_reason: failureReason });
      expect(read(body).event).toMatchObject({
        kind: 'refund_outcome',
        resourceId: p.paymentIntentId,
        amount: null,
        refundedAmount: null,
        refundOutcomes: [{ id: refund.id, status: 'failed', reason }],
      });
    });

    it.each([
      ['refund.updated', 'pending'],
      ['refund.created', 'requires_action'],
    ])('%s with status %s: no outcome yet, ignored', (type, status) => {
      expect(read(refundEventOf(type, status).body).event).toBeNull();
    });

    it('a refund without a PaymentIntent (the Charges API): ignored', () => {
      expect(read(refundEventOf('refund.updated', 'failed', { payment_intent: null }).body).event).toBeNull();
    });
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
