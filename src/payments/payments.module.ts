import { Module } from '@nestjs/common';
import { FulfillmentModule } from '../fulfillment/fulfillment.module';
import { InboxQueueModule } from '../webhooks/inbox-queue.module';
import { OrdersController } from './orders.controller';
import { OrdersService } from './orders.service';
import { PaymentEventsService } from './payment-events.service';
import { PaymentsController } from './payments.controller';

/** Order and Payment aggregates, money, the lifecycle, and the orders/payments API. */
@Module({
  imports: [FulfillmentModule, InboxQueueModule],
  controllers: [OrdersController, PaymentsController],
  providers: [OrdersService, PaymentEventsService],
  exports: [PaymentEventsService, OrdersService],
})
export class PaymentsModule {}
