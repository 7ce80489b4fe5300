import { DynamicModule, Module } from '@nestjs/common';
import type { Logger as PinoLogger } from 'pino';
import type { StandaloneConfig } from './config/env';
import { PaymentWebhooksModule } from './payment-webhooks.module';

/** The standalone service: configuration from the environment (already validated), then the module. */
@Module({})
export class AppModule {
  static register(config: StandaloneConfig, logger?: PinoLogger): DynamicModule {
    return {
      module: AppModule,
      imports: [PaymentWebhooksModule.forRoot({ ...config.options, logger })],
    };
  }
}
