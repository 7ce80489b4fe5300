import { createHmac, randomUUID } from 'node:crypto';
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
} from '../../src';

/**
 * "acme", a provider of a host's own written as a host writes one, with the package's exported API
 * only: `Acme-Signature: t=<unix seconds>,s=<hex>[,s=<hex>…]`, an HMAC-SHA256 over `<t>.<raw body>`
 * keyed with the secret's UTF-8 bytes, and its own envelope:
 *
 *   { "event": { "id": "ae_…", "type": "charge.paid", "created": 1790590561, "merchant": "m_1" },
 *     "charge": { "id": "ch_…", "order_id": "<order id>", "amount": "49.90", "currency": "EUR" } }
 */
const KINDS: ReadonlyMap<string, ProviderEventKind> = new Map([
  ['charge.pending', 'pending'],
  ['charge.paid', 'succeeded'],
  ['charge.failed', 'failed'],
  ['charge.refunded', 'refunded'],
]);

const HEX_SHA256 = /^[0-9a-f]{64}$/;

export const acmeProvider = hmacProvider({
  name: 'acme',
  storedHeaders: ['acme-signature', 'acme-delivery'],
  signatureHeaders: ['acme-signature'],
  declaresAccount: true,
  checkSecret: (secret) => (secret.startsWith('acme_sk_') ? null : 'must start with "acme_sk_"'),
  weakSecret: (secret) => (secret.length < 16 ? 'is shorter than 16 characters' : null),
  endpointFields: ['region'],
  checkEndpoint: ({ settings }) =>
    settings.region === undefined || settings.region === 'eu' || settings.region === 'us' ? null : '"region" must be "eu" or "us"',

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

/** The headers acme sends with `body`: one `s=` entry per secret (several during a rotation). */
export function acmeHeaders(secrets: string | string[], body: string, timestamp = Math.floor(Date.now() / 1000)): Record<string, string> {
  const entries = [secrets].flat().map((s) => `s=${createHmac('sha256', s).update(`${timestamp}.${body}`).digest('hex')}`);
  return { 'content-type': 'application/json', 'acme-signature': [`t=${timestamp}`, ...entries].join(',') };
}

/** An acme event body, and its id. */
export function acmeEvent(
  type: string,
  chargeId: string,
  opts: { orderId?: string; amount?: string; currency?: string; merchant?: string; eventId?: string; refunded?: string } = {},
): { eventId: string; body: string } {
  const eventId = opts.eventId ?? `ae_${randomUUID().replace(/-/g, '').slice(0, 16)}`;
  const body = {
    event: { id: eventId, type, created: Math.floor(Date.now() / 1000), ...(opts.merchant ? { merchant: opts.merchant } : {}) },
    charge: {
      id: chargeId,
      ...(opts.orderId ? { order_id: opts.orderId } : {}),
      amount: opts.amount ?? '49.90',
      currency: opts.currency ?? 'EUR',
      ...(opts.refunded ? { refunded_amount: opts.refunded } : {}),
    },
  };
  return { eventId, body: JSON.stringify(body) };
}
