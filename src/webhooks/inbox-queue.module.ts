import { BullModule } from '@nestjs/bullmq';
import { QueueName } from '../jobs/queues';
import { Module } from '@nestjs/common';
import { PW_BULL } from '../config/tokens';
import { InboxQueueService } from './inbox-queue.service';


/** The inbox queue on its own, for the webhooks context and the operator's replays. */
@Module({
  imports: [BullModule.registerQueue({ name: QueueName.Inbox, configKey: PW_BULL })],
  providers: [InboxQueueService],
  exports: [InboxQueueService, BullModule],
})
export class InboxQueueModule {}
