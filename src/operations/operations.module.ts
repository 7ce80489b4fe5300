import { BullModule } from '@nestjs/bullmq';
import { QueueName } from '../jobs/queues';
import { Module } from '@nestjs/common';
import { OutboxModule } from '../outbox/outbox.module';
import { PaymentsModule } from '../payments/payments.module';
import { PW_BULL } from '../config/tokens';
import { InboxIngestService } from '../webhooks/inbox-ingest.service';
import { InboxQueueModule } from '../webhooks/inbox-queue.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { BackfillController } from './backfill/backfill.controller';
import { BackfillProcessor } from './backfill/backfill.processor';
import { BackfillService } from './backfill/backfill.service';
import { DeliveryArchiveService } from './delivery-archive.service';
import { OperationsController } from './operations.controller';
import { OutboxAdminService } from './outbox-admin.service';
import { MaintenanceProcessor, RetentionService } from './retention.service';

/** The operator surface: archive and replay, outbox, reconciliation, retention, backfill. */
@Module({
  imports: [
    InboxQueueModule,
    OutboxModule,
    PaymentsModule,
    WebhooksModule,
    BullModule.registerQueue({ name: QueueName.Maintenance, configKey: PW_BULL }),
    BullModule.registerQueue({ name: QueueName.Backfill, configKey: PW_BULL }),
  ],
  controllers: [OperationsController, BackfillController],
  providers: [
    DeliveryArchiveService,
    OutboxAdminService,
    RetentionService,
    MaintenanceProcessor,
    BackfillService,
    BackfillProcessor,
    // The receive path's insert, on a pool of its own: a backfill's pages never take the
    // connections that answer providers.
    InboxIngestService,
  ],
  exports: [RetentionService],
})
export class OperationsModule {}
