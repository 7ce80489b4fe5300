import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { OutboxModule } from '../outbox/outbox.module';
import { EventSinks } from './event-sinks';
import { EventSubscribers } from './event-subscribers';

/**
 * How the host hears what changed: its `@OnPaymentEvent` methods, found at start,
 * and the HTTP sinks of EVENT_SINKS. It registers with the outbox; it imports no other context.
 */
@Module({
  imports: [DiscoveryModule, OutboxModule],
  providers: [EventSubscribers, EventSinks],
})
export class EventsModule {}
