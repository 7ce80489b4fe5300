import { defineLifecycle } from '../../common/lifecycle';

/** A backfill's lifecycle, as data: it runs until its window is walked, or until it cannot go on. */
export const BACKFILL_STATUSES = ['running', 'done', 'failed'] as const;
export type BackfillStatus = (typeof BACKFILL_STATUSES)[number];

export const BACKFILL_LIFECYCLE = defineLifecycle<BackfillStatus>({
  name: 'backfill',
  statuses: BACKFILL_STATUSES,
  initial: ['running'],
  moves: {
    running: ['done', 'failed'],
    done: [],
    failed: [],
  },
});
