import { randomInt, randomUUID } from 'node:crypto';
import type { HmacProviderName } from '../../providers';
import { Money } from '../../payments/money';
import { adyenEventId, newPspReference, notificationBody } from './adyen';

/**
 * The providers the command line sends as: those signed over the raw bytes, one event a delivery,
 * and Adyen (signed items inside the body, one or more a delivery). Not Mollie: its deliveries are
 * authenticated by fetching the payment from Mollie's API, which no sender but Mollie can answer.
 */
export type RemoteProvider = HmacProviderName | 'adyen' | 'paypal' | 'checkout' | 'square' | 'paddle';

/** Every provider the command line plays, in the order its usage lists them. */
export const REMOTE_PROVIDERS: readonly RemoteProvider[] = ['paymos', 'factuarea', 'stripe', 'standard', 'adyen', 'paypal', 'checkout', 'square', 'paddle'];

/**
 * Where a payment stands in the events a provider sends about it: `early` is the state before the
 * money (Paymos/Factuarea/Standard `pending`; Stripe has no pending event, so its `processing`),
 * `processing` the step between (where the provider has one), `succeeded` the money; `ignored` an
 * event of a type the service records and does not act on.
 */
export type EventKind = 'early' | 'processing' | 'succeeded' | 'ignored';

/** The payment an event is about, as the conformance kit and the simulator describe it. */
export interface PaymentRef {
  /** The provider's id of the payment: `inv_…`, a UUID, `pi_…`, `pay_…`, Adyen's 16-digit pspReference. */
  resourceId: string;
  /** The order the provider's metadata points at, when the sender knows it. */
  orderId?: string;
  /** Decimal string in the currency's exponent: `"49.90"`. */
  amount: string;
  /** ISO 4217, upper case. */
  currency: string;
  /** The account the body declares (Stripe `account`, Factuarea `account.id`, Standard `data.account_id`, Adyen `merchantAccountCode`). */
  account?: string;
}

/** One event as the provider would send it: its id and its envelope (not yet serialised). */
export interface ProviderEvent {
  eventId: string;
  type: string;
  body: Record<string, unknown>;
}

/** `"49.90"` EUR → 4990: Stripe's and Standard Webhooks' minor units, by the module's own Money. */
export function minorUnits(amount: string, currency: string): number {
  return Number(Money.parse(amount, currency).minor);
}

const UPPER_ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const MIXED_ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** Checkout.com's and Paddle's ids: lower-case base32 (Checkout.com) or ULID-like (Paddle) after a prefix. */
const LOWER_BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

function randomText(alphabet: string, length: number): string {
  let text = '';
  for (let i = 0; i < length; i++) text += alphabet[randomInt(alphabet.length)];
  return text;
}

/** The id shapes of the providers added in v4, as their published examples show them. */
const SHAPED_IDS: Partial<Record<RemoteProvider, Record<'resource' | 'event', () => string>>> = {
  // PayPal: an order id of 17 upper-case alphanumerics; an event `WH-<17>-<17>`.
  paypal: { resource: () => randomText(UPPER_ALNUM, 17), event: () => `WH-${randomText(UPPER_ALNUM, 17)}-${randomText(UPPER_ALNUM, 17)}` },
  // Checkout.com: `pay_` and `evt_` with 26 base32 characters.
  checkout: { resource: () => `pay_${randomText(LOWER_BASE32, 26)}`, event: () => `evt_${randomText(LOWER_BASE32, 26)}` },
  // Square: a payment id of 29 alphanumerics; the event id a UUID.
  square: { resource: () => randomText(MIXED_ALNUM, 29), event: () => randomUUID() },
  // Paddle: `txn_` and `evt_` with 26 lower-case characters.
  paddle: { resource: () => `txn_${randomText(LOWER_BASE32, 26)}`, event: () => `evt_${randomText(LOWER_BASE32, 26)}` },
};

