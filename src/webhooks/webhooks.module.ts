import { Module } from '@nestjs/common';
import { PaymentsModule } from '../payments/payments.module';
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
  imports: [InboxQueueModule, PaymentsModule],
  controllers: [WebhooksController],
  providers: [
    EndpointRegistry,
    DeliveryObserver,
    WebhookSignatureGuard,
    InboxIngestService,
    DeliveryProcessingService,
    InboxProcessor,
    InboxSweeper,
  ],
  exports: [EndpointRegistry, DeliveryProcessingService, InboxSweeper, InboxQueueModule],
})
export class WebhooksModule {}
