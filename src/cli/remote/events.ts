import { randomInt, randomUUID } from 'node:crypto';
import type { HmacProviderName } from '../../providers';
import { Money } from '../../payments/money';
import { adyenEventId, newPspReference, notificationBody } from './adyen';

/**
 * The providers the command line sends as: those signed over the raw bytes, one event a delivery,
 * and Adyen (signed items inside the body, one or more a delivery). Not Mollie: its deliveries are
 * authenticated by fetching the payment from Mollie's API, which no sender but Mollie can answer.
 */
export type RemoteProvider = HmacProviderName | 'adyen';

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
  const prefixes = ID_PREFIXES[provider];
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
};

/**
 * The lifecycle a provider reports for one payment, in the order it happens. Adyen, with automatic
 * capture (its default): one AUTHORISATION, success "true", is the payment.
 */
export function lifecycleKinds(provider: RemoteProvider): EventKind[] {
  if (provider === 'adyen') return ['succeeded'];
  return provider === 'stripe' ? ['early', 'succeeded'] : ['early', 'processing', 'succeeded'];
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
  }
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