/** Each provider's id shapes: a prefix and 24 hex digits, or (Factuarea) a bare UUID. */
const ID_PREFIXES: Record<HmacProviderName, { resource: string; event: string } | null> = {
  paymos: { resource: 'inv_', event: 'evt_' },
  factuarea: null,
  stripe: { resource: 'pi_', event: 'evt_' },
  standard: { resource: 'pay_', event: 'msg_' },
};

function newId(provider: RemoteProvider, kind: 'resource' | 'event'): string {
  // Adyen sends no event id: the service keys a notification by what it says of the payment.
  if (provider === 'adyen') return kind === 'resource' ? newPspReference() : adyenEventId({ pspReference: newPspReference(), eventCode: 'AUTHORISATION', success: 'true' });
  const shaped = SHAPED_IDS[provider];
  if (shaped) return shaped[kind]();
  const prefixes = ID_PREFIXES[provider as HmacProviderName];
  return prefixes ? `${prefixes[kind]}${randomUUID().replace(/-/g, '').slice(0, 24)}` : randomUUID();
}

/** A fresh provider payment id in the provider's own shape. */
export function newResourceId(provider: RemoteProvider): string {
  return newId(provider, 'resource');
}

/**
 * A fresh event id in the provider's own shape (Standard Webhooks: the `webhook-id` message id;
 * Adyen: `<pspReference>:AUTHORISATION:true` of a fresh pspReference, since its ids are derived).
 */
export function newEventId(provider: RemoteProvider): string {
  return newId(provider, 'event');
}

const TYPES: Record<RemoteProvider, Record<EventKind, string>> = {
  paymos: { early: 'invoice.created', processing: 'invoice.confirming', succeeded: 'invoice.paid', ignored: 'withdrawal.completed' },
  factuarea: { early: 'invoice.created', processing: 'invoice.sent', succeeded: 'invoice.paid', ignored: 'account.updated' },
  stripe: {
    early: 'payment_intent.processing',
    processing: 'payment_intent.processing',
    succeeded: 'payment_intent.succeeded',
    ignored: 'customer.created',
  },
  standard: { early: 'payment.pending', processing: 'payment.processing', succeeded: 'payment.succeeded', ignored: 'ping' },
  // Adyen reports no step before the authorisation: its `early` is the refused outcome of the same
  // AUTHORISATION (success "false", a failed payment), which lies behind a paid one.
  adyen: { early: 'AUTHORISATION', processing: 'AUTHORISATION', succeeded: 'AUTHORISATION', ignored: 'REPORT_AVAILABLE' },
  // PayPal: the buyer approves the order (authorized), then the capture completes; no step between.
  paypal: { early: 'CHECKOUT.ORDER.APPROVED', processing: 'CHECKOUT.ORDER.APPROVED', succeeded: 'PAYMENT.CAPTURE.COMPLETED', ignored: 'PAYMENT.PAYOUTSBATCH.SUCCESS' },
  // Checkout.com: pending (3-D Secure and the like), approved (authorized), captured.
  checkout: { early: 'payment_pending', processing: 'payment_approved', succeeded: 'payment_captured', ignored: 'card_verified' },
  // Square: payment.created with status APPROVED, then payment.updated with status COMPLETED.
  square: { early: 'payment.created', processing: 'payment.created', succeeded: 'payment.updated', ignored: 'customer.created' },
  // Paddle has no event before the money: its `early` is a failed attempt (transaction.payment_failed),
  // which lies behind a paid transaction, as Adyen's refused AUTHORISATION does.
  paddle: { early: 'transaction.payment_failed', processing: 'transaction.payment_failed', succeeded: 'transaction.paid', ignored: 'customer.created' },
};

/**
 * The lifecycle a provider reports for one payment, in the order it happens. Adyen, with automatic
 * capture (its default): one AUTHORISATION, success "true", is the payment. Paddle: one
 * transaction.paid. PayPal: the order approved, then the capture completed. Square: the payment
 * created (APPROVED), then updated (COMPLETED). Checkout.com: pending, approved, captured.
 */
export function lifecycleKinds(provider: RemoteProvider): EventKind[] {
  if (provider === 'adyen' || provider === 'paddle') return ['succeeded'];
  return provider === 'stripe' || provider === 'paypal' || provider === 'square' ? ['early', 'succeeded'] : ['early', 'processing', 'succeeded'];
}

