import { defineLifecycle } from '../common/lifecycle';

/** The refund lifecycle (docs/commands.md#a-refunds-lifecycle), as data. */
export const REFUND_STATUSES = ['requested', 'submitted', 'succeeded', 'failed'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];

/**
 * Every move a refund may make. `requested`: written with its outbox message, in the shop's
 * request. `submitted`: the provider accepted it (its `providerRefundId` known). `succeeded`: the
 * provider's webhook (or its API's answer) says the money went back. `failed`: the provider refused
 * it, the attempts ran out, or its webhook says it failed.
 *
 * - `requested` → `succeeded`: an API that answers a refund as done at once.
 * - `failed` → `requested`: an operator retries its dead message (the same key, a fresh budget).
 * - `failed` → `succeeded`: the provider's word wins: a refund whose attempts ran out while the
 *   provider had in fact done it is confirmed by its webhook.
 */
export const REFUND_LIFECYCLE = defineLifecycle<RefundStatus>({
  name: 'refund',
  statuses: REFUND_STATUSES,
  initial: ['requested'],
  moves: {
    requested: ['submitted', 'succeeded', 'failed'],
    submitted: ['succeeded', 'failed'],
    failed: ['requested', 'succeeded'],
    succeeded: [],
  },
});

/** Statuses whose amount is still on its way: what a new refund may not take again. */
export const OUTSTANDING_REFUND_STATUSES: readonly RefundStatus[] = ['requested', 'submitted'];
