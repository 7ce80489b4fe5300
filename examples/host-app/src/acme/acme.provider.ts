import { createHmac } from 'node:crypto';
import {
  asObject,
  decimal,
  header,
  hmacProvider,
  optionalId,
  parseKeyValueHeader,
  requireId,
  text,
  type EnvelopeIdentity,
  type ProviderEvent,
  type ProviderEventKind,
  type SignatureParts,
} from 'nestjs-payment-webhooks';

/**
 * Acme, a payment provider of this host's own, registered with the module's `providers` option.
 * It signs like most providers do, so `hmacProvider` does the checks; this file says how its
 * header reads and what its envelope holds.
 *
 *   Acme-Signature: t=<unix seconds>,s=<hex>[,s=<hex>…]   HMAC-SHA256 of `<t>.<raw body>`
 *
 *   { "event":  { "id": "ae_…", "type": "charge.paid", "created": 1790590561, "merchant": "m_1" },
 *     "charge": { "id": "ch_…", "order_id": "<order id>", "amount": "49.90", "currency": "EUR" } }
 */

/** The event types the module acts on, as the payment event each is. Others are recorded and ignored. */
const KINDS = new Map<string, ProviderEventKind>([
  ['charge.pending', 'pending'],
  ['charge.paid', 'succeeded'],
  ['charge.failed', 'failed'],
  ['charge.refunded', 'refunded'],
]);

/** A candidate signature: lower-case hex of 32 bytes, as Acme writes it (anything else never matches). */
const HEX_SHA256 = /^[0-9a-f]{64}$/;

export const acmeProvider = hmacProvider({
  name: 'acme',
  // Kept on the inbox row (the signature's value is redacted when shown).
  storedHeaders: ['acme-signature', 'acme-delivery'],
  signatureHeaders: ['acme-signature'],
  // Its events name their merchant, so one endpoint may serve many (`merchantAccountIds`).
  declaresAccount: true,
  // Acme's signing secrets start with acme_sk_: anything else is a paste of the wrong value.
  checkSecret: (secret) => (secret.startsWith('acme_sk_') ? null : 'must start with "acme_sk_"'),

  key: (secret) => Buffer.from(secret, 'utf8'),

  signature(headers): SignatureParts | null {
    const entries = parseKeyValueHeader(header(headers, 'acme-signature'));
    const stamps = entries?.filter(([k]) => k === 't') ?? [];
    if (!entries || stamps.length !== 1 || !/^\d{1,15}$/.test(stamps[0][1])) return null;
    const candidates = entries.filter(([k, v]) => k === 's' && HEX_SHA256.test(v)).map(([, v]) => Buffer.from(v, 'hex'));
    return { timestamp: Number(stamps[0][1]), prefix: `${stamps[0][1]}.`, candidates };
  },

  identify(body, headers): EnvelopeIdentity {
    const event = asObject(body.event);
    return {
      eventId: requireId(event?.id, 'event.id'),
      eventType: requireId(event?.type, 'event.type'),
      resourceId: optionalId(asObject(body.charge)?.id, 'charge.id'),
      deliveryId: optionalId(header(headers, 'acme-delivery'), 'Acme-Delivery'),
      account: optionalId(event?.merchant, 'event.merchant'),
      apiVersion: null,
    };
  },

  normalize(body, eventType): ProviderEvent | null {
    const kind = KINDS.get(eventType);
    const charge = asObject(body.charge);
    const resourceId = text(charge?.id);
    if (!kind || !charge || !resourceId) return null;
    return {
      kind,
      resourceId,
      orderId: text(charge.order_id),
      amount: decimal(charge.amount),
      currency: text(charge.currency),
      refundedAmount: kind === 'refunded' ? decimal(charge.refunded_amount) : null,
      declaredAccount: text(asObject(body.event)?.merchant),
      occurredAt: null,
    };
  },
});

/** What Acme sends with `body`: for a demo or a test of the host's own, playing Acme. */
export function acmeSignatureHeader(secret: string, body: string, timestamp = Math.floor(Date.now() / 1000)): string {
  return `t=${timestamp},s=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}
