import { Inject, Injectable, Logger } from '@nestjs/common';
import { withTimeout } from '../common/with-timeout';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS } from '../config/tokens';
import { JobProducer } from '../jobs/job-producer';
import { JobName } from '../jobs/queues';

/** How deliveries go back on the queue. */
export interface RequeueOptions {
  /** Also move a job out of its retry backoff. */
  expedite?: boolean;
  /**
   * The `traceparent` of an operator's action that asks for the run (a reprocess): the run's span
   * is then in the action's trace, linked to the receipt. Otherwise it stays in its delivery's trace.
   */
  trace?: string | null;
}

/**
 * Puts deliveries (back) on the inbox queue: for the sweeper, for deliveries re-run after their
 * payment moved, for parked deliveries released by a registration, and for replays. It only
 * enqueues; the rows are the InboxStore's. A job id is the inbox id; a finished job still kept
 * under that id is replaced, since the row says it must run again. The database decides what the
 * run does.
 */
@Injectable()
export class InboxQueueService {
  private readonly logger = new Logger('InboxQueue');

  constructor(
    private readonly jobs: JobProducer,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
  ) {}

  /**
   * Enqueues each delivery unless its job is already waiting or running. `expedite` also moves a
   * job out of its retry backoff (a registration that makes a parked delivery processable).
   * Returns how many jobs were added or promoted.
   */
  async requeue(ids: readonly string[], { expedite = false, trace }: RequeueOptions = {}): Promise<number> {
    return this.jobs.requeue(JobName.ProcessDelivery, ids, (inboxId) => (trace ? { inboxId, trace } : { inboxId }), { expedite });
  }

  /** Best effort after a commit: a failure leaves the rows `received`, and the sweeper enqueues them. */
  async requeueAfterCommit(ids: readonly string[], options: RequeueOptions = {}): Promise<void> {
    if (ids.length === 0) return;
    try {
      // The bound grows with the list: a bulk replay enqueues up to 10,000 at once.
      const boundMs = Math.max(this.options.tuning.enqueueTimeoutMs, 2_000) * Math.ceil(ids.length / 1_000);
      await withTimeout(this.requeue(ids, options), boundMs, 'requeue');
    } catch (err) {
      this.logger.warn(`${ids.length} deliveries left for the sweeper: ${(err as Error).message}`);
    }
  }
}
