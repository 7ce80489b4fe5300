import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PW_CONNECTION } from '../database/data-source';
import { OutboxModule } from '../outbox/outbox.module';
import { CarrierRegistry } from './carriers/carrier-registry';
import { FulfillmentDispatchHandler } from './fulfillment-dispatch.handler';
import { Fulfillment } from './fulfillment.entity';
import { FulfillmentService } from './fulfillment.service';

/**
 * The Fulfillment aggregate, carrier adapters and the `fulfillment.dispatch` handler. It hears of
 * orders through events and registers its handler with the outbox: it imports no other context.
 */
@Module({
  imports: [TypeOrmModule.forFeature([Fulfillment], PW_CONNECTION), OutboxModule],
  providers: [FulfillmentService, FulfillmentDispatchHandler, CarrierRegistry],
})
export class FulfillmentModule {}
