import { Module } from '@nestjs/common';
import { OutboxModule } from '../outbox/outbox.module';
import { CarrierRegistry } from './carriers/carrier-registry';
import { FulfillmentDispatchHandler } from './fulfillment-dispatch.handler';
import { FulfillmentService } from './fulfillment.service';
import { FulfillmentStore } from './fulfillment.store';

/**
 * The Fulfillment aggregate, its store, carrier adapters and the `fulfillment.dispatch` handler.
 * It hears of orders through events and registers its handler with the outbox: it imports no
 * other context.
 */
@Module({
  imports: [OutboxModule],
  providers: [FulfillmentService, FulfillmentStore, FulfillmentDispatchHandler, CarrierRegistry],
  exports: [FulfillmentStore],
})
export class FulfillmentModule {}
