import { InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { JobName, JobSchedule, QueueName } from '../jobs/queues';
import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { startWorker } from '../jobs/start-worker';
import type { ResolvedOptions } from '../config/options';
import { PW_CONNECTION } from '../database/data-source';
import { PW_BULL, PW_OPTIONS } from '../config/tokens';
import { OutboxStore } from '../outbox/outbox.store';
import { IdempotencyKeyStore } from '../payments/idempotency-key.store';
import { InboxStore } from '../webhooks/inbox.store';

const BATCH = 500;

/**
 * Retention (docs/operations.md#retention): deliveries in a final status and dispatched outbox
 * messages older than INBOX_RETENTION_DAYS are deleted in small committed batches, so no long lock
 * is ever held; `received` and `failed` deliveries, and pending or dead messages, are never purged.
 */
@Injectable()
export class RetentionService {
  private readonly logger = new Logger('Retention');

  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    private readonly outboxStore: OutboxStore,
    private readonly idempotencyKeys: IdempotencyKeyStore,
    private readonly inbox: InboxStore,
  ) {}

  async purge(): Promise<{ deleted: number }> {
    const days = this.options.inboxRetentionDays;
    const deliveries = await this.inbox.purgeSettled(this.dataSource, { olderThanDays: days, batchSize: BATCH });
    const messages = await this.outboxStore.purgeDispatched(days, BATCH);
    // Idempotency keys promise 24 hours; older ones are only weight.
    await this.idempotencyKeys.purgeExpired(BATCH);
    if (deliveries + messages > 0) {
      this.logger.log(`purged ${deliveries} deliveries and ${messages} outbox messages older than ${days} days`);
    }
    return { deleted: deliveries + messages };
  }
}

/** Runs the purge daily, once across all processes (a BullMQ job scheduler). */
@Processor({ name: QueueName.Maintenance, configKey: PW_BULL }, { autorun: false })
export class MaintenanceProcessor extends WorkerHost implements OnApplicationBootstrap {
  private readonly logger = new Logger('Maintenance');

  constructor(
    private readonly retention: RetentionService,
    @InjectQueue(QueueName.Maintenance) private readonly queue: Queue,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    if (!this.options.runWorkers) return;
    // Idempotent: every worker process upserts the same scheduler. Not awaited: a Redis that is
    // away at start must not hold the start.
    void this.queue
      .upsertJobScheduler(JobSchedule.RetentionDaily, { pattern: '17 3 * * *' }, { name: JobName.Retention, data: {} })
      .catch((err: Error) => this.logger.warn(`could not schedule the daily retention: ${err.message}`));
    startWorker(this.worker, this.options, this.logger, 'maintenance');
  }

  async process(): Promise<{ deleted: number }> {
    return this.retention.purge();
  }
}
