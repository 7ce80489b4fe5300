import { Processor, WorkerHost } from '@nestjs/bullmq';
import { QueueName } from '../jobs/queues';
import { Inject, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DelayedError, Job } from 'bullmq';
import { startWorker } from '../jobs/start-worker';
import type { ResolvedOptions } from '../config/options';
import { PW_BULL, PW_OPTIONS, PW_RECEIVE_PRESSURE } from '../config/tokens';
import type { ReceivePressure } from '../jobs/receive-pressure';
import { OutboxDispatcher } from './outbox-dispatcher.service';
import { OutboxJobData } from './outbox.queue';

/**
 * Consumes the outbox queue for every message type. A message that must wait (its backoff, an
 * earlier message of its order, another worker's lease) is the same job moved to the delayed set:
 * the database decides when, the queue only carries the work.
 */
@Processor({ name: QueueName.Outbox, configKey: PW_BULL }, { autorun: false })
export class OutboxProcessor extends WorkerHost implements OnApplicationBootstrap {
  private readonly logger = new Logger('OutboxProcessor');

  constructor(
    private readonly dispatcher: OutboxDispatcher,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    @Inject(PW_RECEIVE_PRESSURE) private readonly pressure: ReceivePressure,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    startWorker(this.worker, this.options, this.logger, 'outbox');
  }

  async process(job: Job<OutboxJobData>, token?: string): Promise<unknown> {
    const release = await this.pressure.slot();
    let step;
    try {
      step = await this.dispatcher.dispatch(job.data.messageId);
    } finally {
      release();
    }
    if (step.done) return step.outcome;
    await job.moveToDelayed(step.retryAt.getTime(), token);
    throw new DelayedError();
  }
}