export function eventType(provider: RemoteProvider, kind: EventKind): string {
  return TYPES[provider][kind];
}

/**
 * The envelope of an event `kind` about `payment`, in the provider's own shape.
 * `eventId` defaults to a fresh one. Adyen: a notification body of one item, not yet signed (the
 * delivery signs it), whose event id is derived from the item, whatever `eventId` says.
 */
export function providerEvent(provider: RemoteProvider, kind: EventKind, payment: PaymentRef, eventId = newEventId(provider)): ProviderEvent {
  const type = eventType(provider, kind);
  const created = Math.floor(Date.now() / 1000);
  const status = type.split('.').pop() ?? type;
  switch (provider) {
    case 'paymos': {
      const data =
        kind === 'ignored'
          ? { object: 'withdrawal', id: `wdr_${payment.resourceId.replace(/^inv_/, '')}`, status: 'completed' }
          : {
              object: 'invoice',
              id: payment.resourceId,
              status,
              ...(payment.orderId ? { order_id: payment.orderId } : {}),
              price_amount: payment.amount,
              price_currency: payment.currency,
            };
      return { eventId, type, body: { event_id: eventId, type, created, data } };
    }
    case 'factuarea': {
      const account = payment.account ? { account: { id: payment.account }, account_relationship: 'managed' } : {};
      const object =
        kind === 'ignored'
          ? { object: 'account', id: payment.account ?? randomUUID(), status: 'active' }
          : {
              object: 'invoice',
              id: payment.resourceId,
              number: `FAC-${payment.resourceId.slice(0, 8).toUpperCase()}`,
              status,
              total: payment.amount,
              currency: payment.currency,
              ...(payment.orderId ? { metadata: { order_id: payment.orderId } } : {}),
            };
      return {
        eventId,
        type,
        body: { id: eventId, type, api_version: '2026-09-23', created, livemode: false, correlation_id: randomUUID(), ...account, data: { type, object } },
      };
    }
    case 'stripe': {
      const amount = minorUnits(payment.amount, payment.currency);
      const object =
        kind === 'ignored'
          ? { id: `cus_${payment.resourceId.replace(/^pi_/, '').slice(0, 14)}`, object: 'customer', created }
          : {
              id: payment.resourceId,
              object: 'payment_intent',
              amount,
              amount_received: kind === 'succeeded' ? amount : 0,
              currency: payment.currency.toLowerCase(),
              status,
              latest_charge: null,
              metadata: payment.orderId ? { order_id: payment.orderId } : {},
            };
      return {
        eventId,
        type,
        body: {
          id: eventId,
          object: 'event',
          api_version: '2025-03-31.basil',
          created,
          ...(payment.account ? { account: payment.account } : {}),
          data: { object },
          livemode: false,
          pending_webhooks: 1,
          request: { id: null, idempotency_key: null },
          type,
        },
      };
    }
    case 'standard': {
      const data =
        kind === 'ignored'
          ? { ...(payment.account ? { account_id: payment.account } : {}) }
          : {
              payment_id: payment.resourceId,
              ...(payment.orderId ? { order_id: payment.orderId } : {}),
              amount: minorUnits(payment.amount, payment.currency),
              currency: payment.currency,
              ...(payment.account ? { account_id: payment.account } : {}),
            };
      return { eventId, type, body: { type, timestamp: new Date(created * 1000).toISOString(), data } };
    }
    case 'adyen': {
      const item = adyenItem(kind, payment, created);
      return { eventId: adyenEventId(item), type, body: notificationBody([item]) as unknown as Record<string, unknown> };
    }
    case 'paypal':
      return { eventId, type, body: paypalBody(eventId, type, kind, payment, created) };
    case 'checkout':
      return { eventId, type, body: checkoutBody(eventId, type, kind, payment, created) };
    case 'square':
      return { eventId, type, body: squareBody(eventId, type, kind, payment, created) };
    case 'paddle':
      return { eventId, type, body: paddleBody(eventId, type, kind, payment, created) };
  }
}

