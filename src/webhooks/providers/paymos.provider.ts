import type { IncomingHttpHeaders } from 'node:http';
import type { PaymentEvent } from '../../payments/payment-event';
import {
  asObject,
  checkIdHeader,
  EnvelopeIdentity,
  header,
  optionalId,
  parseKeyValueHeader,
  parseUnixSeconds,
  ProviderAdapter,
  requireId,
  SignatureParts,
  v1Candidates,
} from './provider';

/** Paymos (CONTRACT §2.1): `X-Webhook-Signature: v1=<hex>[,v1=<hex>…]` over `<timestamp>.<body>`. */
export const paymosProvider: ProviderAdapter = {
  name: 'paymos',
  storedHeaders: ['x-webhook-id', 'x-webhook-timestamp', 'x-webhook-signature'],
  signatureHeaders: ['x-webhook-signature'],

  key: (secret) => Buffer.from(secret, 'utf8'),

  signature(headers: IncomingHttpHeaders): SignatureParts | null {
    const raw = header(headers, 'x-webhook-timestamp');
    const timestamp = parseUnixSeconds(raw);
    const entries = parseKeyValueHeader(header(headers, 'x-webhook-signature'));
    if (timestamp === null || !entries) return null;
    return { timestamp, prefix: `${raw}.`, candidates: v1Candidates(entries) };
  },

  identify(body, headers): EnvelopeIdentity {
    const eventId = requireId(body.event_id, 'event_id');
    checkIdHeader(headers, 'x-webhook-id', eventId);
    return {
      eventId,
      eventType: requireId(body.type, 'type'),
      resourceId: optionalId(asObject(body.data)?.id, 'data.id'),
      deliveryId: null,
    };
  },

  normalize(): PaymentEvent | null {
    return null; // TODO(normalise): CONTRACT mapping table
  },
};
