import { Inject, Logger, OnApplicationShutdown } from '@nestjs/common';
import type { Job } from 'bullmq';
import type { ResolvedOptions } from '../../config/options';
import { PW_OPTIONS } from '../../config/tokens';
import type { JobData } from '../../jobs/job-registry';
import { ModuleProcessor, ModuleWorker } from '../../jobs/module-worker';
import { JobName, QueueName } from '../../jobs/queues';
import { BackfillService } from './backfill.service';
import { inActionSpan } from '../../observability/tracing';

/**
 * Runs backfills where `runWorkers` is on. A worker that dies mid-walk leaves its job to BullMQ's
 * stalled-job recovery (the job id is the backfill's); a backfill still `running` whose job is gone
 * (Redis lost it, or the enqueue failed) is enqueued again at start and on every sweep interval.
 */
@ModuleProcessor(QueueName.Backfill)
export class BackfillProcessor extends ModuleWorker implements OnApplicationShutdown {
  protected readonly logger = new Logger('Backfill');
  private timer: NodeJS.Timeout | undefined;
  protected readonly handlers = {
    [JobName.RunBackfill]: async (job: Job<JobData[JobName.RunBackfill]>) => {
      try {
        await inActionSpan('backfill', () => this.backfills.run(job.data.backfillId));
      } catch (err) {
        // Thrown so BullMQ retries (the walk resumes from its saved cursor); after the last attempt the backfill is failed.
        if (job.attemptsMade + 1 >= (job.opts.attempts ?? 1)) {
          await this.backfills.fail(job.data.backfillId, `gave up after ${job.opts.attempts} attempts: ${(err as Error).message}`);
        }
        throw err;
      }
    },
  };

  constructor(
    private readonly backfills: BackfillService,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
  ) {
    super(options, null);
  }

  protected override started(): void {
    const sweep = () => void this.backfills.sweep().catch((err: Error) => this.logger.warn(`backfill sweep: ${err.message}`));
    sweep();
    this.timer = setInterval(sweep, this.options.tuning.sweepIntervalMs);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }
}
