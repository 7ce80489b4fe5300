import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { ResolvedOptions } from '../config/options';
import { PW_CONNECTION } from '../database/data-source';
import { PW_OPTIONS } from '../config/tokens';
import { OutboxStore } from '../outbox/outbox.store';
import { IdempotencyKeyStore } from '../payments/idempotency-key.store';
import { PaymentPollStore } from '../payments/payment-store';
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
    private readonly polls: PaymentPollStore,
  ) {}

  async purge(): Promise<{ deleted: number }> {
    const days = this.options.inboxRetentionDays;
    const deliveries = await this.inbox.purgeSettled(this.dataSource, { olderThanDays: days, batchSize: BATCH });
    const messages = await this.outboxStore.purgeDispatched(days, BATCH);
    // Idempotency keys promise 24 hours; older ones are only weight.
    await this.idempotencyKeys.purgeExpired(BATCH);
    // The polling schedules of payments no poll needs any more are only weight too.
    await this.polls.purgeFinished(BATCH);
    if (deliveries + messages > 0) {
      this.logger.log(`purged ${deliveries} deliveries and ${messages} outbox messages older than ${days} days`);
    }
    return { deleted: deliveries + messages };
  }
}
