import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { withTimeout } from '../common/with-timeout';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS, PW_RECEIVE_PRESSURE } from '../config/tokens';
import { JobProducer } from '../jobs/job-producer';
import { jobOf, retryAfterBackoff, RETRY_AFTER_BACKOFF } from '../jobs/job-registry';
import { JobName } from '../jobs/queues';
import type { ReceivePressure } from '../jobs/receive-pressure';
import { detached } from '../observability/tracing';
import { DeliveryProcessingService } from './delivery-processing.service';
import { attemptDelivery } from './inbox.processor';

/**
 * The first attempt at a delivery, made by the process that recorded it, as soon as its row is
 * committed: no enqueue, queue or worker between the commit and the processing transaction.
 *
 * It is the attempt a job of the inbox queue would make (a slot of the process's ReceivePressure,
 * then the processing batcher, with the same attempt number, budget and span). Where it is not
 * final and fails, the delivery goes to the queue for the rest of its budget (job data
 * `attemptsBefore: 1`, after the backoff its first retry would have had), so the attempts and their
 * schedule are the same as a job's. A delivery is queued instead when this process runs no workers,
 * when their Redis is away (the queue's rules then hold for everything: the sweeper brings it once
 * Redis is back), and past `workerConcurrency` attempts under way. A crash before or during the
 * attempt leaves the row `received`, and the sweeper enqueues it; two attempts at one row meet on
 * its lock, and the second finds it final.
 */
@Injectable()
export class InboxHandoff implements BeforeApplicationShutdown {
  private readonly logger = new Logger('InboxHandoff');
  private readonly running = new Set<Promise<void>>();
  /** The deliveries attempted here now (the sweeper leaves them alone). */
  private readonly attempting = new Set<string>();
  private stopped = false;

  constructor(
    private readonly processing: DeliveryProcessingService,
    private readonly jobs: JobProducer,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    @Inject(PW_RECEIVE_PRESSURE) private readonly pressure: ReceivePressure,
  ) {}

  /** Whether deliveries recorded here are attempted here: this process runs the workers, and their Redis is up. */
  get attemptsHere(): boolean {
    return this.options.runWorkers && !this.stopped && this.jobs.connected(JobName.ProcessDelivery);
  }

  /**
   * Deliveries just committed: each is attempted here, unless `workerConcurrency` attempts are under
   * way already. Returns at once, with the ids it did not take (for the queue).
   */
  take(inboxIds: readonly string[]): string[] {
    const left: string[] = [];
    for (const inboxId of inboxIds) {
      if (!this.attemptsHere || this.running.size >= this.options.tuning.workerConcurrency) {
        left.push(inboxId);
        continue;
      }
      this.attempting.add(inboxId);
      const run = detached(() => this.attempt(inboxId)).finally(() => {
        this.running.delete(run);
        this.attempting.delete(inboxId);
      });
      this.running.add(run);
    }
    return left;
  }

  /** Whether this process is attempting the delivery now: its row is `received`, and no job is needed. */
  isAttempting(inboxId: string): boolean {
    return this.attempting.has(inboxId);
  }

  private async attempt(inboxId: string): Promise<void> {
    const finalAttempt = this.options.tuning.inboxAttempts <= 1;
    const release = await this.pressure.slot();
    try {
      // Shutting down: the row stays `received`, for the sweeper of whoever runs next.
      if (this.stopped) return;
      await attemptDelivery(this.processing, this.options, { inboxId, attempt: 1, finalAttempt });
    } catch (err) {
      // The attempt failed, and is recorded on the row (a final one made it `failed`).
      if (finalAttempt) return;
      // The delay a job's first retry would have had: the queue's own backoff for this job.
      const job = jobOf(JobName.ProcessDelivery, { inboxId }, this.options.tuning);
      const delayMs = retryAfterBackoff(1, RETRY_AFTER_BACKOFF, err as Error, job);
      await withTimeout(this.jobs.add(JobName.ProcessDelivery, { inboxId, attemptsBefore: 1 }, { delayMs }), this.options.tuning.enqueueTimeoutMs, 'enqueue').catch(
        (e: Error) => this.logger.warn(`delivery ${inboxId} left for the sweeper after its first attempt: ${e.message}`),
      );
    } finally {
      release();
    }
  }

  /** Lets the attempts under way finish (at most a job's lock), before the connections close. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.running.size === 0) return;
    await withTimeout(Promise.allSettled([...this.running]), this.options.tuning.jobLockMs, 'inbox attempts').catch(() => undefined);
  }
}
