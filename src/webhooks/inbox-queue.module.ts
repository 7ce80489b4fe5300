import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { PW_BULL } from '../payment-webhooks.constants';
import { InboxQueueService } from './inbox-queue.service';
import { InboxQueue } from './inbox.queue';

/** The inbox queue on its own, so Payments can release parked deliveries without a module cycle. */
@Module({
  imports: [BullModule.registerQueue({ name: InboxQueue.Name, configKey: PW_BULL })],
  providers: [InboxQueueService],
  exports: [InboxQueueService, BullModule],
})
export class InboxQueueModule {}
