import { InjectQueue } from '@nestjs/bullmq';
import { QueueName, JobName } from '../jobs/queues';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Queue } from 'bullmq';
import type { ResolvedOptions } from '../config/options';
import { requeueJobs } from '../jobs/requeue';
import { withTimeout } from '../common/with-timeout';
import { PW_OPTIONS } from '../config/tokens';
import { processDeliveryJobOptions, ProcessDeliveryData } from './inbox.queue';

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
    @InjectQueue(QueueName.Inbox) private readonly queue: Queue<ProcessDeliveryData>,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
  ) {}

  /**
   * Enqueues each delivery unless its job is already waiting or running. `expedite` also moves a
   * job out of its retry backoff (a registration that makes a parked delivery processable).
   * Returns how many jobs were added or promoted.
   */
  async requeue(ids: readonly string[], { expedite = false } = {}): Promise<number> {
    return requeueJobs(
      this.queue,
      ids,
      (id) => this.queue.add(JobName.ProcessDelivery, { inboxId: id }, processDeliveryJobOptions(id, this.options.tuning)),
      { expedite },
    );
  }

  /** Best effort after a commit: a failure leaves the rows `received`, and the sweeper enqueues them. */
  async requeueAfterCommit(ids: readonly string[], options: { expedite?: boolean } = {}): Promise<void> {
    if (ids.length === 0) return;
    try {
      await withTimeout(this.requeue(ids, options), Math.max(this.options.tuning.enqueueTimeoutMs, 2_000), 'requeue');
    } catch (err) {
      this.logger.warn(`${ids.length} deliveries left for the sweeper: ${(err as Error).message}`);
    }
  }
}
