import type { JobsOptions } from 'bullmq';
import type { TuningOptions } from '../config/options';

export interface ProcessDeliveryData {
  inboxId: string;
}

/**
 * Job options of a delivery's processing job. The job id is the inbox id, so the receive path,
 * the sweeper and a replay can all enqueue without doubling; completed jobs are kept a while
 * (an id only deduplicates while its job exists), and the database decides anyway.
 */
export function processDeliveryJobOptions(inboxId: string, tuning: TuningOptions): JobsOptions {
  return {
    jobId: inboxId,
    attempts: tuning.inboxAttempts,
    backoff: { type: 'exponential', delay: tuning.inboxBackoffMs, jitter: 0.5 },
    removeOnComplete: { age: 3_600, count: 10_000 },
    removeOnFail: { age: 7 * 24 * 3_600 },
  };
}
