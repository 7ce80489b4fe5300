export * from './config/options';
export { ConfigurationError } from './config/validate';
export { loadStandaloneConfig } from './config/env';
export { configurePaymentWebhooksApp } from './configure-app';
export { PaymentWebhooksModule, PaymentWebhooksAsyncOptions } from './payment-webhooks.module';
export { PW_CONNECTION } from './database/data-source';
export { CLOCK, Clock } from './payment-webhooks.constants';
export { InboxSweeper } from './webhooks/inbox-sweeper.service';
export { DeliveryProcessingService } from './webhooks/delivery-processing.service';
