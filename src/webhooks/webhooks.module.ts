import { Module, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PW_CONNECTION } from '../database/data-source';
import { MetricsService } from '../observability/metrics.service';
import { OutboxModule } from '../outbox/outbox.module';
import { PaymentsModule } from '../payments/payments.module';
import { DeliveryReactions } from './delivery-reactions';
import { DeliveryProcessingService } from './delivery-processing.service';
import { DeliveryObserver } from './delivery-observer';
import { EndpointRegistry } from './endpoint-registry';
import { EndpointHealthService } from './endpoint-health.service';
import { EndpointHealthStore } from './endpoint-health.store';
import { EndpointTallies } from './endpoint-tallies';
import { InboxHandoff } from './inbox-handoff.service';
import { InboxIngestService } from './inbox-ingest.service';
import { KnownPayments } from './known-payments.service';
import { InboxSweeper } from './inbox-sweeper.service';
import { InboxProcessor } from './inbox.processor';
import { InboxQueueService } from './inbox-queue.service';
import { INBOX_GAUGES, InboxStore } from './inbox.store';
import { WebhookSignatureGuard } from './webhook-signature.guard';
import { WebhooksController } from './webhooks.controller';

/** Endpoint config, provider adapters, the signature guard, the inbox, ingest and processing. */
@Module({
  imports: [PaymentsModule, OutboxModule],
  controllers: [WebhooksController],
  providers: [
    EndpointRegistry,
    EndpointTallies,
    EndpointHealthStore,
    EndpointHealthService,
    DeliveryObserver,
    WebhookSignatureGuard,
    InboxStore,
    InboxQueueService,
    InboxIngestService,
    KnownPayments,
    InboxHandoff,
    DeliveryProcessingService,
    InboxProcessor,
    InboxSweeper,
    DeliveryReactions,
  ],
  exports: [EndpointRegistry, EndpointHealthService, DeliveryProcessingService, InboxSweeper, InboxQueueService, InboxStore, InboxHandoff],
})
export class WebhooksModule implements OnModuleInit {
  constructor(
    private readonly inbox: InboxStore,
    private readonly metrics: MetricsService,
    private readonly health: EndpointHealthService,
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
  ) {}

  /** The inbox gauges are read from the inbox at scrape time; observability cannot import webhooks, so they are registered from here. */
  onModuleInit(): void {
    this.metrics.readFromDatabase(INBOX_GAUGES, () => this.inbox.gauges(this.dataSource));
    this.metrics.readLabelledFromDatabase('pw_endpoint_silent', 'Whether each configured endpoint is silent (1) or not (0): docs/operations.md#endpoint-health', 'endpoint', () =>
      this.health.silentGauge(),
    );
  }
}