const isoOf = (created: number): string => new Date(created * 1000).toISOString();

/**
 * A PayPal event as its webhooks send one (test/fixtures/paypal): `CHECKOUT.ORDER.APPROVED` with
 * the order as resource, `PAYMENT.CAPTURE.COMPLETED` with the capture, whose order is
 * `supplementary_data.related_ids.order_id`. The order the merchant means is the purchase unit's
 * `custom_id` (the adapter reads it as the order's reference or id); `payee.merchant_id` only when an
 * account is given (most events carry none). Amounts are decimal strings.
 */
function paypalBody(eventId: string, type: string, kind: EventKind, payment: PaymentRef, created: number): Record<string, unknown> {
  const api = 'https://api.paypal.com';
  const time = isoOf(created);
  const amount = { currency_code: payment.currency, value: payment.amount };
  const payee = payment.account ? { payee: { merchant_id: payment.account } } : {};
  const custom = payment.orderId ? { custom_id: payment.orderId } : {};
  let resourceType: string;
  let resource: Record<string, unknown>;
  if (kind === 'ignored') {
    resourceType = 'payouts';
    const batch = `PB${payment.resourceId.slice(0, 15)}`;
    resource = {
      batch_header: { payout_batch_id: batch, batch_status: 'SUCCESS', time_created: time, amount: { currency: payment.currency, value: payment.amount } },
      links: [{ href: `${api}/v1/payments/payouts/${batch}`, rel: 'self', method: 'GET' }],
    };
  } else if (type === 'CHECKOUT.ORDER.APPROVED') {
    resourceType = 'checkout-order';
    resource = {
      id: payment.resourceId,
      intent: 'CAPTURE',
      status: 'APPROVED',
      purchase_units: [{ reference_id: 'default', amount, ...payee, ...custom }],
      create_time: time,
      update_time: time,
      links: [{ href: `${api}/v2/checkout/orders/${payment.resourceId}`, rel: 'self', method: 'GET' }],
    };
  } else {
    resourceType = 'capture';
    const captureId = randomText(UPPER_ALNUM, 17);
    resource = {
      id: captureId,
      amount,
      final_capture: true,
      status: 'COMPLETED',
      ...custom,
      ...payee,
      supplementary_data: { related_ids: { order_id: payment.resourceId } },
      create_time: time,
      update_time: time,
      links: [
        { href: `${api}/v2/payments/captures/${captureId}`, rel: 'self', method: 'GET' },
        { href: `${api}/v2/payments/captures/${captureId}/refund`, rel: 'refund', method: 'POST' },
        { href: `${api}/v2/checkout/orders/${payment.resourceId}`, rel: 'up', method: 'GET' },
      ],
    };
  }
  return {
    id: eventId,
    event_version: '1.0',
    create_time: time,
    resource_type: resourceType,
    resource_version: '2.0',
    event_type: type,
    summary: `${type} ${payment.amount} ${payment.currency}`,
    resource,
    links: [{ href: `${api}/v1/notifications/webhooks-events/${eventId}`, rel: 'self', method: 'GET' }],
  };
}

/**
 * A Checkout.com event (test/fixtures/checkout): `data` is the payment, its amount in minor units,
 * the order in `metadata.order_id`. No merchant account: the body declares none.
 */
function checkoutBody(eventId: string, type: string, kind: EventKind, payment: PaymentRef, created: number): Record<string, unknown> {
  const data: Record<string, unknown> = {
    id: payment.resourceId,
    action_id: `act_${randomText(LOWER_BASE32, 26)}`,
    amount: minorUnits(payment.amount, payment.currency),
    currency: payment.currency,
    ...(kind === 'succeeded' || kind === 'processing' ? { response_code: '10000', response_summary: 'Approved' } : {}),
    ...(payment.orderId ? { metadata: { order_id: payment.orderId } } : {}),
    processed_on: isoOf(created),
  };
  if (kind === 'ignored') delete data.metadata;
  const api = 'https://api.sandbox.checkout.com';
  return {
    id: eventId,
    type,
    created_on: isoOf(created),
    data,
    _links: { self: { href: `${api}/events/${eventId}` }, payment: { href: `${api}/payments/${payment.resourceId}` } },
  };
}

