import type { IncomingHttpHeaders } from 'node:http';
import type { PaymentEvent } from '../../payments/payment-event';
import {
  asObject,
  checkIdHeader,
  EnvelopeIdentity,
  header,
  optionalId,
  parseTimestampedHeader,
  ProviderAdapter,
  requireId,
} from './provider';

/** Factuarea (CONTRACT §2.2): `Factuarea-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]` over `<t>.<body>`. */
export const factuareaProvider: ProviderAdapter = {
  name: 'factuarea',
  storedHeaders: [
    'factuarea-signature',
    'factuarea-event-id',
    'factuarea-event-type',
    'factuarea-delivery-id',
    'factuarea-account-relationship',
    'idempotency-key',
  ],
  signatureHeaders: ['factuarea-signature'],

  key: (secret) => Buffer.from(secret, 'utf8'),

  signature: (headers: IncomingHttpHeaders) => parseTimestampedHeader(header(headers, 'factuarea-signature')),

  identify(body, headers): EnvelopeIdentity {
    const eventId = requireId(body.id, 'id');
    checkIdHeader(headers, 'factuarea-event-id', eventId);
    checkIdHeader(headers, 'idempotency-key', eventId);
    const object = asObject(asObject(body.data)?.object);
    return {
      eventId,
      eventType: requireId(body.type, 'type'),
      resourceId: optionalId(object?.id, 'data.object.id'),
      deliveryId: optionalId(header(headers, 'factuarea-delivery-id'), 'Factuarea-Delivery-Id'),
    };
  },

  normalize(): PaymentEvent | null {
    return null; // TODO(normalise): CONTRACT mapping table
  },
};
