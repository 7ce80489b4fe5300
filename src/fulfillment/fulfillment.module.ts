import { Module } from '@nestjs/common';

/** The Fulfillment aggregate, carrier adapters and the dispatch processor (later issue). */
@Module({})
export class FulfillmentModule {}