/**
 * A Square notification (test/fixtures/square/published): the payment in `data.object.payment`,
 * `amount_money` in minor units, the order in `reference_id` (the adapter matches it to an order's
 * reference or id), the seller in `merchant_id`.
 */
function squareBody(eventId: string, type: string, kind: EventKind, payment: PaymentRef, created: number): Record<string, unknown> {
  const time = isoOf(created);
  const money = { amount: minorUnits(payment.amount, payment.currency), currency: payment.currency };
  const envelope = { merchant_id: payment.account ?? '', type, event_id: eventId, created_at: time };
  if (kind === 'ignored') {
    const id = randomText(MIXED_ALNUM, 26);
    return { ...envelope, data: { type: 'customer', id, object: { customer: { id, created_at: time, updated_at: time, creation_source: 'THIRD_PARTY' } } } };
  }
  const status = kind === 'succeeded' ? 'COMPLETED' : 'APPROVED';
  return {
    ...envelope,
    data: {
      type: 'payment',
      id: payment.resourceId,
      object: {
        payment: {
          id: payment.resourceId,
          amount_money: money,
          approved_money: money,
          total_money: money,
          status,
          source_type: 'CARD',
          location_id: 'L88917AVBK2S5',
          ...(payment.orderId ? { reference_id: payment.orderId } : {}),
          created_at: time,
          updated_at: time,
        },
      },
    },
  };
}

/**
 * A Paddle Billing event (test/fixtures/paddle): the transaction in `data`, its total in
 * `details.totals.grand_total` (minor units, a string), the order in `custom_data.order_id`;
 * `notification_id` is the delivery's.
 */
function paddleBody(eventId: string, type: string, kind: EventKind, payment: PaymentRef, created: number): Record<string, unknown> {
  const time = isoOf(created);
  const envelope = { event_id: eventId, event_type: type, occurred_at: time, notification_id: `ntf_${randomText(LOWER_BASE32, 26)}` };
  if (kind === 'ignored') {
    const id = `ctm_${randomText(LOWER_BASE32, 26)}`;
    return { ...envelope, data: { id, status: 'active', email: 'buyer@example.com', created_at: time, updated_at: time } };
  }
  const total = String(minorUnits(payment.amount, payment.currency));
  const status = kind === 'succeeded' ? 'paid' : 'past_due';
  return {
    ...envelope,
    data: {
      id: payment.resourceId,
      status,
      origin: 'web',
      currency_code: payment.currency,
      collection_mode: 'automatic',
      custom_data: payment.orderId ? { order_id: payment.orderId } : null,
      details: { totals: { subtotal: total, tax: '0', discount: '0', total, grand_total: total, currency_code: payment.currency } },
      created_at: time,
      updated_at: time,
    },
  };
}

/** One Adyen `NotificationRequestItem` (unsigned) of `kind` about `payment`, as Adyen's examples show one. */
function adyenItem(kind: EventKind, payment: PaymentRef, created: number): Record<string, unknown> {
  const eventDate = new Date(created * 1000).toISOString().replace(/\.\d{3}Z$/, '+00:00');
  const common = { originalReference: '', merchantAccountCode: payment.account ?? '', eventDate };
  if (kind === 'ignored') {
    const report = `settlement_detail_report_batch_${payment.resourceId}.csv`;
    return {
      ...common,
      eventCode: 'REPORT_AVAILABLE',
      success: 'true',
      pspReference: report,
      merchantReference: '',
      amount: { value: 0, currency: payment.currency },
      reason: `https://ca-test.adyen.com/reports/download/MerchantAccount/${payment.account ?? ''}/${report}`,
      additionalData: {},
    };
  }
  const refused = kind === 'early';
  return {
    ...common,
    eventCode: 'AUTHORISATION',
    success: refused ? 'false' : 'true',
    pspReference: payment.resourceId,
    merchantReference: payment.orderId ?? '',
    amount: { value: minorUnits(payment.amount, payment.currency), currency: payment.currency },
    paymentMethod: 'visa',
    reason: refused ? 'Refused' : '',
    additionalData: {},
  };
}

