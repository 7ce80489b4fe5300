import { Module } from '@nestjs/common';
import { OutboxModule } from '../outbox/outbox.module';
import { IdempotencyKeyStore } from './idempotency-key.store';
import { OrdersController } from './orders.controller';
import { OrdersService } from './orders.service';
import { ProviderEventsService } from './provider-events.service';
import { PaymentPollStore, PaymentStore } from './payment-store';
import { OrderChangesService } from './order-changes.service';
import { PaymentCapturesStore } from './payment-captures.store';
import { OrderHistoryStore } from './order-history.store';
import { PaymentsController } from './payments.controller';
import { CommandEndpoints } from './command-endpoints';
import { PaymentCommandHandler } from './payment-commands.handler';
import { PaymentCommandsService } from './payment-commands.service';
import { RefundStore } from './refund.store';
import { RefundsController } from './refunds.controller';
import { RefundsService } from './refunds.service';

/**
 * Order and Payment aggregates, money, the lifecycles, the orders/payments API, the events they
 * make (docs/events.md), and the stores of their tables. It talks only to the outbox: whoever must
 * react to a payment hears it as an event in the same transaction.
 */
@Module({
  imports: [OutboxModule],
  controllers: [OrdersController, PaymentsController, RefundsController],
  providers: [
    OrdersService,
    ProviderEventsService,
    PaymentStore,
    PaymentPollStore,
    OrderChangesService,
    OrderHistoryStore,
    PaymentCapturesStore,
    IdempotencyKeyStore,
    RefundStore,
    RefundsService,
    CommandEndpoints,
    PaymentCommandsService,
    PaymentCommandHandler,
  ],
  exports: [ProviderEventsService, OrdersService, PaymentStore, PaymentPollStore, PaymentCapturesStore, IdempotencyKeyStore],
})
export class PaymentsModule {}
