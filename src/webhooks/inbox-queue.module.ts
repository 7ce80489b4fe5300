import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { PW_BULL } from '../payment-webhooks.constants';
import { InboxQueueService } from './inbox-queue.service';
import { InboxQueue } from './inbox.queue';

/** The inbox queue on its own, for the webhooks context and the operator's replays. */
@Module({
  imports: [BullModule.registerQueue({ name: InboxQueue.Name, configKey: PW_BULL })],
  providers: [InboxQueueService],
  exports: [InboxQueueService, BullModule],
})
export class InboxQueueModule {}
