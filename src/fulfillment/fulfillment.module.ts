import { Module } from '@nestjs/common';
import { OutboxModule } from '../outbox/outbox.module';
import { FulfillmentService } from './fulfillment.service';

/** The Fulfillment aggregate, carrier adapters and the dispatch processor. */
@Module({ imports: [OutboxModule], providers: [FulfillmentService], exports: [FulfillmentService] })
export class FulfillmentModule {}
