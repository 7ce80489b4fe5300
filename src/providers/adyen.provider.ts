import type { ProviderEvent, ProviderEventKind } from '../common/provider-event';
import {
  asObject,
  DeliveryAnswer,
  LiveKey,
  MalformedPayloadError,
  minor,
  optionalId,
  ProviderAdapter,
  ProviderEndpoint,
  RawDelivery,
  readJsonObject,
  ReceiveContext,
  ReceivedEvent,
  ReceiveResult,
  requireId,
  text,
} from './provider';
import { adyenCommands, DEFAULT_ADYEN_CHECKOUT_API } from './adyen.commands';

/** The official package that verifies Adyen's signatures: an optional peer, loaded only for an `adyen` endpoint. */
export const ADYEN_LIBRARY = '@adyen/api-library';

/** What this provider uses of the official package (its `hmacValidator`), typed here so that nothing of it is imported. */
export interface AdyenLibrary {
  hmacValidator: new () => { validateHMAC(item: Record<string, unknown>, hexKey: string): boolean };
}

/** Loads the official package; throws as `require` does when it is not installed. */
export type AdyenLibraryLoader = () => AdyenLibrary;

// Required when an adyen endpoint is validated or resolved, never when this file is: a host without
// an adyen endpoint needs no such package.
const requireLibrary: AdyenLibraryLoader = () => require('@adyen/api-library') as AdyenLibrary;

/** An Adyen HMAC key: the hex string Adyen's Customer Area shows (its decoded bytes key the HMAC). */
const HEX = /^(?:[0-9a-fA-F]{2})+$/;
/** The floor on a key: Adyen generates 32 bytes; fewer than 16 is a placeholder or a truncated paste. */
export const MIN_ADYEN_KEY_BYTES = 16;
/** `additionalData.hmacSignature`: the standard base64 of an HMAC-SHA256, as Adyen writes it. */
const BASE64_SHA256 = /^[A-Za-z0-9+/]{43}=$/;

/** Codes of a modification of a payment: their `pspReference` is the modification's, `originalReference` the payment's. */
const MODIFICATIONS: ReadonlySet<string> = new Set([
  'CAPTURE',
  'REFUND',
  'REFUND_FAILED',
  'CANCELLATION',
  'CANCEL_OR_REFUND',
  'NOTIFICATION_OF_CHARGEBACK',
  'CHARGEBACK',
  'CHARGEBACK_REVERSED',
]);

/** The event codes acted on with `success: "true"` (AUTHORISATION depends on the endpoint's `capture`). */
const KINDS: ReadonlyMap<string, ProviderEventKind> = new Map([
  ['CAPTURE', 'succeeded'],
  ['CANCELLATION', 'canceled'],
  ['CANCEL_OR_REFUND', 'canceled'],
  ['REFUND', 'refunded'],
  ['NOTIFICATION_OF_CHARGEBACK', 'disputed'],
  ['CHARGEBACK', 'dispute_lost'],
  ['CHARGEBACK_REVERSED', 'dispute_won'],
]);

const CAPTURE_MODES = ['automatic', 'manual'] as const;

/** What Adyen waits for once a delivery is recorded: the text `[accepted]`, whatever the items' outcomes. */
const ACCEPTED: DeliveryAnswer = { contentType: 'text/plain; charset=utf-8', body: '[accepted]' };

/** The items of a notification body: `{ live, notificationItems: [{ NotificationRequestItem: {…} }, …] }`, each of the types Adyen signs. */
function notificationItems(body: Record<string, unknown>): Array<Record<string, unknown>> {
  const list = body.notificationItems;
  const shape = 'the body must hold "notificationItems", a non-empty array of {"NotificationRequestItem": {…}}';
  if (!Array.isArray(list) || list.length === 0) throw new MalformedPayloadError(shape);
  return list.map((entry, i) => {
    const item = asObject(asObject(entry)?.NotificationRequestItem);
    if (!item) throw new MalformedPayloadError(shape);
    checkSignedTypes(item, i);
    return item;
  });
}

