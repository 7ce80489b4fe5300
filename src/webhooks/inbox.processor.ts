import { Inject, Logger } from '@nestjs/common';
import type { Job } from 'bullmq';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS, PW_RECEIVE_PRESSURE } from '../config/tokens';
import type { JobData } from '../jobs/job-registry';
import { ModuleProcessor, ModuleWorker } from '../jobs/module-worker';
import { JobName, QueueName } from '../jobs/queues';
import type { ReceivePressure } from '../jobs/receive-pressure';
import { DeliveryProcessingService } from './delivery-processing.service';

/** Consumes the inbox queue: each job is one delivery's processing attempt, in the queue's retry budget. */
@ModuleProcessor(QueueName.Inbox)
export class InboxProcessor extends ModuleWorker {
  protected readonly logger = new Logger('InboxProcessor');
  protected readonly handlers = {
    [JobName.ProcessDelivery]: (job: Job<JobData[JobName.ProcessDelivery]>) => {
      const attempt = job.attemptsMade + 1;
      const finalAttempt = attempt >= (job.opts.attempts ?? 1);
      const parkUnmatched = finalAttempt || attempt >= this.options.tuning.unmatchedAfterAttempts;
      return this.processing.submit({ inboxId: job.data.inboxId, finalAttempt, parkUnmatched });
    },
  };

  constructor(
    private readonly processing: DeliveryProcessingService,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
    @Inject(PW_RECEIVE_PRESSURE) pressure: ReceivePressure,
  ) {
    super(options, pressure);
  }
}
