import type { IncomingHttpHeaders } from 'node:http';
import type { PaymentEvent } from '../../payments/payment-event';
import {
  asObject,
  EnvelopeIdentity,
  header,
  optionalId,
  parseTimestampedHeader,
  ProviderAdapter,
  requireId,
} from './provider';

/**
 * Stripe (CONTRACT §2.3): `Stripe-Signature: t=<unix>,v1=<hex>…` over `<t>.<body>`, keyed with
 * the whole `whsec_…` string; only `v1` entries count.
 */
export const stripeProvider: ProviderAdapter = {
  name: 'stripe',
  storedHeaders: ['stripe-signature'],
  signatureHeaders: ['stripe-signature'],

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
    };
  },

  normalize(): PaymentEvent | null {
    return null; // TODO(normalise): CONTRACT mapping table
  },
};
