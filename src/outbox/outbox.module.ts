import { Module } from '@nestjs/common';

/** The transactional outbox: message table, writer, relay (later issue). */
@Module({})
export class OutboxModule {}
