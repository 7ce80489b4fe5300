import { defineLifecycle, statusesMovingTo } from '../common/lifecycle';

/**
 * The delivery lifecycle (docs/webhooks.md, "Delivery outcomes"), as data: where a delivery's
 * processing may end, and which ends may be opened again. `received` is the only status that is not
 * final.
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
export const INBOX_TRANSITIONS = INBOX_LIFECYCLE.moves;

/** The outcomes each final status may carry (CONTRACT §4); `failed` carries the last error's code. */
export const INBOX_OUTCOMES = {
  processed: ['applied', 'already_applied', 'stale'],
  ignored: ['no_handler'],
  rejected: ['account_mismatch', 'amount_mismatch', 'currency_mismatch', 'illegal_transition', 'too_many_payments'],
  unmatched: ['payment_not_found'],
} as const satisfies Record<Exclude<FinalInboxStatus, 'failed'>, readonly string[]>;

/** How a processing run ends: a status and one of its outcomes, checked by the compiler. */
export type ProcessingResult = {
  [S in keyof typeof INBOX_OUTCOMES]: { status: S; outcome: (typeof INBOX_OUTCOMES)[S][number] };
}[keyof typeof INBOX_OUTCOMES];

/** Final statuses a replay (reprocess) opens again: the others are left as they are. */
export const REOPENABLE: readonly InboxStatus[] = statusesMovingTo(INBOX_LIFECYCLE, 'received');

/**
 * What a registration of a delivery's payment lets through, as a condition on a row (`w.` columns):
 * a delivery parked `unmatched` (no payment to apply it to yet), or one `rejected` as
 * `account_mismatch` because its order did not expect its account yet — a registration under that
 * account is what makes the order expect it. Only events keyed in their own account (`key_scope`
 * empty): one its endpoint does not serve stays rejected.
 */
export const WAITS_FOR_REGISTRATION = `(w.status = 'unmatched' OR (w.status = 'rejected' AND w.outcome = 'account_mismatch' AND w.key_scope = ''))`;

/** The one statement that opens deliveries again (to `received`); the caller adds `WHERE …`. */
export const REOPEN_SQL = `UPDATE webhook_inbox SET status = 'received', outcome = NULL, processed_at = NULL`;

/**
 * Final statuses that retention may purge: the outcome is settled. `failed` is kept (it waits for an
 * operator's replay), like `received` (not processed yet).
 */
export const PURGEABLE: readonly FinalInboxStatus[] = ['processed', 'ignored', 'rejected', 'unmatched'];
