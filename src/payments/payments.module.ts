import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PW_CONNECTION } from '../database/data-source';
import { OutboxModule } from '../outbox/outbox.module';
import { Order } from './order.entity';
import { Payment } from './payment.entity';
import { OrdersController } from './orders.controller';
import { OrdersService } from './orders.service';
import { PaymentEventsService } from './payment-events.service';
import { PaymentStore } from './payment-store';
import { PaymentsController } from './payments.controller';

/**
 * Order and Payment aggregates, money, the lifecycles, the orders/payments API, and the events of
 * CONTRACT §7 they make. It talks only to the outbox: whoever must react to a payment hears it as
 * an event in the same transaction.
 */
@Module({
  imports: [TypeOrmModule.forFeature([Order, Payment], PW_CONNECTION), OutboxModule],
  controllers: [OrdersController, PaymentsController],
  providers: [OrdersService, PaymentEventsService, PaymentStore],
  exports: [PaymentEventsService, OrdersService],
})
export class PaymentsModule {}
