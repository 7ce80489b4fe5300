import type { IncomingHttpHeaders } from 'node:http';
import type { PaymentEvent } from '../../payments/payment-event';
import {
  asObject,
  EnvelopeIdentity,
  header,
  optionalId,
  parseUnixSeconds,
  ProviderAdapter,
  requireId,
  SignatureParts,
} from './provider';

const BASE64_SHA256 = /^[A-Za-z0-9+/]{43}=$/;

/**
 * Standard Webhooks (CONTRACT §2.4): `webhook-signature: v1,<base64>[ v1,<base64>…]` over
 * `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the base64 part of `whsec_…`.
 */
export const standardProvider: ProviderAdapter = {
  name: 'standard',
  storedHeaders: ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
  signatureHeaders: ['webhook-signature'],

  key: (secret) => Buffer.from(secret.slice('whsec_'.length), 'base64'),

  signature(headers: IncomingHttpHeaders): SignatureParts | null {
    const id = header(headers, 'webhook-id');
    const raw = header(headers, 'webhook-timestamp');
    const timestamp = parseUnixSeconds(raw);
    const value = header(headers, 'webhook-signature');
    if (!id || timestamp === null || value === undefined || value.trim() === '') return null;
    const candidates: Buffer[] = [];
    for (const entry of value.trim().split(/\s+/)) {
      const comma = entry.indexOf(',');
      if (comma <= 0) return null;
      const signature = entry.slice(comma + 1);
      if (entry.slice(0, comma) === 'v1' && BASE64_SHA256.test(signature)) {
        candidates.push(Buffer.from(signature, 'base64'));
      }
    }
    return { timestamp, prefix: `${id}.${raw}.`, candidates };
  },

  identify(body, headers): EnvelopeIdentity {
    return {
      eventId: requireId(header(headers, 'webhook-id'), 'webhook-id'),
      eventType: requireId(body.type, 'type'),
      resourceId: optionalId(asObject(body.data)?.payment_id, 'data.payment_id'),
      deliveryId: null,
    };
  },

  normalize(): PaymentEvent | null {
    return null; // TODO(normalise): CONTRACT mapping table
  },
};
