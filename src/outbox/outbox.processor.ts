import { Inject, Logger } from '@nestjs/common';
import { DelayedError, Job } from 'bullmq';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS, PW_RECEIVE_PRESSURE } from '../config/tokens';
import type { JobData } from '../jobs/job-registry';
import { ModuleProcessor, ModuleWorker } from '../jobs/module-worker';
import { JobName, QueueName } from '../jobs/queues';
import type { ReceivePressure } from '../jobs/receive-pressure';
import { OutboxDispatcher } from './outbox-dispatcher.service';

/**
 * Consumes the outbox queue for every message type. A message that must wait (its backoff, an
 * earlier message of its order, another worker's lease) is the same job moved to the delayed set:
 * the database decides when, the queue only carries the work.
 */
@ModuleProcessor(QueueName.Outbox)
export class OutboxProcessor extends ModuleWorker {
  protected readonly logger = new Logger('OutboxProcessor');
  protected readonly handlers = {
    [JobName.DispatchOutboxMessage]: async (job: Job<JobData[JobName.DispatchOutboxMessage]>, token?: string) => {
      const step = await this.dispatcher.dispatch(job.data.messageId, job.data.trace);
      if (step.done) return step.outcome;
      await job.moveToDelayed(step.retryAt.getTime(), token);
      throw new DelayedError();
    },
  };

  constructor(
    private readonly dispatcher: OutboxDispatcher,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
    @Inject(PW_RECEIVE_PRESSURE) pressure: ReceivePressure,
  ) {
    super(options, pressure);
  }
}
