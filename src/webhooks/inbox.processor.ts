import { Processor, WorkerHost } from '@nestjs/bullmq';
import { QueueName } from '../jobs/queues';
import { Inject, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { Job } from 'bullmq';
import type { ResolvedOptions } from '../config/options';
import { startWorker } from '../jobs/start-worker';
import { PW_BULL, PW_OPTIONS, PW_RECEIVE_PRESSURE } from '../config/tokens';
import type { ReceivePressure } from '../jobs/receive-pressure';
import { DeliveryProcessingService } from './delivery-processing.service';
import { ProcessDeliveryData } from './inbox.queue';

/** Consumes the inbox queue. Started only where `runWorkers` is on (an HTTP-only process has none). */
@Processor({ name: QueueName.Inbox, configKey: PW_BULL }, { autorun: false })
export class InboxProcessor extends WorkerHost implements OnApplicationBootstrap {
  private readonly logger = new Logger('InboxProcessor');

  constructor(
    private readonly processing: DeliveryProcessingService,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    @Inject(PW_RECEIVE_PRESSURE) private readonly pressure: ReceivePressure,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    startWorker(this.worker, this.options, this.logger, 'inbox');
  }

  async process(job: Job<ProcessDeliveryData>): Promise<unknown> {
    const attempt = job.attemptsMade + 1;
    const finalAttempt = attempt >= (job.opts.attempts ?? 1);
    const parkUnmatched = finalAttempt || attempt >= this.options.tuning.unmatchedAfterAttempts;
    const release = await this.pressure.slot();
    try {
      return await this.processing.submit({ inboxId: job.data.inboxId, finalAttempt, parkUnmatched });
    } finally {
      release();
    }
  }
}
