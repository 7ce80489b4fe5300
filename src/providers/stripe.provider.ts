import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderEvent, ProviderEventKind, RawAmount } from '../common/provider-event';
import {
  asObject,
  EnvelopeIdentity,
  header,
  minor,
  lenientId,
  optionalId,
  parseTimestampedHeader,
  requireId,
  text,
  unixDate,
} from './provider';
import { hmacProvider } from './hmac';

/** The event types the service acts on (docs/webhooks.md#stripe); `charge.dispute.closed` depends on its status. */
const KINDS: ReadonlyMap<string, ProviderEventKind> = new Map([
  ['payment_intent.processing', 'processing'],
  ['payment_intent.amount_capturable_updated', 'authorized'],
  ['payment_intent.succeeded', 'succeeded'],
  ['payment_intent.payment_failed', 'failed'],
  ['payment_intent.canceled', 'canceled'],
  ['charge.refunded', 'refunded'],
  ['charge.dispute.created', 'disputed'],
]);

function stripeKind(eventType: string, body: Record<string, unknown>): ProviderEventKind | null {
  if (eventType !== 'charge.dispute.closed') return KINDS.get(eventType) ?? null;
  const status = asObject(asObject(asObject(body)?.data)?.object)?.status;
  // `warning_closed` (an inquiry) and any other status change nothing.
  return status === 'won' ? 'dispute_won' : status === 'lost' ? 'dispute_lost' : null;
}

/**
 * Stripe (docs/webhooks.md#stripe): `Stripe-Signature: t=<unix>,v1=<hex>…` over `<t>.<body>`, keyed with
 * the whole `whsec_…` string; only `v1` entries count.
 */
export const stripeProvider = hmacProvider({
  name: 'stripe',
  declaresAccount: true,
  storedHeaders: ['stripe-signature'],
  signatureHeaders: ['stripe-signature'],
  // The backfill reads Stripe's Events API with the endpoint's key.
  usesApi: { defaultBaseUrl: 'https://api.stripe.com' },

  key: (secret) => Buffer.from(secret, 'utf8'),

  signature: (headers: IncomingHttpHeaders) => parseTimestampedHeader(header(headers, 'stripe-signature')),

  identify(body): EnvelopeIdentity {
    const eventType = requireId(body.type, 'type');
    const object = asObject(asObject(body.data)?.object);
    // Charges, refunds and disputes are about the PaymentIntent that holds the money.
    const resource = eventType.startsWith('charge.') && typeof object?.payment_intent === 'string'
      ? object.payment_intent
      : object?.id;
    return {
      eventId: requireId(body.id, 'id'),
      eventType,
      resourceId: optionalId(resource, 'data.object.id'),
      deliveryId: null,
      // A declared account is keyed on and compared: an unprintable one is malformed, not "none declared".
      account: optionalId(body.account, 'account'),
      apiVersion: lenientId(body.api_version),
    };
  },

  normalize(body, eventType): ProviderEvent | null {
    const kind = stripeKind(eventType, body);
    const envelope = asObject(body);
    const object = asObject(asObject(envelope?.data)?.object);
    if (!kind || !object) return null;
    // The PaymentIntent holds the money: charges, refunds and disputes point at it.
    const resourceId = text(eventType.startsWith('charge.') ? object.payment_intent : object.id);
    if (resourceId === null) return null;
    let amount: RawAmount | null;
    if (eventType === 'payment_intent.succeeded') amount = minor(object.amount_received);
    else if (eventType.startsWith('charge.dispute.')) amount = null; // a dispute may be partial: never checked
    else amount = minor(object.amount);
    const currency = text(object.currency);
    return {
      kind,
      resourceId,
      orderId: text(asObject(object.metadata)?.order_id),
      amount,
      currency: currency === null ? null : currency.toUpperCase(),
      refundedAmount: kind === 'refunded' ? minor(object.amount_refunded) : null,
      declaredAccount: text(envelope?.account), // Connect
      occurredAt: unixDate(envelope?.created),
    };
  },
});
