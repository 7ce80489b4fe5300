import { isUtf8 } from 'node:buffer';
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { ProviderEvent, ProviderEventKind } from '../common/provider-event';
import {
  asObject,
  header,
  isoDate,
  LiveKey,
  minor,
  optionalId,
  ProviderAdapter,
  RawDelivery,
  readJsonObject,
  ReceivedEvent,
  ReceiveContext,
  ReceiveResult,
  requireId,
  text,
} from './provider';
import { optionalPackage } from './optional-package';
import { SQUARE_API_BASE_URL, SQUARE_PACKAGE } from './square-client';
import { squareCommands } from './square.commands';
import { squarePaymentReader } from './square.reader';

export { SQUARE_API_BASE_URL, SQUARE_PACKAGE };

/** The header Square signs a notification in: standard base64 of an HMAC-SHA256. */
export const SQUARE_SIGNATURE_HEADER = 'x-square-hmacsha256-signature';

/**
 * What this adapter uses of the `square` package (its `WebhooksHelper`, square 40 and later), typed
 * here so that a host without the package still compiles against this module.
 */
export interface SquarePackage {
  WebhooksHelper: {
    verifySignature(args: { requestBody: string; signatureHeader: string; signatureKey: string; notificationUrl: string }): Promise<boolean>;
  };
}

/** Loads the `square` package (throws `MODULE_NOT_FOUND` when it is not installed). */
export type SquarePackageLoader = () => SquarePackage;

export interface SquareProviderOptions {
  /** Loads `square`; called at most once, when the first square endpoint is checked. */
  loadPackage?: SquarePackageLoader;
}

/**
 * The value of the signature header as text: standard base64 and nothing else. A header that is not
 * (absent, empty, two values joined by a comma, spaces) is unreadable, `missing_signature`; a
 * readable one that no key gives is `invalid_signature`.
 */
const BASE64_TEXT = /^[A-Za-z0-9+/]+={0,2}$/;

/** `payment.created` and `payment.updated`: the payment's `status`, as the lifecycle names it. */
const PAYMENT_STATUS_KINDS: ReadonlyMap<string, ProviderEventKind> = new Map([
  ['APPROVED', 'authorized'],
  ['PENDING', 'processing'],
  ['COMPLETED', 'succeeded'],
  ['CANCELED', 'canceled'],
  ['FAILED', 'failed'],
]);

const PAYMENT_TYPES: ReadonlySet<string> = new Set(['payment.created', 'payment.updated']);
/**
 * A dispute's outcome. `dispute.state.changed` is the type the API versions before 2021-06-16 send,
 * `dispute.state.updated` the one every later version sends instead: both are read, so a
 * subscription of either kind is served.
 */
const DISPUTE_STATE_TYPES: ReadonlySet<string> = new Set(['dispute.state.changed', 'dispute.state.updated']);
const DISPUTE_STATE_KINDS: ReadonlyMap<string, ProviderEventKind> = new Map([
  ['WON', 'dispute_won'],
  ['LOST', 'dispute_lost'],
]);

/**
 * `refund.created` and `refund.updated`: a refund's outcome once it has one. The money it moves is
 * the payment's `refunded_money`, which the `payment.updated` beside it carries: the refund event
 * only confirms or fails the refund by its id (`refund_outcome`, no change of the payment).
 */
const REFUND_TYPES: ReadonlySet<string> = new Set(['refund.created', 'refund.updated']);
const REFUND_OUTCOMES: ReadonlyMap<string, 'succeeded' | 'failed'> = new Map([
  ['COMPLETED', 'succeeded'],
  ['REJECTED', 'failed'],
  ['FAILED', 'failed'],
]);

/** A configured signature key as `receive` checks with it. */
interface SquareKey {
  signatureKey: string;
}

