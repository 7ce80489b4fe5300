import { Module } from '@nestjs/common';
import { OutboxDispatcher } from './outbox-dispatcher.service';
import { OutboxHandlers } from './outbox-handler';
import { OutboxRelay } from './outbox-relay.service';
import { OutboxWriter } from './outbox-writer';
import { OutboxProcessor } from './outbox.processor';
import { OutboxService } from './outbox.service';
import { OutboxStore } from './outbox.store';
import { TransactionEvents } from './transaction-events';

/**
 * The transactional outbox, for every message type: its store (the one owner of outbox_message,
 * which also registers the outbox gauges), the writer used inside transactions, the events
 * published in them, the relay (notify + sweep), the one processor that claims, retries, backs off
 * and dead-letters, and the handlers registered by type. It imports no other context.
 */
@Module({
  providers: [OutboxStore, OutboxWriter, OutboxRelay, OutboxHandlers, TransactionEvents, OutboxDispatcher, OutboxProcessor, OutboxService],
  exports: [OutboxStore, OutboxWriter, OutboxRelay, OutboxHandlers, TransactionEvents, OutboxService],
})
export class OutboxModule {}
