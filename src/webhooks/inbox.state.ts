import { defineLifecycle, statusesMovingTo } from '../common/lifecycle';

/**
 * The delivery lifecycle (docs/webhooks.md, "Delivery outcomes"), as data: where a delivery's
 * processing may end, and which ends may be opened again. `received` is the only status that is not
 * final. Every status the inbox writes is checked against it (inbox.store.ts).
 */
export const INBOX_STATUSES = ['received', 'processed', 'ignored', 'rejected', 'unmatched', 'failed'] as const;
export type InboxStatus = (typeof INBOX_STATUSES)[number];
export type FinalInboxStatus = Exclude<InboxStatus, 'received'>;

export const INBOX_LIFECYCLE = defineLifecycle<InboxStatus>({
  name: 'delivery',
  statuses: INBOX_STATUSES,
  initial: ['received'],
  moves: {
    received: ['processed', 'ignored', 'rejected', 'unmatched', 'failed'],
    processed: [],
    ignored: [],
    // An event that came too early (a refund before its capture) is opened again when its payment moves;
    // any rejected delivery may be replayed by an operator.
    rejected: ['received'],
    // Released when its payment is registered, or replayed.
    unmatched: ['received'],
    // Replayed after the fix.
    failed: ['received'],
  },
});

/**
 * The outcomes each final status may carry (docs/webhooks.md#delivery-outcomes); `failed` carries
 * the last error's code.
 */
export const INBOX_OUTCOMES = {
  processed: ['applied', 'already_applied', 'stale'],
  ignored: ['no_handler'],
  rejected: ['account_mismatch', 'amount_mismatch', 'currency_mismatch', 'illegal_transition', 'too_many_payments', 'resource_not_found'],
  unmatched: ['payment_not_found'],
} as const satisfies Record<Exclude<FinalInboxStatus, 'failed'>, readonly string[]>;

/** How a processing run ends: a status and one of its outcomes, checked by the compiler. */
export type ProcessingResult = {
  [S in keyof typeof INBOX_OUTCOMES]: { status: S; outcome: (typeof INBOX_OUTCOMES)[S][number] };
}[keyof typeof INBOX_OUTCOMES];

/** Final statuses a replay (reprocess) opens again: the others are left as they are. */
export const REOPENABLE: readonly InboxStatus[] = statusesMovingTo(INBOX_LIFECYCLE, 'received');

/**
 * Final statuses that retention may purge: the outcome is settled. `failed` is kept (it waits for an
 * operator's replay), like `received` (not processed yet).
 */
export const PURGEABLE: readonly FinalInboxStatus[] = ['processed', 'ignored', 'rejected', 'unmatched'];

/**
 * How a delivery reached the inbox: pushed by the provider, pulled back by a backfill
 * (docs/operations.md#backfill), or read from the provider by a poll (docs/operations.md#when-webhooks-stop).
 */
export const DELIVERY_SOURCES = ['webhook', 'backfill', 'poll'] as const;
export type DeliverySource = (typeof DELIVERY_SOURCES)[number];