/** A minor-units amount above zero (Square sends integers; a numeric string is read the same). */
function positiveMinor(value: unknown): boolean {
  if (typeof value === 'number') return Number.isFinite(value) && value > 0;
  return typeof value === 'string' && /^\d+$/.test(value) && /[1-9]/.test(value);
}

/**
 * The first live key whose HMAC over `<notificationUrl><raw body>` is the header, or null: one HMAC
 * per key, each compared in constant time (the official helper compares with `===`).
 */
function matchingKey(signature: string, notificationUrl: string, body: Buffer, keys: readonly LiveKey[]): { index: number; key: SquareKey } | null {
  const given = Buffer.from(signature, 'latin1');
  for (const { index, key } of keys) {
    const { signatureKey } = key as SquareKey;
    const expected = Buffer.from(createHmac('sha256', signatureKey).update(notificationUrl, 'utf8').update(body).digest('base64'), 'latin1');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return { index, key: key as SquareKey };
  }
  return null;
}

/**
 * The payment an event is about, and the field that names it: a payment's id, a dispute's disputed
 * payment, a refund's payment; any other object (a test notification) keeps its own `data.id`.
 */
function resourceOf(body: Record<string, unknown>, eventType: string): { value: unknown; field: string } {
  const data = asObject(body.data);
  const object = asObject(data?.object);
  if (eventType.startsWith('payment.')) return { value: asObject(object?.payment)?.id, field: 'data.object.payment.id' };
  if (eventType.startsWith('dispute.')) {
    return { value: asObject(asObject(object?.dispute)?.disputed_payment)?.payment_id, field: 'data.object.dispute.disputed_payment.payment_id' };
  }
  // A refund is about the payment it refunds: its events are processed in that payment's lane, and
  // one refused as too early is processed again when the payment or its refund moves.
  const refundOf = asObject(object?.refund)?.payment_id;
  if (eventType.startsWith('refund.') && refundOf !== undefined) return { value: refundOf, field: 'data.object.refund.payment_id' };
  return { value: data?.id, field: 'data.id' };
}

/** The identity of an authentic notification, and its text as the event's stored body. */
function identify(body: Record<string, unknown>, bodyText: string): ReceivedEvent {
  const eventType = requireId(body.type, 'type');
  const resource = resourceOf(body, eventType);
  return {
    eventId: requireId(body.event_id, 'event_id'),
    eventType,
    resourceId: optionalId(resource.value, resource.field),
    // Square sends no delivery id: a retry carries the notification's own event_id.
    deliveryId: null,
    // A declared account is keyed on and compared: an unprintable one is malformed, not "none declared".
    account: optionalId(body.merchant_id, 'merchant_id'),
    // The subscription's API version is not in the body.
    apiVersion: null,
    body: bodyText,
  };
}

/** What a payment event means: its status, or a refund once `refunded_money` is above zero on a completed payment. */
function paymentEvent(envelope: Record<string, unknown>, payment: Record<string, unknown>): ProviderEvent | null {
  const resourceId = text(payment.id);
  const status = text(payment.status);
  let kind = status === null ? undefined : PAYMENT_STATUS_KINDS.get(status);
  if (resourceId === null || kind === undefined) return null;
  const amountMoney = asObject(payment.amount_money);
  const refundedMoney = asObject(payment.refunded_money);
  let currency = text(amountMoney?.currency);
  // `refunded_money` is the total refunded to date, set once a refund is made: a cumulative amount.
  const refunded = kind === 'succeeded' && positiveMinor(refundedMoney?.amount);
  if (refunded) {
    kind = 'refunded';
    // Both amounts are read in one currency: a refund stated in another is no instruction.
    const refundCurrency = text(refundedMoney?.currency);
    if (refundCurrency !== null && refundCurrency !== currency) currency = null;
  }
  return {
    kind,
    resourceId,
    orderId: null,
    // The merchant's `reference_id` at CreatePayment: an order's `reference`, or else its id.
    orderReference: text(payment.reference_id),
    amount: minor(amountMoney?.amount),
    currency,
    refundedAmount: refunded ? minor(refundedMoney?.amount) : null,
    declaredAccount: text(envelope.merchant_id),
    occurredAt: isoDate(envelope.created_at),
  };
}

