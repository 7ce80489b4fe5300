import { BullModule } from '@nestjs/bullmq';
import { QueueName } from '../common/queues';
import { Module } from '@nestjs/common';
import { OutboxModule } from '../outbox/outbox.module';
import { PW_BULL } from '../payment-webhooks.constants';
import { InboxQueueModule } from '../webhooks/inbox-queue.module';
import { DeliveryArchiveService } from './delivery-archive.service';
import { OperationsController } from './operations.controller';
import { OutboxAdminService } from './outbox-admin.service';
import { MaintenanceProcessor, RetentionService } from './retention.service';

/** The operator surface: archive and replay, outbox, reconciliation, retention. */
@Module({
  imports: [InboxQueueModule, OutboxModule, BullModule.registerQueue({ name: QueueName.Maintenance, configKey: PW_BULL })],
  controllers: [OperationsController],
  providers: [DeliveryArchiveService, OutboxAdminService, RetentionService, MaintenanceProcessor],
  exports: [RetentionService],
})
export class OperationsModule {}
