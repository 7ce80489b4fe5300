import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DelayedError, Job } from 'bullmq';
import type { ResolvedOptions } from '../config/options';
import { startWorker } from '../common/start-worker';
import { OutboxJobData, OutboxQueue } from '../outbox/outbox.queue';
import { PW_BULL, PW_OPTIONS } from '../payment-webhooks.constants';
import { FulfillmentDispatchService } from './fulfillment-dispatch.service';

/**
 * Consumes the outbox queue: calls carriers. A retry is the same job moved to the delayed set
 * until the message's next attempt (the backoff lives in the database, with the attempt count).
 */
@Processor({ name: OutboxQueue.Name, configKey: PW_BULL }, { autorun: false })
export class FulfillmentDispatchProcessor extends WorkerHost implements OnApplicationBootstrap {
  private readonly logger = new Logger('FulfillmentDispatchProcessor');

  constructor(
    private readonly dispatcher: FulfillmentDispatchService,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    startWorker(this.worker, this.options, this.logger, 'outbox');
  }

  async process(job: Job<OutboxJobData>, token?: string): Promise<unknown> {
    const step = await this.dispatcher.dispatch(job.data.messageId);
    if (step.done) return step.outcome;
    await job.moveToDelayed(step.retryAt.getTime(), token);
    throw new DelayedError();
  }
}
