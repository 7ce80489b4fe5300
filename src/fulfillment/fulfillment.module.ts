import { Module } from '@nestjs/common';
import { OutboxModule } from '../outbox/outbox.module';
import { CarrierRegistry } from './carriers/carrier-registry';
import { FulfillmentDispatchProcessor } from './fulfillment-dispatch.processor';
import { FulfillmentDispatchService } from './fulfillment-dispatch.service';
import { FulfillmentService } from './fulfillment.service';

/** The Fulfillment aggregate, carrier adapters and the carrier dispatch processor. */
@Module({
  imports: [OutboxModule],
  providers: [FulfillmentService, FulfillmentDispatchService, FulfillmentDispatchProcessor, CarrierRegistry],
  exports: [FulfillmentService, FulfillmentDispatchService, CarrierRegistry],
})
export class FulfillmentModule {}
