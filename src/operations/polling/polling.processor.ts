import { Inject, Logger } from '@nestjs/common';
import type { Job } from 'bullmq';
import type { ResolvedOptions } from '../../config/options';
import { PW_OPTIONS } from '../../config/tokens';
import { JobProducer } from '../../jobs/job-producer';
import type { JobData } from '../../jobs/job-registry';
import { ModuleProcessor, ModuleWorker } from '../../jobs/module-worker';
import { JobName, JobSchedule, QueueName } from '../../jobs/queues';
import { PollingService } from './polling.service';

/**
 * Polling's jobs (docs/operations.md#when-webhooks-stop): the sweep, every `pollSweepMs` once across
 * every process (a BullMQ job scheduler), starts each polling endpoint's run; a run asks the
 * provider about that endpoint's due payments. A run holds no slot of the receive pressure: it
 * waits on the provider, not on the CPU, and paces itself.
 */
@ModuleProcessor(QueueName.Polling)
export class PollingProcessor extends ModuleWorker {
  protected readonly logger = new Logger('Polling');
  protected readonly handlers = {
    [JobName.PollSweep]: () => this.polling.sweep(),
    [JobName.PollEndpoint]: (job: Job<JobData[JobName.PollEndpoint]>) => this.polling.run(job.data.endpointId),
  };

  constructor(
    private readonly polling: PollingService,
    private readonly jobs: JobProducer,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
  ) {
    super(options, null);
  }

  protected override started(): void {
    // Only where an endpoint polls; idempotent (every worker process upserts the same scheduler), and
    // not awaited: a Redis that is away at start must not hold the start.
    if (this.polling.scheduledEndpoints().length === 0) return;
    void this.jobs
      .schedule(JobSchedule.PollSweep, { every: this.options.tuning.pollSweepMs }, JobName.PollSweep, {})
      .catch((err: Error) => this.logger.warn(`could not schedule polling: ${err.message}`));
  }
}
