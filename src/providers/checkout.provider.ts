import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderEvent, ProviderEventKind, RawAmount } from '../common/provider-event';
import { asObject, EnvelopeIdentity, header, isoDate, minor, optionalId, requireId, SignatureParts, text } from './provider';
import { DEFAULT_CHECKOUT_API } from './checkout-client';
import { checkoutCommands } from './checkout.commands';
import { checkoutReader } from './checkout.reader';
import { hmacProvider, type HmacProvider } from './hmac';

export { DEFAULT_CHECKOUT_API };

/** The event types the service acts on (docs/webhooks.md#checkoutcom), as the payment event each is. */
const KINDS: ReadonlyMap<string, ProviderEventKind> = new Map([
  ['payment_pending', 'processing'],
  ['payment_approved', 'authorized'],
  ['payment_captured', 'succeeded'],
  ['payment_declined', 'failed'],
  ['payment_capture_declined', 'failed'],
  ['payment_voided', 'canceled'],
  ['payment_canceled', 'canceled'],
  ['payment_expired', 'expired'],
  ['payment_refunded', 'refunded'],
  ['dispute_received', 'disputed'],
  // What Checkout.com's event lists call the opening of a dispute: the merchant must answer it.
  ['dispute_evidence_required', 'disputed'],
  ['dispute_won', 'dispute_won'],
  ['dispute_lost', 'dispute_lost'],
]);

/**
 * `Cko-Signature`: the HMAC-SHA256 in lowercase hex, 64 characters, as Checkout.com sends it and
 * the other hex schemes here read it: another spelling of the same bytes is not what was sent.
 */
const HEX_SHA256 = /^[0-9a-f]{64}$/;

/** A Checkout.com secret key (`sk_…`, `sk_sbox_…`, `sk_test_…`): a public key (`pk_…`) pasted by mistake is refused at start. */
const SECRET_KEY = /^sk_[A-Za-z0-9_*#$=-]+$/;

/** A dispute event's `data` is the dispute (`dsp_…`); the payment it is about is `data.payment_id`. */
const isDispute = (eventType: string): boolean => eventType.startsWith('dispute_');

/**
 * `payment_refund_declined`: the refund under `data.action_id` failed, with the acquirer's
 * `response_summary` (and `response_code`) as its reason. No amount of the payment changes.
 */
function refundDeclined(body: Record<string, unknown>): ProviderEvent | null {
  const data = asObject(body.data);
  const resourceId = text(data?.id);
  const actionId = text(data?.action_id);
  if (!data || resourceId === null || actionId === null) return null;
  const summary = text(data.response_summary);
  const code = text(data.response_code);
  const reason = summary !== null && code !== null ? `${summary} (${code})` : (summary ?? code ?? 'declined by Checkout.com');
  return {
    kind: 'refund_outcome',
    resourceId,
    orderId: text(asObject(data.metadata)?.order_id),
    orderReference: text(data.reference),
    amount: null,
    // No money moves: there is no currency to check.
    currency: null,
    refundedAmount: null,
    refund: null,
    refundOutcomes: [{ id: actionId, status: 'failed', reason }],
    declaredAccount: null,
    occurredAt: isoDate(body.created_on) ?? isoDate(body.timestamp),
  };
}

/**
 * Checkout.com (docs/webhooks.md#checkoutcom): `Cko-Signature: <hex>`, an HMAC-SHA256 of the raw
 * body keyed with the webhook's signature key; no timestamp is signed, so `toleranceSeconds` does
 * not apply. The body names no merchant account: an event's account is its endpoint's.
 */
const checkoutHmac: HmacProvider = hmacProvider({
  name: 'checkout',
  declaresAccount: false,
  storedHeaders: ['cko-signature'],
  signatureHeaders: ['cko-signature'],
  // The secret key, for the payment commands and polling that read Checkout.com's API.
  usesApi: { defaultBaseUrl: DEFAULT_CHECKOUT_API },
  checkEndpoint({ apiKey }) {
    if (apiKey !== undefined && !SECRET_KEY.test(apiKey)) return '"apiKey" must be a Checkout.com secret key (sk_…)';
    return null;
  },

  key: (secret) => Buffer.from(secret, 'utf8'),

  signature(headers: IncomingHttpHeaders): SignatureParts | null {
    const value = header(headers, 'cko-signature');
    if (value === undefined || !HEX_SHA256.test(value)) return null;
    return { timestamp: null, prefix: '', candidates: [Buffer.from(value, 'hex')] };
  },

  identify(body): EnvelopeIdentity {
    const eventType = requireId(body.type, 'type');
    const data = asObject(body.data);
    // A dispute is stored under its payment, so that it reaches that payment; one without a payment keeps its own id.
    const paymentOfDispute = isDispute(eventType) ? optionalId(data?.payment_id, 'data.payment_id') : null;
    return {
      eventId: requireId(body.id, 'id'),
      eventType,
      resourceId: paymentOfDispute ?? optionalId(data?.id, 'data.id'),
      deliveryId: null, // Checkout.com sends no delivery id.
      account: null, // The body names no merchant account.
      apiVersion: null, // `version` is the event schema's, not an API version.
    };
  },

  normalize(body, eventType): ProviderEvent | null {
    if (eventType === 'payment_refund_declined') return refundDeclined(body);
    const kind = KINDS.get(eventType);
    const data = asObject(asObject(body)?.data);
    if (!kind || !data) return null;
    // A card payout (money sent out, `destination` instead of `source`) is no order's payment.
    if (data.destination !== undefined) return null;
    const dispute = isDispute(eventType);
    const resourceId = text(dispute ? data.payment_id : data.id);
    if (resourceId === null) return null;
    const amount = minor(data.amount);
    const actionId = text(data.action_id);
    let stated: RawAmount | null = null;
    let refund: ProviderEvent['refund'] = null;
    // A refund carries its own amount under its own action id; the payment sums them, each id once.
    if (kind === 'refunded') refund = actionId !== null && amount !== null ? { id: actionId, amount } : null;
    // A dispute may be partial: its amount is never checked.
    else if (!dispute) stated = amount;
    return {
      kind,
      resourceId,
      orderId: text(asObject(data.metadata)?.order_id),
      // The merchant's reference: a payment's `reference`; a dispute's `payment_reference`.
      orderReference: text(data.reference) ?? (dispute ? text(data.payment_reference) : null),
      amount: stated,
      currency: text(data.currency),
      refundedAmount: null,
      refund,
      // The refund's action id is the id a refund sent through the module was answered with.
      ...(kind === 'refunded' && actionId !== null ? { refundOutcomes: [{ id: actionId, status: 'succeeded' as const }] } : {}),
      declaredAccount: null,
      // Older events say `created_on`, newer ones `timestamp`.
      occurredAt: isoDate(body.created_on) ?? isoDate(body.timestamp),
    };
  },
});

/**
 * The scheme above, with the payment commands sent and the payments read for polling through
 * checkout-sdk-node (docs/commands.md#checkoutcom, docs/operations.md#when-webhooks-stop).
 */
export const checkoutProvider: HmacProvider = { ...checkoutHmac, commands: checkoutCommands, readPayment: checkoutReader };
