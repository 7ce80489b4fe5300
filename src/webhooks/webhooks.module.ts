import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { PW_BULL } from '../payment-webhooks.constants';
import { DeliveryProcessingService } from './delivery-processing.service';
import { EndpointRegistry } from './endpoint-registry';
import { InboxIngestService } from './inbox-ingest.service';
import { InboxSweeper } from './inbox-sweeper.service';
import { InboxProcessor } from './inbox.processor';
import { InboxQueue } from './inbox.queue';
import { WebhookSignatureGuard } from './webhook-signature.guard';
import { WebhooksController } from './webhooks.controller';

/** Endpoint config, provider adapters, the signature guard, the inbox, ingest and processing. */
@Module({
  imports: [BullModule.registerQueue({ name: InboxQueue.Name, configKey: PW_BULL })],
  controllers: [WebhooksController],
  providers: [
    EndpointRegistry,
    WebhookSignatureGuard,
    InboxIngestService,
    DeliveryProcessingService,
    InboxProcessor,
    InboxSweeper,
  ],
  exports: [EndpointRegistry, DeliveryProcessingService, InboxSweeper],
})
export class WebhooksModule {}
