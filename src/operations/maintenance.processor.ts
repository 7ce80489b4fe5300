import { Inject, Logger } from '@nestjs/common';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS } from '../config/tokens';
import { JobProducer } from '../jobs/job-producer';
import { ModuleProcessor, ModuleWorker } from '../jobs/module-worker';
import { JobName, JobSchedule, QueueName } from '../jobs/queues';
import { EndpointHealthService } from '../webhooks/endpoint-health.service';
import { RetentionService } from './retention.service';

/**
 * Runs the purge daily and the endpoints' silence check every `silenceCheckIntervalMs`, each once
 * across all processes (a BullMQ job scheduler).
 */
@ModuleProcessor(QueueName.Maintenance)
export class MaintenanceProcessor extends ModuleWorker {
  protected readonly logger = new Logger('Maintenance');
  protected readonly handlers = {
    [JobName.PurgeExpired]: () => this.retention.purge(),
    [JobName.CheckEndpointSilence]: () => this.health.checkSilence(),
  };

  constructor(
    private readonly retention: RetentionService,
    private readonly health: EndpointHealthService,
    private readonly jobs: JobProducer,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
  ) {
    super(options, null);
  }

  protected override started(): void {
    // Idempotent: every worker process upserts the same scheduler. Not awaited: a Redis that is
    // away at start must not hold the start.
    void this.jobs
      .schedule(JobSchedule.RetentionDaily, '17 3 * * *', JobName.PurgeExpired, {})
      .catch((err: Error) => this.logger.warn(`could not schedule the daily retention: ${err.message}`));
    // docs/operations.md#endpoint-health
    void this.jobs
      .schedule(JobSchedule.EndpointSilence, { every: this.options.tuning.silenceCheckIntervalMs }, JobName.CheckEndpointSilence, {})
      .catch((err: Error) => this.logger.warn(`could not schedule the endpoints' silence check: ${err.message}`));
  }
}
