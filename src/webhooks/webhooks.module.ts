import { Module } from '@nestjs/common';
import { OutboxModule } from '../outbox/outbox.module';
import { PaymentsModule } from '../payments/payments.module';
import { DeliveryReactions } from './delivery-reactions';
import { DeliveryProcessingService } from './delivery-processing.service';
import { DeliveryObserver } from './delivery-observer';
import { EndpointRegistry } from './endpoint-registry';
import { InboxIngestService } from './inbox-ingest.service';
import { InboxSweeper } from './inbox-sweeper.service';
import { InboxProcessor } from './inbox.processor';
import { InboxQueueModule } from './inbox-queue.module';
import { WebhookSignatureGuard } from './webhook-signature.guard';
import { WebhooksController } from './webhooks.controller';

/** Endpoint config, provider adapters, the signature guard, the inbox, ingest and processing. */
@Module({
  imports: [InboxQueueModule, PaymentsModule, OutboxModule],
  controllers: [WebhooksController],
  providers: [
    EndpointRegistry,
    DeliveryObserver,
    WebhookSignatureGuard,
    InboxIngestService,
    DeliveryProcessingService,
    InboxProcessor,
    InboxSweeper,
    DeliveryReactions,
  ],
  exports: [EndpointRegistry, DeliveryProcessingService, InboxSweeper, InboxQueueModule],
})
export class WebhooksModule {}