/**
 * The bytes sent for an envelope: pretty-printed with two spaces, as Stripe sends its events. Not
 * the compact form `JSON.stringify` gives, so that anything on the way that parses and serialises
 * the body again (a gateway, a body parser in front of the webhook route) changes the bytes and
 * shows as a signature failure instead of passing unnoticed.
 */
export function wireBody(body: unknown): string {
  return `${JSON.stringify(body, null, 2)}\n`;
}

// ---------------------------------------------------------------------------------------------
// Stripe thin event notifications (docs/webhooks.md#thin-event-notifications)

/** What a Stripe endpoint takes: classic events with the object inside, or thin notifications that name it. */
export const PAYLOAD_STYLES = ['snapshot', 'thin'] as const;
export type PayloadStyle = (typeof PAYLOAD_STYLES)[number];

/** Where the API serves each kind of object a thin notification of a type the service acts on names. */
const SERVED_PATHS: Record<string, string> = {
  payment_intent: '/v1/payment_intents/',
  charge: '/v1/charges/',
  dispute: '/v1/disputes/',
};

/**
 * An object as the kit's objects server holds it for a run: what `GET {path}` answers, under the
 * account a connected account's `Stripe-Context` names ('' for the platform's own).
 */
export interface ServedObject {
  /** `/v1/payment_intents/pi_…`, `/v1/charges/ch_…`, `/v1/disputes/dp_…`. */
  path: string;
  account: string;
  object: Record<string, unknown>;
}

/** A thin notification, and the object it names when the service reads it (a PaymentIntent, a charge, a dispute). */
export interface ThinEvent extends ProviderEvent {
  /** Undefined for an object the service never reads (a customer: its type is recorded and ignored). */
  served?: ServedObject;
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** A test-mode notification id: `evt_test_` and 24 alphanumerics, as Stripe writes them. */
export function thinEventId(): string {
  let id = 'evt_test_';
  for (let i = 0; i < 24; i++) id += ALPHANUMERIC[randomInt(ALPHANUMERIC.length)];
  return id;
}

/**
 * The thin twin of a Stripe snapshot event (as `providerEvent('stripe', …)` builds it): the
 * notification an event destination with a thin payload sends for the same change, under its own
 * fresh id, type `v1.<type>`, `context` the snapshot's `account` (a connected account), and
 * `related_object` naming the snapshot's `data.object` at its API path; `served` is that object,
 * what `GET {related_object.url}` answers.
 */
export function thinTwin(snapshot: ProviderEvent, eventId = thinEventId()): ThinEvent {
  const body = snapshot.body as { created?: number; account?: string; data: { object: Record<string, unknown> } };
  const object = structuredClone(body.data.object);
  const id = String(object.id);
  const kind = String(object.object);
  const path = `${SERVED_PATHS[kind] ?? `/v1/${kind}s/`}${id}`;
  const type = `v1.${snapshot.type}`;
  const created = new Date((body.created ?? Math.floor(Date.now() / 1000)) * 1000).toISOString();
  const notification = {
    id: eventId,
    object: 'v2.core.event',
    type,
    livemode: false,
    created,
    ...(body.account ? { context: body.account } : {}),
    related_object: { id, type: kind, url: path },
  };
  return {
    eventId,
    type,
    body: notification,
    ...(SERVED_PATHS[kind] ? { served: { path, account: body.account ?? '', object } } : {}),
  };
}

/** A Stripe event of `kind` about `payment` in the endpoint's style: the snapshot event, or its thin twin. */
export function stripeEvent(style: PayloadStyle, kind: EventKind, payment: PaymentRef): ThinEvent {
  const snapshot = providerEvent('stripe', kind, payment);
  return style === 'thin' ? thinTwin(snapshot) : snapshot;
}
