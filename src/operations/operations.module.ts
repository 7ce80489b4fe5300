import { Module } from '@nestjs/common';
import { OutboxModule } from '../outbox/outbox.module';
import { PaymentsModule } from '../payments/payments.module';
import { InboxIngestService } from '../webhooks/inbox-ingest.service';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { BackfillController } from './backfill/backfill.controller';
import { BackfillProcessor } from './backfill/backfill.processor';
import { BackfillService } from './backfill/backfill.service';
import { DeliveryArchiveService } from './delivery-archive.service';
import { OperationsController } from './operations.controller';
import { OutboxAdminService } from './outbox-admin.service';
import { MaintenanceProcessor } from './maintenance.processor';
import { RetentionService } from './retention.service';
import { PollingController } from './polling/polling.controller';
import { PollingProcessor } from './polling/polling.processor';
import { PollingService } from './polling/polling.service';

/** The operator surface: archive and replay, outbox, reconciliation, retention, backfill, polling. */
@Module({
  imports: [
    OutboxModule,
    PaymentsModule,
    WebhooksModule,
  ],
  controllers: [OperationsController, BackfillController, PollingController],
  providers: [
    DeliveryArchiveService,
    OutboxAdminService,
    RetentionService,
    MaintenanceProcessor,
    BackfillService,
    BackfillProcessor,
    PollingService,
    PollingProcessor,
    // The receive path's insert, on a pool of its own: a backfill's pages never take the
    // connections that answer providers.
    InboxIngestService,
  ],
  exports: [RetentionService],
})
export class OperationsModule {}
