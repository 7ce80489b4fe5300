/*
 * Adyen's part of the test kit: Adyen signs no header but each `NotificationRequestItem` inside the
 * body (`additionalData.hmacSignature`), with the endpoint's hex HMAC key. The kit signs with the
 * official `@adyen/api-library`, the package the module verifies with; it is an optional peer,
 * required when an item is signed, never when the kit is imported.
 */

/** The official package the kit signs Adyen items with, as the module verifies them with it. */
export const ADYEN_LIBRARY = '@adyen/api-library';

/** What the kit uses of the official package. */
export interface AdyenSigningLibrary {
  hmacValidator: new () => { calculateHmac(item: Record<string, unknown>, hexKey: string): string };
}

/** One `NotificationRequestItem` as Adyen sends it (`pspReference`, `eventCode`, `success`, `amount`, …). */
export type AdyenNotificationItem = Record<string, unknown> & { additionalData?: Record<string, unknown> };

/** The body of an Adyen delivery: `{ live, notificationItems: [{ NotificationRequestItem }, …] }`. */
export interface AdyenNotificationBody {
  live: string;
  notificationItems: Array<{ NotificationRequestItem: AdyenNotificationItem }>;
}

/** Why the official package could not be used: the kit's message, and what the command line words its own from. */
export class AdyenLibraryError extends Error {
  constructor(
    message: string,
    readonly reason: 'not-installed' | 'no-hmac-validator' | 'failed',
    /** The first line of the loader's own error (`failed`). */
    readonly detail = '',
  ) {
    super(message);
    this.name = 'AdyenLibraryError';
  }
}

let library: AdyenSigningLibrary | undefined;
const requireLibrary = (): unknown => require(ADYEN_LIBRARY);

/**
 * The official package, loaded once. A host without it gets an error that names it and says how
 * to install it. `load` replaces `require` (for the kit's own tests).
 */
export function adyenSigningLibrary(load: () => unknown = requireLibrary): AdyenSigningLibrary {
  if (library && load === requireLibrary) return library;
  let loaded: unknown;
  try {
    loaded = load();
  } catch (err) {
    if ((err as { code?: unknown })?.code === 'MODULE_NOT_FOUND') {
      throw new AdyenLibraryError(
        `nestjs-payment-webhooks/testing signs Adyen items with the official ${ADYEN_LIBRARY}, which is not installed: npm install --save-dev ${ADYEN_LIBRARY}`,
        'not-installed',
      );
    }
    const detail = String((err as Error)?.message ?? err).split('\n')[0];
    throw new AdyenLibraryError(`nestjs-payment-webhooks/testing could not load ${ADYEN_LIBRARY}: ${detail}`, 'failed', detail);
  }
  if (typeof (loaded as Partial<AdyenSigningLibrary> | null)?.hmacValidator !== 'function') {
    throw new AdyenLibraryError(`the installed ${ADYEN_LIBRARY} has no hmacValidator: npm install ${ADYEN_LIBRARY}@latest`, 'no-hmac-validator');
  }
  if (load === requireLibrary) library = loaded as AdyenSigningLibrary;
  return loaded as AdyenSigningLibrary;
}

/**
 * `item` signed as Adyen signs it, by the official library: HMAC-SHA256 keyed with the decoded hex
 * key over `pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:
 * eventCode:success`, standard base64, in `additionalData.hmacSignature` (any signature it had is
 * replaced). `hmacKey` is the endpoint's key as the Customer Area shows it (hex).
 */
export function signAdyenItem(item: AdyenNotificationItem, hmacKey: string): AdyenNotificationItem {
  const { hmacSignature: _previous, ...additionalData } = item.additionalData ?? {};
  const unsigned = { ...item, additionalData };
  const hmacSignature = new (adyenSigningLibrary().hmacValidator)().calculateHmac(unsigned, hmacKey);
  return { ...item, additionalData: { ...additionalData, hmacSignature } };
}

/** A body of `items` (`live: "false"` unless given), not yet signed. */
export function adyenNotificationBody(items: AdyenNotificationItem[], live = 'false'): AdyenNotificationBody {
  return { live, notificationItems: items.map((item) => ({ NotificationRequestItem: item })) };
}

/** Every item of `body` signed with `hmacKey`: Adyen signs with the current key only, one signature an item. */
export function signAdyenBody(body: AdyenNotificationBody, hmacKey: string): AdyenNotificationBody {
  return {
    ...body,
    notificationItems: body.notificationItems.map((entry) => ({ NotificationRequestItem: signAdyenItem(entry.NotificationRequestItem, hmacKey) })),
  };
}

export interface AdyenNotificationOptions {
  /** The endpoint's HMAC key (hex), as its `secrets` hold it. */
  hmacKey: string;
  /** The items of the delivery, each signed on its own (`additionalData.hmacSignature` is set). */
  items: AdyenNotificationItem[];
  /** The body's `live`; default `"false"`. */
  live?: string;
}

/**
 * A whole Adyen delivery, ready to POST: the body (a string: send it as is) with every item signed,
 * and the headers (`content-type: application/json`; Adyen signs none). The module answers it
 * `200 [accepted]`.
 */
export function adyenNotification(options: AdyenNotificationOptions): { body: string; headers: Record<string, string> } {
  const body = signAdyenBody(adyenNotificationBody(options.items, options.live), options.hmacKey);
  return { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } };
}
