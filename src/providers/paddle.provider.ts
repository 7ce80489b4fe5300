import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderEvent, ProviderEventKind } from '../common/provider-event';
import {
  asObject,
  decodeHexSignature,
  EnvelopeIdentity,
  header,
  minor,
  optionalId,
  parseUnixSeconds,
  requireId,
  SignatureParts,
  isoDate,
  text,
} from './provider';
import { hmacProvider, type HmacProvider } from './hmac';
import { PADDLE_API } from './paddle-client';
import { paddleCommands } from './paddle.commands';
import { paddlePaymentReader } from './paddle.reader';

export { PADDLE_API };

/** The transaction events the service acts on (docs/webhooks.md#paddle), as the payment event each is. */
const TRANSACTION_KINDS: ReadonlyMap<string, ProviderEventKind> = new Map([
  ['transaction.paid', 'succeeded'],
  ['transaction.completed', 'succeeded'],
  ['transaction.payment_failed', 'failed'],
  ['transaction.canceled', 'canceled'],
]);

/** Adjustments (refunds, chargebacks, credits) are about the transaction they adjust: `data.transaction_id`. */
const ADJUSTMENT_TYPES: ReadonlySet<string> = new Set(['adjustment.created', 'adjustment.updated']);

function isAdjustment(eventType: string): boolean {
  return eventType.startsWith('adjustment.');
}

/**
 * `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>…]`: `;`-separated `key=value` entries, exactly as
 * Paddle writes them (no spaces). Null, which is `missing_signature`, when the header is absent or
 * empty, an entry has no `=`, or there is not exactly one `ts` of unix seconds. Keys other than `ts`
 * and `h1` are ignored; an `h1` that is not lower-case hex of 32 bytes can never match, and a header
 * without a usable `h1` verifies nothing (`invalid_signature`).
 */
export function parsePaddleSignature(value: string | undefined): SignatureParts | null {
  if (value === undefined || value === '') return null;
  const stamps: string[] = [];
  const candidates: Buffer[] = [];
  for (const entry of value.split(';')) {
    const eq = entry.indexOf('=');
    if (eq <= 0) return null;
    const key = entry.slice(0, eq);
    const v = entry.slice(eq + 1);
    if (key === 'ts') stamps.push(v);
    else if (key === 'h1') {
      const decoded = decodeHexSignature(v);
      if (decoded) candidates.push(decoded);
    }
  }
  if (stamps.length !== 1) return null;
  const timestamp = parseUnixSeconds(stamps[0]);
  if (timestamp === null) return null;
  // The signed content is `<ts>:<raw body>`, with the timestamp exactly as sent.
  return { timestamp, prefix: `${stamps[0]}:`, candidates };
}

/** A transaction event: the transaction is the payment, `details.totals.grand_total` its amount. */
function transactionEvent(kind: ProviderEventKind, data: Record<string, unknown>, occurredAt: Date | null): ProviderEvent | null {
  const resourceId = text(data.id);
  if (resourceId === null) return null;
  return {
    kind,
    resourceId,
    orderId: text(asObject(data.custom_data)?.order_id),
    amount: minor(asObject(asObject(data.details)?.totals)?.grand_total),
    currency: text(data.currency_code),
    refundedAmount: null,
    refund: null,
    declaredAccount: null,
    occurredAt,
  };
}

/**
 * An adjustment: an approved refund is a refund of its own `totals.total`, counted once per
 * adjustment id; a chargeback is a dispute lost; a refund rejected is that refund failed
 * (`refund_outcome`). Any other action, and a refund not approved yet, changes nothing.
 * Adjustments carry no `custom_data`: the payment is found by its transaction id.
 */