/** What a refund event means: its outcome, under the payment it refunds; a refund still PENDING is nothing yet. */
function refundEvent(envelope: Record<string, unknown>, refund: Record<string, unknown>): ProviderEvent | null {
  const id = text(refund.id);
  const resourceId = text(refund.payment_id);
  const status = text(refund.status);
  const outcome = status === null ? undefined : REFUND_OUTCOMES.get(status);
  if (id === null || resourceId === null || outcome === undefined || status === null) return null;
  return {
    kind: 'refund_outcome',
    resourceId,
    orderId: null,
    orderReference: null,
    amount: null,
    // A refund's outcome moves no money here: its currency is checked against nothing.
    currency: null,
    refundedAmount: null,
    refundOutcomes: [outcome === 'succeeded' ? { id, status: outcome } : { id, status: outcome, reason: `refund ${status} by Square` }],
    declaredAccount: text(envelope.merchant_id),
    occurredAt: isoDate(envelope.created_at),
  };
}

/** What a dispute event means; its amount is never checked (a dispute may be partial). */
function disputeEvent(envelope: Record<string, unknown>, eventType: string, dispute: Record<string, unknown>): ProviderEvent | null {
  const resourceId = text(asObject(dispute.disputed_payment)?.payment_id);
  const state = text(dispute.state);
  const kind = eventType === 'dispute.created' ? 'disputed' : DISPUTE_STATE_TYPES.has(eventType) && state !== null ? DISPUTE_STATE_KINDS.get(state) : undefined;
  if (resourceId === null || kind === undefined) return null;
  return {
    kind,
    resourceId,
    orderId: null,
    orderReference: null,
    amount: null,
    currency: text(asObject(dispute.amount_money)?.currency),
    refundedAmount: null,
    declaredAccount: text(envelope.merchant_id),
    occurredAt: isoDate(envelope.created_at),
  };
}

/** What a notification means for the payment it is about (docs/webhooks.md#square); null for what the service does not act on. */
function normalize(body: Record<string, unknown>, eventType: string): ProviderEvent | null {
  const object = asObject(asObject(body.data)?.object);
  if (PAYMENT_TYPES.has(eventType)) {
    const payment = asObject(object?.payment);
    return payment ? paymentEvent(body, payment) : null;
  }
  if (REFUND_TYPES.has(eventType)) {
    const refund = asObject(object?.refund);
    return refund ? refundEvent(body, refund) : null;
  }
  if (eventType === 'dispute.created' || DISPUTE_STATE_TYPES.has(eventType)) {
    const dispute = asObject(object?.dispute);
    return dispute ? disputeEvent(body, eventType, dispute) : null;
  }
  return null;
}

/**
 * Square (docs/webhooks.md#square): `x-square-hmacsha256-signature`, the standard base64 of an
 * HMAC-SHA256 keyed with the subscription's signature key over `<notificationUrl><raw body>`, the
 * URL exactly as registered at Square (the endpoint's `notificationUrl`: behind a proxy the service
 * cannot see it). Verified with the official `square` package (`WebhooksHelper.verifySignature`),
 * which is loaded once, when a square endpoint is first checked: a host with no such endpoint needs
 * none. The helper compares with `===`, so each key is first compared in constant time here, and
 * the helper only ever confirms a signature already found equal. No timestamp is signed.
 */
