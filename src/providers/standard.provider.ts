import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderEvent, ProviderEventKind } from '../common/provider-event';
import {
  asObject,
  EnvelopeIdentity,
  header,
  minor,
  optionalId,
  parseUnixSeconds,
  requireId,
  SignatureParts,
  text,
} from './provider';
import { hmacProvider } from './hmac';

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** The floor on a `whsec_` key: it only catches a placeholder or a truncated paste. */
export const MIN_KEY_BYTES = 8;
const BASE64_SHA256 = /^[A-Za-z0-9+/]{43}=$/;

/**
 * A `v1` candidate in standard base64 (docs/webhooks.md#standard-webhooks), canonical only: 32 bytes take 43
 * characters and `=`, and the last character's 2 padding bits must be zero. Node decodes the
 * other three spellings to the same bytes, so they are refused by re-encoding.
 */
function decodeBase64Signature(value: string): Buffer | null {
  if (!BASE64_SHA256.test(value)) return null;
  const bytes = Buffer.from(value, 'base64');
  return bytes.toString('base64') === value ? bytes : null;
}

/** The service's native event types (docs/webhooks.md#standard-webhooks), as the payment event each is. */
const KINDS: ReadonlyMap<string, ProviderEventKind> = new Map([
  ['payment.pending', 'pending'],
  ['payment.processing', 'processing'],
  ['payment.authorized', 'authorized'],
  ['payment.succeeded', 'succeeded'],
  ['payment.failed', 'failed'],
  ['payment.canceled', 'canceled'],
  ['payment.expired', 'expired'],
  ['payment.refunded', 'refunded'],
  ['payment.disputed', 'disputed'],
  ['payment.dispute_won', 'dispute_won'],
  ['payment.dispute_lost', 'dispute_lost'],
]);

/** An ISO 8601 date-time with an explicit offset (`Z` or `±hh:mm`). */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i;

/** The ISO `timestamp` as a Date; another type, another format or an impossible date is null. */
function isoDate(value: unknown): Date | null {
  if (typeof value !== 'string' || !ISO_INSTANT.test(value)) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/**
 * Standard Webhooks (docs/webhooks.md#standard-webhooks): `webhook-signature: v1,<base64>[ v1,<base64>…]` over
 * `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the base64 part of `whsec_…`.
 */
export const standardProvider = hmacProvider({
  name: 'standard',
  declaresAccount: true,
  storedHeaders: ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
  signatureHeaders: ['webhook-signature'],

  key: (secret) => Buffer.from(secret.slice('whsec_'.length), 'base64'),

  checkSecret(secret) {
    if (!secret.startsWith('whsec_')) return 'must start with "whsec_" (Standard Webhooks)';
    const key = secret.slice('whsec_'.length);
    return BASE64.test(key) && Buffer.from(key, 'base64').length > 0 ? null : 'is not base64 after "whsec_"';
  },

  weakSecret(secret) {
    const bytes = Buffer.from(secret.slice('whsec_'.length), 'base64').length;
    return bytes < MIN_KEY_BYTES ? `decodes to fewer than ${MIN_KEY_BYTES} bytes after "whsec_"` : null;
  },

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
      const decoded = entry.slice(0, comma) === 'v1' ? decodeBase64Signature(signature) : null;
      if (decoded) candidates.push(decoded);
    }
    return { timestamp, prefix: `${id}.${raw}.`, candidates };
  },

  identify(body, headers): EnvelopeIdentity {
    return {
      eventId: requireId(header(headers, 'webhook-id'), 'webhook-id'),
      eventType: requireId(body.type, 'type'),
      resourceId: optionalId(asObject(body.data)?.payment_id, 'data.payment_id'),
      deliveryId: null,
      // A declared account is keyed on and compared: an unprintable one is malformed, not "none declared".
      account: optionalId(asObject(body.data)?.account_id, 'data.account_id'),
      apiVersion: null,
    };
  },

  normalize(body, eventType): ProviderEvent | null {
    const kind = KINDS.get(eventType);
    const envelope = asObject(body);
    const data = asObject(envelope?.data);
    const resourceId = text(data?.payment_id);
    if (!kind || !data || resourceId === null) return null;
    return {
      kind,
      resourceId,
      orderId: text(data.order_id),
      amount: minor(data.amount),
      currency: text(data.currency),
      refundedAmount: kind === 'refunded' ? minor(data.amount_refunded) : null,
      declaredAccount: text(data.account_id),
      occurredAt: isoDate(envelope?.timestamp),
    };
  },
});