function adjustmentEvent(data: Record<string, unknown>, occurredAt: Date | null): ProviderEvent | null {
  const resourceId = text(data.transaction_id);
  if (resourceId === null) return null;
  const totals = asObject(data.totals);
  const base = {
    resourceId,
    orderId: null,
    // A refund's or a chargeback's amount is not the payment's: never checked against it.
    amount: null,
    currency: text(data.currency_code) ?? text(totals?.currency_code),
    refundedAmount: null,
    declaredAccount: null,
    occurredAt,
  };
  if (data.action === 'refund' && data.status === 'approved') {
    const id = text(data.id);
    const amount = minor(totals?.total);
    return {
      kind: 'refunded',
      ...base,
      refund: id !== null && amount !== null ? { id, amount } : null,
      // The adjustment id is what a refund sent through the module was answered with: it confirms it.
      ...(id === null ? {} : { refundOutcomes: [{ id, status: 'succeeded' as const }] }),
    };
  }
  // Paddle refused the refund (one awaiting its approval may be rejected): nothing moved, no currency to check.
  if (data.action === 'refund' && data.status === 'rejected') {
    const id = text(data.id);
    if (id === null) return null;
    return { kind: 'refund_outcome', ...base, currency: null, refund: null, refundOutcomes: [{ id, status: 'failed', reason: 'rejected by Paddle' }] };
  }
  if (data.action === 'chargeback') return { kind: 'dispute_lost', ...base, refund: null };
  return null;
}

/**
 * Paddle Billing (docs/webhooks.md#paddle): `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=<hex>…]`, an
 * HMAC-SHA256 of `<ts>:<raw body>` keyed with the notification destination's secret key (its UTF-8
 * bytes). Verified here with node:crypto in constant time, not with `@paddle/paddle-node-sdk`: the
 * SDK reads only the last `h1`, takes one secret and has a fixed 5-second window that never refuses
 * a future timestamp, so it cannot keep rotations or `toleranceSeconds`. Where its rules apply (a
 * fresh timestamp, one `h1`) both agree. Event id `event_id`; `notification_id` is the delivery id.
 */
const paddleHmac: HmacProvider = hmacProvider({
  name: 'paddle',
  // Paddle's bodies name no merchant account: an endpoint serves the one its secret belongs to.
  declaresAccount: false,
  storedHeaders: ['paddle-signature'],
  signatureHeaders: ['paddle-signature'],
  // Payment commands and polling read Paddle's API with the endpoint's API key.
  usesApi: { defaultBaseUrl: PADDLE_API },

  // Paddle's API keys read pdl_live_apikey_… or pdl_sdbx_apikey_…: such a value as a secret is a paste into the wrong field.
  checkSecret: (secret) =>
    /^pdl_[a-z]+_apikey_/.test(secret) ? "is a Paddle API key: a secret is the notification destination's secret key (pdl_ntfset_…)" : null,
  checkEndpoint: ({ apiKey }) =>
    apiKey !== undefined && apiKey.startsWith('pdl_ntf')
      ? '"apiKey" is a notification destination\'s secret key (it belongs in "secrets"): "apiKey" is a Paddle API key'
      : null,

  key: (secret) => Buffer.from(secret, 'utf8'),

  signature: (headers: IncomingHttpHeaders) => parsePaddleSignature(header(headers, 'paddle-signature')),

  identify(body): EnvelopeIdentity {
    const eventId = requireId(body.event_id, 'event_id');
    const eventType = requireId(body.event_type, 'event_type');
    const data = asObject(body.data);
    return {
      eventId,
      eventType,
      resourceId: isAdjustment(eventType) ? optionalId(data?.transaction_id, 'data.transaction_id') : optionalId(data?.id, 'data.id'),
      // One per destination and event; a replay makes a new one for the same event, so it is never a key.
      deliveryId: optionalId(body.notification_id, 'notification_id'),
      account: null,
      apiVersion: null,
    };
  },

  normalize(body, eventType): ProviderEvent | null {
    const data = asObject(body.data);
    if (!data) return null;
    const occurredAt = isoDate(body.occurred_at);
    const kind = TRANSACTION_KINDS.get(eventType);
    if (kind) return transactionEvent(kind, data, occurredAt);
    if (ADJUSTMENT_TYPES.has(eventType)) return adjustmentEvent(data, occurredAt);
    return null;
  },
});

/**
 * The scheme above, with refunds sent as adjustments through @paddle/paddle-node-sdk
 * (docs/commands.md#paddle), and the transaction read that polling asks about a payment whose
 * notification never came (docs/operations.md#when-webhooks-stop).
 */
export const paddleProvider: HmacProvider = { ...paddleHmac, commands: paddleCommands, readPayment: paddlePaymentReader(paddleHmac.normalize) };
