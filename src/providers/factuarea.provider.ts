import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderEvent, ProviderEventKind } from '../common/provider-event';
import {
  asObject,
  checkIdHeader,
  decimal,
  EnvelopeIdentity,
  header,
  lenientId,
  optionalId,
  parseTimestampedHeader,
  requireId,
  text,
  unixDate,
} from './provider';
import { hmacProvider } from './hmac';

/** The invoice event types the service acts on (docs/webhooks.md#factuarea), as the payment event each is. */
const INVOICE_KINDS: ReadonlyMap<string, ProviderEventKind> = new Map([
  ['invoice.created', 'pending'],
  ['invoice.sent', 'pending'],
  ['invoice.paid', 'succeeded'],
  ['invoice.voided', 'canceled'],
  ['invoice.refunded', 'refunded'],
]);

/** Factuarea (docs/webhooks.md#factuarea): `Factuarea-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]` over `<t>.<body>`. */
export const factuareaProvider = hmacProvider({
  name: 'factuarea',
  declaresAccount: true,
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
      // A declared account is keyed on and compared: an unprintable one is malformed, not "none declared".
      account: optionalId(asObject(body.account)?.id, 'account.id'),
      apiVersion: lenientId(body.api_version),
    };
  },

  normalize(body, eventType): ProviderEvent | null {
    const kind = INVOICE_KINDS.get(eventType);
    const envelope = asObject(body);
    const invoice = asObject(asObject(envelope?.data)?.object);
    const resourceId = text(invoice?.id);
    // `account.*` and other types, and objects that are not invoices, are ignored.
    if (!kind || !invoice || resourceId === null) return null;
    if (invoice.object !== undefined && invoice.object !== 'invoice') return null;
    return {
      kind,
      resourceId,
      orderId: text(asObject(invoice.metadata)?.order_id),
      amount: decimal(invoice.total),
      currency: text(invoice.currency),
      refundedAmount: kind === 'refunded' ? decimal(invoice.refunded_total) : null,
      // Account endpoints name the connected account; company endpoints declare none.
      declaredAccount: text(asObject(envelope?.account)?.id),
      occurredAt: unixDate(envelope?.created),
    };
  },
});
