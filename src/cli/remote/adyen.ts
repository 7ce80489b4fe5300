import { randomInt } from 'node:crypto';
import {
  ADYEN_LIBRARY,
  AdyenLibraryError,
  adyenNotificationBody,
  AdyenNotificationBody,
  AdyenNotificationItem,
  AdyenSigningLibrary,
  adyenSigningLibrary,
  signAdyenBody,
  signAdyenItem,
} from '../../testing/adyen';
import { CliExit, EXIT } from '../context';

/**
 * How the command line plays Adyen's standard notification webhooks: the items of one delivery,
 * each signed on its own inside the body with the official `@adyen/api-library` (an optional
 * package, loaded only when a command speaks adyen), and the `[accepted]` answer Adyen waits for.
 */

/** The official package the kit signs with, as the module verifies with it. */
export { ADYEN_LIBRARY };

/**
 * The official package, loaded once; when it is not installed (or has no `hmacValidator`) the
 * command ends with exit 2 and one line saying how to install it. `load` is for the tests.
 */
export function adyenLibrary(command: string, load?: () => unknown): AdyenSigningLibrary {
  try {
    return adyenSigningLibrary(load);
  } catch (err) {
    if (!(err instanceof AdyenLibraryError)) throw err;
    throw new CliExit(
      EXIT.couldNotRun,
      err.reason === 'not-installed'
        ? `${command}: --provider adyen signs with the official ${ADYEN_LIBRARY}, which is not installed: npm install ${ADYEN_LIBRARY}`
        : err.reason === 'no-hmac-validator'
          ? `${command}: the installed ${ADYEN_LIBRARY} has no hmacValidator: npm install ${ADYEN_LIBRARY}@latest`
          : `${command}: --provider adyen could not load ${ADYEN_LIBRARY}: ${err.detail}`,
    );
  }
}

/** An Adyen HMAC key as the Customer Area shows it: hex, an even number of digits. */
export function isAdyenKey(secret: string): boolean {
  return /^(?:[0-9a-fA-F]{2})+$/.test(secret);
}

/** A fresh pspReference in Adyen's shape: 16 digits. */
export function newPspReference(): string {
  return `${randomInt(1, 10)}${Array.from({ length: 15 }, () => randomInt(0, 10)).join('')}`;
}

/** The event id the service keys an Adyen notification by: `<pspReference>:<eventCode>:<success>`. */
export function adyenEventId(item: Record<string, unknown>): string {
  return `${String(item.pspReference ?? '')}:${String(item.eventCode ?? '')}:${String(item.success ?? '')}`;
}

/** One `NotificationRequestItem`, not yet signed. */
export type NotificationItem = AdyenNotificationItem;

/** The body of a delivery: `{ live, notificationItems: [{ NotificationRequestItem }, …] }`. */
export type NotificationBody = AdyenNotificationBody;

export function notificationBody(items: NotificationItem[]): NotificationBody {
  return adyenNotificationBody(items);
}

/** The items of a body built by `notificationBody` (or as Adyen sends one). */
export function itemsOf(body: unknown): NotificationItem[] {
  const list = (body as Partial<NotificationBody> | null)?.notificationItems;
  return Array.isArray(list) ? list.map((entry) => entry?.NotificationRequestItem ?? {}) : [];
}

/** `item` signed as Adyen signs it, by the kit (`signAdyenItem`); a missing official package ends `command` with exit 2. */
export function signItem(item: NotificationItem, hexKey: string, command = 'simulate'): NotificationItem {
  adyenLibrary(command);
  return signAdyenItem(item, hexKey);
}

/** Every item of `body` signed with `hexKey`: Adyen signs with the current key only, so one signature an item. */
export function signBody(body: NotificationBody, hexKey: string, command = 'simulate'): NotificationBody {
  adyenLibrary(command);
  return signAdyenBody(body, hexKey);
}

/** What the module answers (and Adyen waits for) once every item of a delivery is recorded, now or before. */
export const ADYEN_ACCEPTED = '[accepted]';

/** A 2xx with the text `[accepted]`: the same for a new delivery and one whose items were all recorded already. */
export function isAdyenAccepted(answer: { status: number; text?: string }): boolean {
  return answer.status >= 200 && answer.status < 300 && answer.text?.trim() === ADYEN_ACCEPTED;
}