export function createSquareProvider(options: SquareProviderOptions = {}): ProviderAdapter {
  /** The package, loaded once; null when it is not installed. */
  const squarePackage = optionalPackage(SQUARE_PACKAGE, options.loadPackage ?? (() => require(SQUARE_PACKAGE) as SquarePackage));

  return {
    name: 'square',
    // Square's retry headers say which attempt this is and why the last failed: kept for the archive.
    storedHeaders: [SQUARE_SIGNATURE_HEADER, 'square-environment', 'square-initial-delivery-timestamp', 'square-retry-number', 'square-retry-reason'],
    signatureHeaders: [SQUARE_SIGNATURE_HEADER],
    // Every notification names its seller (`merchant_id`): one endpoint of an application may serve many.
    declaresAccount: true,
    secrets: 'required',
    endpointFields: ['notificationUrl'],
    // The access token and API base URL of later commands and polls; nothing here calls Square.
    usesApi: { defaultBaseUrl: SQUARE_API_BASE_URL },
    // Refunds, captures and voids through the same package (docs/commands.md#square).
    commands: squareCommands,

    checkEndpoint({ settings }): string | null {
      const url = settings.notificationUrl;
      if (url === undefined) return '"notificationUrl" is required: the URL exactly as registered on the Square webhook subscription (Square signs it with the body)';
      // Square registers HTTPS URLs only: any other can never be what it signs.
      if (typeof url !== 'string' || !isHttpsUrl(url)) return '"notificationUrl" must be an https URL, exactly as registered on the Square webhook subscription';
      // The URL is signed as written: spaces around it would make every signature fail.
      if (url !== url.trim()) return '"notificationUrl" has spaces around it: give the URL exactly as registered on the Square webhook subscription';
      const pkg = squarePackage();
      if (!pkg) return `needs the ${SQUARE_PACKAGE} package: npm install ${SQUARE_PACKAGE}`;
      if (typeof pkg.WebhooksHelper?.verifySignature !== 'function') {
        return `needs the ${SQUARE_PACKAGE} package 40 or later (WebhooksHelper.verifySignature): npm install ${SQUARE_PACKAGE}@latest`;
      }
      return null;
    },

    prepareKey: (secret): SquareKey => ({ signatureKey: secret }),

    async receive(delivery: RawDelivery, context: ReceiveContext): Promise<ReceiveResult> {
      const signature = header(delivery.headers, SQUARE_SIGNATURE_HEADER);
      if (signature === undefined || !BASE64_TEXT.test(signature)) return { ok: false, error: 'missing_signature' };
      const notificationUrl = context.endpoint.settings.notificationUrl;
      if (typeof notificationUrl !== 'string') throw new Error(`endpoint "${context.endpoint.id}" has no notificationUrl`);
      const matched = matchingKey(signature, notificationUrl, delivery.body, context.keys);
      if (!matched) return { ok: false, error: 'invalid_signature' };
      // The official helper takes the body as text: bytes that are not UTF-8 would reach it altered,
      // and are refused as malformed below in any case.
      if (isUtf8(delivery.body)) {
        const pkg = squarePackage();
        if (!pkg) throw new Error(`endpoint "${context.endpoint.id}" needs the ${SQUARE_PACKAGE} package: npm install ${SQUARE_PACKAGE}`);
        const { signatureKey } = matched.key;
        const verified = await pkg.WebhooksHelper.verifySignature({ requestBody: delivery.body.toString('utf8'), signatureHeader: signature, signatureKey, notificationUrl });
        if (verified !== true) return { ok: false, error: 'invalid_signature' };
      }
      const { text: bodyText, body } = readJsonObject(delivery.body);
      return { ok: true, secretIndex: matched.index, events: [identify(body, bodyText)] };
    },

    normalize,
    // Polling asks GetPayment about a payment whose notification never came (docs/operations.md#when-webhooks-stop).
    readPayment: squarePaymentReader(normalize),
  };
}

function isHttpsUrl(value: string): boolean {
  try {
    return new URL(value).protocol === 'https:';
  } catch {
    return false;
  }
}

/** The built-in Square provider. */
export const squareProvider = createSquareProvider();
