import { DynamicModule, Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import type { Logger as PinoLogger } from 'pino';
import type { StandaloneConfig } from './config/env';
import { PaymentWebhooksModule } from './payment-webhooks.module';

export const STANDALONE_CONFIG = 'paymentWebhooks';

/** The standalone service: configuration from the environment, then the module. */
@Module({})
export class AppModule {
  static async register(config: StandaloneConfig, logger?: PinoLogger): Promise<DynamicModule> {
    return {
      module: AppModule,
      imports: [
        await ConfigModule.forRoot({
          isGlobal: true,
          ignoreEnvFile: true,
          load: [() => ({ [STANDALONE_CONFIG]: config })],
        }),
        PaymentWebhooksModule.forRootAsync({
          inject: [ConfigService],
          useFactory: (configService: ConfigService) => ({
            ...configService.getOrThrow<StandaloneConfig>(STANDALONE_CONFIG).options,
            logger,
          }),
        }),
      ],
    };
  }
}