/** The signed fields Adyen sends as strings (`amount.value` is a number, `amount.currency` a string). */
const SIGNED_TEXT_FIELDS = ['pspReference', 'originalReference', 'merchantAccountCode', 'merchantReference', 'eventCode', 'success'] as const;

/**
 * Each signed field an item has is of the type Adyen sends it as, before any signature is checked.
 * The signature covers each field as JavaScript's `join` writes it, while the adapter reads only
 * strings (and a number for the amount): an array `["x"]`, an object, a boolean or null would sign
 * as text the reader takes for absent. A number where Adyen sends a string is refused too: Adyen
 * never sends one (its examples and its Webhooks API type these fields as strings), and no reader
 * of the item would see it. An absent field is absent: it signs as the empty string.
 */
function checkSignedTypes(item: Record<string, unknown>, index: number): void {
  const refuse = (field: string, type: string): never => {
    throw new MalformedPayloadError(`item #${index + 1}: "${field}" must be ${type}, as Adyen signs and sends it`);
  };
  for (const field of SIGNED_TEXT_FIELDS) if (Object.hasOwn(item, field) && typeof item[field] !== 'string') refuse(field, 'a string');
  if (!Object.hasOwn(item, 'amount')) return;
  const amount = asObject(item.amount);
  if (!amount) return refuse('amount', 'an object');
  if (Object.hasOwn(amount, 'value') && (typeof amount.value !== 'number' || !Number.isFinite(amount.value))) refuse('amount.value', 'a number');
  if (Object.hasOwn(amount, 'currency') && typeof amount.currency !== 'string') refuse('amount.currency', 'a string');
}

/** The signature an item carries: a string in `additionalData.hmacSignature`, else null (`missing_signature`). */
function signatureOf(item: Record<string, unknown>): string | null {
  const value = asObject(item.additionalData)?.hmacSignature;
  return typeof value === 'string' && value.length > 0 ? value : null;
}

/**
 * The index of the first live key the official validator accepts for `item`, or -1. The validator
 * reads the signed fields itself (`pspReference:originalReference:merchantAccountCode:
 * merchantReference:value:currency:eventCode:success`, an absent one empty); it is given an `amount`
 * object in any case, since it reads through it.
 */
function keyOf(library: AdyenLibrary, item: Record<string, unknown>, keys: readonly LiveKey[]): number {
  const amount = asObject(item.amount) ?? {};
  const signable = { ...item, amount };
  const validator = new library.hmacValidator();
  for (const { index, key } of keys) {
    try {
      if (validator.validateHMAC(signable, (key as AdyenKey).hex)) return index;
    } catch {
      // The library could not build this item's signing string. The signed fields' types are
      // checked before (checkSignedTypes), so none reads so; should one, it does not verify.
      return -1;
    }
  }
  return -1;
}


/** A configured key as `receive` checks with it. */
interface AdyenKey {
  hex: string;
}

/** The identity of one authentic item, and the item itself as the event's stored body. */
function identify(item: Record<string, unknown>): ReceivedEvent {
  const pspReference = requireId(item.pspReference, 'pspReference');
  const eventCode = requireId(item.eventCode, 'eventCode');
  const success = item.success;
  if (success !== 'true' && success !== 'false') throw new MalformedPayloadError('success must be "true" or "false"');
  const originalReference = optionalId(item.originalReference, 'originalReference');
  return {
    // The same code for the same pspReference is the same notification; `success` tells its two outcomes apart.
    eventId: `${pspReference}:${eventCode}:${success}`,
    eventType: eventCode,
    resourceId: MODIFICATIONS.has(eventCode) ? (originalReference ?? pspReference) : pspReference,
    deliveryId: null,
    account: requireId(item.merchantAccountCode, 'merchantAccountCode'),
    apiVersion: null,
    body: JSON.stringify(item),
  };
}

