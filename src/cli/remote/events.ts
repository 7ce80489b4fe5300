import { randomUUID } from 'node:crypto';
import type { ProviderName } from '../../config/options';
import { Money } from '../../payments/money';

export type RemoteProvider = ProviderName;

/**
 * Where a payment stands in the events a provider sends about it: `early` is the state before the
 * money (Paymos/Factuarea/Standard `pending`; Stripe has no pending event, so its `processing`),
 * `processing` the step between (where the provider has one), `succeeded` the money; `ignored` an
 * event of a type the service records and does not act on.
 */
export type EventKind = 'early' | 'processing' | 'succeeded' | 'ignored';

/** The payment an event is about, as the conformance kit and the simulator describe it. */
export interface PaymentRef {
  /** The provider's id of the payment: `inv_…`, a UUID, `pi_…`, `pay_…`. */
  resourceId: string;
  /** The order the provider's metadata points at, when the sender knows it. */
  orderId?: string;
  /** Decimal string in the currency's exponent: `"49.90"`. */
  amount: string;
  /** ISO 4217, upper case. */
  currency: string;
  /** The account the body declares (Stripe `account`, Factuarea `account.id`, Standard `data.account_id`). */
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
const ID_PREFIXES: Record<RemoteProvider, { resource: string; event: string } | null> = {
  paymos: { resource: 'inv_', event: 'evt_' },
  factuarea: null,
  stripe: { resource: 'pi_', event: 'evt_' },
  standard: { resource: 'pay_', event: 'msg_' },
};

function newId(provider: RemoteProvider, kind: 'resource' | 'event'): string {
  const prefixes = ID_PREFIXES[provider];
  return prefixes ? `${prefixes[kind]}${randomUUID().replace(/-/g, '').slice(0, 24)}` : randomUUID();
}

/** A fresh provider payment id in the provider's own shape. */
export function newResourceId(provider: RemoteProvider): string {
  return newId(provider, 'resource');
}

/** A fresh event id in the provider's own shape (Standard Webhooks: the `webhook-id` message id). */
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
};

/** The lifecycle a provider reports for one payment, in the order it happens. */
export function lifecycleKinds(provider: RemoteProvider): EventKind[] {
  return provider === 'stripe' ? ['early', 'succeeded'] : ['early', 'processing', 'succeeded'];
}

export function eventType(provider: RemoteProvider, kind: EventKind): string {
  return TYPES[provider][kind];
}

/**
 * The envelope of an event `kind` about `payment`, in the provider's own shape.
 * `eventId` defaults to a fresh one.
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
  }
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
