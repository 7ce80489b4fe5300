import { canMove, defineLifecycle, isBehind } from '../common/lifecycle';

/** The payment lifecycle (docs/rest-api.md#payment-lifecycle), as data. */
export const PAYMENT_STATUSES = [
  'pending',
  'processing',
  'authorized',
  'succeeded',
  'partially_refunded',
  'refunded',
  'disputed',
  'dispute_lost',
  'failed',
  'canceled',
  'expired',
] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

/**
 * Every move a payment may make. A move to a status not listed here is `stale` when that status
 * lies behind the current one (see PAYMENT_PROGRESS), `rejected` otherwise.
 *
 * - Any pre-capture status may jump ahead: an event can be missed or arrive late.
 * - `failed`, `canceled` and `expired` may still become `succeeded`: money that arrives is
 *   recorded (a retried attempt on the same Stripe PaymentIntent, a late payment); the order
 *   decides what it means.
 * - `disputed` → `succeeded` / `partially_refunded` / `refunded` is a dispute won (only a
 *   dispute-won event makes it; a plain `succeeded` on a captured payment is already applied).
 *   While a dispute is open or lost, refunds raise the refunded amount and the dispute keeps the
 *   status.
 */
export const PAYMENT_LIFECYCLE = defineLifecycle<PaymentStatus>({
  name: 'payment',
  statuses: PAYMENT_STATUSES,
  initial: ['pending'],
  moves: {
    pending: ['processing', 'authorized', 'succeeded', 'failed', 'canceled', 'expired'],
    processing: ['authorized', 'succeeded', 'failed', 'canceled', 'expired'],
    authorized: ['succeeded', 'failed', 'canceled', 'expired'],
    failed: ['succeeded'],
    canceled: ['succeeded'],
    expired: ['succeeded'],
    succeeded: ['partially_refunded', 'refunded', 'disputed', 'dispute_lost'],
    partially_refunded: ['partially_refunded', 'refunded', 'disputed', 'dispute_lost'],
    disputed: ['succeeded', 'partially_refunded', 'refunded', 'dispute_lost'],
    refunded: [],
    dispute_lost: [],
  },
});
export const PAYMENT_TRANSITIONS = PAYMENT_LIFECYCLE.moves;

/** How far along each status is. A target at or behind the current progress is stale. */
export const PAYMENT_PROGRESS: Readonly<Record<PaymentStatus, number>> = {
  pending: 0,
  processing: 1,
  authorized: 2,
  failed: 3,
  canceled: 3,
  expired: 3,
  succeeded: 4,
  partially_refunded: 5,
  disputed: 6,
  refunded: 7,
  dispute_lost: 7,
};

/** Statuses in which the money was captured. */
export const CAPTURED_STATUSES: ReadonlySet<PaymentStatus> = new Set([
  'succeeded',
  'partially_refunded',
  'disputed',
  'refunded',
  'dispute_lost',
]);

export type RejectionReason = 'illegal_transition' | 'amount_mismatch' | 'currency_mismatch';

export type ApplyResult =
  | { outcome: 'applied' | 'already_applied' | 'stale'; from: PaymentStatus; to: PaymentStatus }
  | { outcome: 'rejected'; from: PaymentStatus; reason: RejectionReason; detail: string };

/**
 * Where `from` may go when an event names the status `to` (a status event: `payment.succeeded`
 * twice is one move). The caller writes the status this returns, never the one it asked for.
 */
export function decideMove(from: PaymentStatus, to: PaymentStatus): ApplyResult {
  if (to === from) return { outcome: 'already_applied', from, to: from };
  if (canMove(PAYMENT_LIFECYCLE, from, to)) return { outcome: 'applied', from, to };
  if (isBehind(PAYMENT_PROGRESS, from, to)) return { outcome: 'stale', from, to: from };
  return { outcome: 'rejected', from, reason: 'illegal_transition', detail: `a ${from} payment cannot become ${to}` };
}