/** An ISO 8601 `eventDate` as a Date, else null. */
function eventDate(value: unknown): Date | null {
  if (typeof value !== 'string') return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/**
 * Adyen's standard notification webhooks (docs/webhooks.md#adyen), as an adapter of their own: one
 * delivery carries one or more items, each an event signed on its own inside the body (an HMAC over
 * named fields, verified with the official `@adyen/api-library`, which is loaded only for an adyen
 * endpoint and through `load`).
 *
 * - The body is parsed first, with the same bounds as any (size, depth, UTF-8): its signatures lie
 *   inside it. A body not of the shape is `400 malformed_payload`.
 * - An item without `additionalData.hmacSignature` refuses the delivery `missing_signature`; an item
 *   no live key verifies refuses it `invalid_signature`: nothing of it is recorded. Each item is
 *   verified on its own by any live key (a rotation can straddle a batch); the secret index reported
 *   is the greatest any item needed, so that an old key shows in use while any item still needs it.
 *   No timestamp is signed: `toleranceSeconds` does not apply.
 * - The answer once every item is recorded (now or before) is the text `[accepted]`.
 * - `merchantAccountIds` is allowed: each item declares its `merchantAccountCode`, and one webhook of
 *   an Adyen company account serves the merchant accounts under it.
 */
export function createAdyenProvider(load: AdyenLibraryLoader = requireLibrary): ProviderAdapter {
  let library: AdyenLibrary | undefined;
  /** The official package, loaded once; throws, saying how to install it, when it is not there. */
  const officialLibrary = (): AdyenLibrary => {
    if (library) return library;
    let loaded: AdyenLibrary;
    try {
      loaded = load();
    } catch (err) {
      const notInstalled = (err as { code?: unknown })?.code === 'MODULE_NOT_FOUND' && String((err as Error).message).includes(ADYEN_LIBRARY);
      throw new Error(
        notInstalled
          ? `the adyen provider needs the optional package ${ADYEN_LIBRARY}, which is not installed: npm install ${ADYEN_LIBRARY}`
          : `the adyen provider could not load ${ADYEN_LIBRARY}: ${String((err as Error)?.message ?? err).split('\n')[0]}`,
      );
    }
    if (typeof loaded?.hmacValidator !== 'function') {
      throw new Error(`the installed ${ADYEN_LIBRARY} has no hmacValidator: npm install ${ADYEN_LIBRARY}@latest`);
    }
    return (library = loaded);
  };

  return {
    name: 'adyen',
    // The signature is in the body; no header of Adyen's is needed to read a delivery again.
    storedHeaders: [],
    signatureHeaders: [],
    signatureFields: ['additionalData.hmacSignature'],
    declaresAccount: true,
    secrets: 'required',
    endpointFields: ['capture'],
    // The Checkout API key and address that payment commands are sent with (docs/commands.md#adyen).
    usesApi: { defaultBaseUrl: DEFAULT_ADYEN_CHECKOUT_API },
    commands: adyenCommands,

    checkSecret: (secret) => (HEX.test(secret) ? null : 'is not hex: an Adyen HMAC key is the hex string the Customer Area shows'),
    weakSecret: (secret) =>
      secret.length / 2 < MIN_ADYEN_KEY_BYTES ? `decodes to fewer than ${MIN_ADYEN_KEY_BYTES} bytes (Adyen's HMAC keys have 32)` : null,

    checkEndpoint({ apiBaseUrl, settings }) {
      const capture = settings.capture;
      if (capture !== undefined && !CAPTURE_MODES.includes(capture as (typeof CAPTURE_MODES)[number])) {
        return '"capture" must be "automatic" or "manual"';
      }
      if (apiBaseUrl !== undefined && !apiBaseUrl.startsWith('https://')) {
        return '"apiBaseUrl" must be an https URL (the Adyen library speaks HTTPS only)';
      }
      try {
        officialLibrary();
      } catch (err) {
        return (err as Error).message;
      }
      return null;
    },

    prepareKey(secret): AdyenKey {
      officialLibrary();
      return { hex: secret };
    },

    receive(delivery: RawDelivery, context: ReceiveContext): ReceiveResult {
      const items = notificationItems(readJsonObject(delivery.body).body);
      if (items.some((item) => signatureOf(item) === null)) return { ok: false, error: 'missing_signature' };
      const validator = officialLibrary();
      let secretIndex = -1;
      for (const item of items) {
        // A signature of another form can never be what Adyen sent.
        const index = BASE64_SHA256.test(signatureOf(item)!) ? keyOf(validator, item, context.keys) : -1;
        if (index < 0) return { ok: false, error: 'invalid_signature' };
        secretIndex = Math.max(secretIndex, index);
      }
      return { ok: true, secretIndex, events: items.map(identify) };
    },

    normalize(body, eventType, endpoint?: ProviderEndpoint): ProviderEvent | null {
      const pspReference = text(body.pspReference);
      if (pspReference === null) return null;
      const success = body.success === 'true';
      // A refund Adyen refused (REFUND, success "false") or that failed later (REFUND_FAILED): its outcome only.
      if ((eventType === 'REFUND' && !success) || eventType === 'REFUND_FAILED') return failedRefund(body, pspReference);
      let kind: ProviderEventKind | null;
      if (eventType === 'AUTHORISATION') {
        kind = !success ? 'failed' : endpoint?.settings.capture === 'manual' ? 'authorized' : 'succeeded';
      } else {
        // A modification that did not happen (success "false": a refund or capture refused) changes nothing.
        kind = success ? (KINDS.get(eventType) ?? null) : null;
      }
      if (kind === null) return null;
      const resourceId = MODIFICATIONS.has(eventType) ? (text(body.originalReference) ?? pspReference) : pspReference;
      const amountObject = asObject(body.amount);
      const value = minor(amountObject?.value);
      // A refund, and a cancel-or-refund of a captured payment, carry that refund's amount only, under its own pspReference.
      const refundLike = eventType === 'REFUND' || eventType === 'CANCEL_OR_REFUND';
      // The payment's amount where the event states it; a dispute may be partial, so it is never checked.
      const statesPayment = eventType === 'AUTHORISATION' || eventType === 'CAPTURE' || eventType === 'CANCELLATION';
      return {
        kind,
        resourceId,
        orderId: null,
        orderReference: text(body.merchantReference),
        amount: statesPayment ? value : null,
        currency: text(amountObject?.currency),
        refundedAmount: null,
        refund: refundLike && value !== null ? { id: pspReference, amount: value } : null,
        // The refund's pspReference is what the Checkout API answered the module's refund with.
        ...(eventType === 'REFUND' ? { refundOutcomes: [{ id: pspReference, status: 'succeeded' as const }] } : {}),
        declaredAccount: text(body.merchantAccountCode),
        occurredAt: eventDate(body.eventDate),
      };
    },

    answer: () => ACCEPTED,
  };
}

/**
 * A refund that did not happen, as its outcome (docs/commands.md#adyen): the refund's pspReference
 * failed with Adyen's `reason`; the payment (its `originalReference`) and every amount stay as they are.
 */
function failedRefund(body: Record<string, unknown>, pspReference: string): ProviderEvent | null {
  const payment = text(body.originalReference);
  if (payment === null) return null;
  return {
    kind: 'refund_outcome',
    resourceId: payment,
    orderId: null,
    orderReference: text(body.merchantReference),
    amount: null,
    currency: text(asObject(body.amount)?.currency),
    refundedAmount: null,
    refund: null,
    refundOutcomes: [{ id: pspReference, status: 'failed', reason: text(body.reason) ?? 'refused by Adyen' }],
    declaredAccount: text(body.merchantAccountCode),
    occurredAt: eventDate(body.eventDate),
  };
}

/** The built-in `adyen` provider: the official package is required the first time an adyen endpoint needs it. */
export const adyenProvider: ProviderAdapter = createAdyenProvider();
