import { Module } from '@nestjs/common';
import { OutboxWriter } from './outbox-writer';

/** The transactional outbox: message table, writer (relay: later issue). */
@Module({ providers: [OutboxWriter], exports: [OutboxWriter] })
export class OutboxModule {}
