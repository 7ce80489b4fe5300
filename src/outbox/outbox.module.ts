import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { PW_BULL } from '../payment-webhooks.constants';
import { OutboxRelay } from './outbox-relay.service';
import { OutboxWriter } from './outbox-writer';
import { OutboxQueue } from './outbox.queue';

/** The transactional outbox: the writer used inside transactions, and the relay (notify + sweep). */
@Module({
  imports: [BullModule.registerQueue({ name: OutboxQueue.Name, configKey: PW_BULL })],
  providers: [OutboxWriter, OutboxRelay],
  exports: [OutboxWriter, OutboxRelay, BullModule],
})
export class OutboxModule {}
