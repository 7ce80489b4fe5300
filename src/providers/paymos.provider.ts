import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderEvent, ProviderEventKind } from '../common/provider-event';
import {
  asObject,
  checkIdHeader,
  decimal,
  EnvelopeIdentity,
  header,
  optionalId,
  parseKeyValueHeader,
  parseUnixSeconds,
  requireId,
  SignatureParts,
  text,
  unixDate,
  v1Candidates,
} from './provider';
import { hmacProvider } from './hmac';

/** The invoice event types the service acts on (docs/webhooks.md#paymos), as the payment event each is. */
const INVOICE_KINDS: ReadonlyMap<string, ProviderEventKind> = new Map([
  ['invoice.created', 'pending'],
  ['invoice.confirming', 'processing'],
  ['invoice.paid', 'succeeded'],
  ['invoice.expired', 'expired'],
  ['invoice.invalid', 'failed'],
  ['invoice.refunded', 'refunded'],
]);

/** Paymos (docs/webhooks.md#paymos): `X-Webhook-Signature: v1=<hex>[,v1=<hex>…]` over `<timestamp>.<body>`. */
export const paymosProvider = hmacProvider({
  name: 'paymos',
  declaresAccount: false,
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
      account: null, // Paymos never declares a merchant account in the body.
      apiVersion: null,
    };
  },

  normalize(body, eventType): ProviderEvent | null {
    const kind = INVOICE_KINDS.get(eventType);
    const data = asObject(asObject(body)?.data);
    const resourceId = text(data?.id);
    // Only invoices are payments; withdrawals (`wdr_…`), `pcd_…` and the rest are ignored.
    if (!kind || !data || !resourceId?.startsWith('inv_')) return null;
    return {
      kind,
      resourceId,
      orderId: text(data.order_id),
      amount: decimal(data.price_amount),
      currency: text(data.price_currency),
      refundedAmount: kind === 'refunded' ? decimal(data.refunded_amount) : null,
      declaredAccount: null, // Paymos never declares a merchant account in the body.
      occurredAt: unixDate(asObject(body)?.created),
    };
  },
});
