import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Job } from 'bullmq';
import { QueueName } from '../../jobs/queues';
import { startWorker } from '../../jobs/start-worker';
import type { ResolvedOptions } from '../../config/options';
import { PW_BULL, PW_OPTIONS } from '../../config/tokens';
import { BackfillService } from './backfill.service';
import type { RunBackfillData } from './backfill.store';

/**
 * Runs backfills where `runWorkers` is on. A worker that dies mid-walk leaves its job to BullMQ's
 * stalled-job recovery (the job id is the backfill's); a backfill still `running` whose job is gone
 * (Redis lost it, or the enqueue failed) is enqueued again at start and on every sweep interval.
 */
@Processor({ name: QueueName.Backfill, configKey: PW_BULL }, { autorun: false })
export class BackfillProcessor extends WorkerHost implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Backfill');
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly backfills: BackfillService,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    if (!this.options.runWorkers) return;
    startWorker(this.worker, this.options, this.logger, 'backfill');
    const sweep = () =>
      void this.backfills.sweep().catch((err: Error) => this.logger.warn(`backfill sweep: ${err.message}`));
    sweep();
    this.timer = setInterval(sweep, this.options.tuning.sweepIntervalMs);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  async process(job: Job<RunBackfillData>): Promise<void> {
    try {
      await this.backfills.run(job.data.backfillId);
    } catch (err) {
      // Thrown so BullMQ retries (the walk resumes from its saved cursor); after the last attempt the backfill is failed.
      if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) {
        await this.backfills.fail(job.data.backfillId, `gave up after ${job.opts.attempts} attempts: ${(err as Error).message}`);
      }
      throw err;
    }
  }
}
