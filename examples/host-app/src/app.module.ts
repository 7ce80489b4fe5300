import { Module, OnApplicationShutdown } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PaymentWebhooksModule } from 'nestjs-payment-webhooks';
import { acmeProvider } from './acme/acme.provider.js';
import { HealthController } from './health.controller.js';
import { Licence } from './licences/licence.entity.js';
import { LicencesModule } from './licences/licences.module.js';
import { HostOrder } from './orders/order.entity.js';
import { OrdersModule } from './orders/orders.module.js';
import { shutdownTracing } from './tracing.js';

@Module({
  imports: [
    // The host's configuration: the environment (and a .env file, when there is one).
    ConfigModule.forRoot(),

    // The host's own default connection, for its own tables in `public`.
    TypeOrmModule.forRootAsync({
      imports: [ConfigModule],
      inject: [ConfigService],
      useFactory: (config: ConfigService) => ({
        type: 'postgres' as const,
        url: config.getOrThrow<string>('DATABASE_URL'),
        entities: [HostOrder, Licence],
        synchronize: false,
      }),
    }),
    OrdersModule,

    // The payment module: same database, but its own connection, its own schema
    // (`payment_webhooks`, created and migrated at start) and its routes under /api/payments.
    PaymentWebhooksModule.forRootAsync({
      imports: [ConfigModule],
      inject: [ConfigService],
      useFactory: (config: ConfigService) => ({
        databaseUrl: config.getOrThrow<string>('DATABASE_URL'),
        redisUrl: config.getOrThrow<string>('REDIS_URL'),
        // Keeps this app's BullMQ keys apart from anything else sharing the Redis.
        queuePrefix: config.get<string>('QUEUE_PREFIX', 'host-pw'),
        routePrefix: 'payments',
        // A provider of the host's own (src/acme/), beside the built-in ones: endpoints name it.
        providers: [acmeProvider],
        endpoints: [
          {
            id: 'stripe-main',
            provider: 'stripe',
            secrets: [config.getOrThrow<string>('STRIPE_WEBHOOK_SECRET')],
            merchantAccountId: config.get<string>('STRIPE_ACCOUNT_ID', 'acct_host_app'),
          },
          // Where a Stripe event destination sends thin notifications (set it up only with a key):
          // processing reads each notification's object from Stripe's API with STRIPE_API_KEY.
          ...(config.get<string>('STRIPE_THIN_WEBHOOK_SECRET')
            ? [
                {
                  id: 'stripe-thin',
                  provider: 'stripe',
                  payloadStyle: 'thin',
                  secrets: [config.getOrThrow<string>('STRIPE_THIN_WEBHOOK_SECRET')],
                  merchantAccountId: config.get<string>('STRIPE_ACCOUNT_ID', 'acct_host_app'),
                  apiKey: config.getOrThrow<string>('STRIPE_API_KEY'),
                  apiBaseUrl: config.get<string>('STRIPE_API_BASE_URL', 'https://api.stripe.com'),
                },
              ]
            : []),
          // PayPal, Checkout.com, Square and Paddle, each once its secret is configured.
          ...(config.get<string>('PAYPAL_WEBHOOK_ID')
            ? [
                {
                  id: 'paypal-main',
                  provider: 'paypal',
                  // PayPal signs with a certificate's key, not a shared secret.
                  secrets: [],
                  merchantAccountId: config.get<string>('PAYPAL_MERCHANT_ID', 'MERCHANTHOSTAPP'),
                  webhookId: config.getOrThrow<string>('PAYPAL_WEBHOOK_ID'),
                  // Where PayPal's signing certificates are served, and a CA bundle to trust instead of
                  // the system's (a test sets both to the testing kit's certificate server and CA).
                  certHosts: config.get<string>('PAYPAL_CERT_HOSTS', 'api.paypal.com').split(','),
                  ...(config.get<string>('PAYPAL_CA_FILE') ? { caFile: config.getOrThrow<string>('PAYPAL_CA_FILE') } : {}),
                },
              ]
            : []),
          ...(config.get<string>('CHECKOUT_SIGNATURE_KEY')
            ? [
                {
                  id: 'checkout-main',
                  provider: 'checkout',
                  secrets: [config.getOrThrow<string>('CHECKOUT_SIGNATURE_KEY')],
                  merchantAccountId: config.get<string>('CHECKOUT_ENTITY_ID', 'ent_host_app'),
                },
              ]
            : []),
          // Needs the `square` package (a dependency here): the module verifies with its WebhooksHelper.
          ...(config.get<string>('SQUARE_SIGNATURE_KEY')
            ? [
                {
                  id: 'square-main',
                  provider: 'square',
                  secrets: [config.getOrThrow<string>('SQUARE_SIGNATURE_KEY')],
                  merchantAccountId: config.get<string>('SQUARE_MERCHANT_ID', 'ML_HOST_APP'),
                  // The URL exactly as registered on the Square subscription: Square signs it.
                  notificationUrl: config.getOrThrow<string>('SQUARE_NOTIFICATION_URL'),
                },
              ]
            : []),
          ...(config.get<string>('PADDLE_SECRET_KEY')
            ? [
                {
                  id: 'paddle-main',
                  provider: 'paddle',
                  secrets: [config.getOrThrow<string>('PADDLE_SECRET_KEY')],
                  merchantAccountId: config.get<string>('PADDLE_SELLER_ID', 'seller_host_app'),
                },
              ]
            : []),
          {
            id: 'acme-main',
            provider: 'acme',
            secrets: [config.getOrThrow<string>('ACME_WEBHOOK_SECRET')],
            merchantAccountId: config.get<string>('ACME_MERCHANT_ID', 'acme_host_app'),
          },
        ],
        carriers: [{ name: 'default', url: config.getOrThrow<string>('CARRIER_URL') }],
        // Guards the module's order/admin API and its Swagger UI.
        adminToken: config.getOrThrow<string>('ADMIN_TOKEN'),
        runWorkers: true,
      }),
    }),

    // The host's licences: its @OnPaymentEvent methods are found by the payment module at start.
    LicencesModule,
  ],
  controllers: [HealthController],
})
export class AppModule implements OnApplicationShutdown {
  /**
   * The root module's hook runs after every imported module's (the payment module's workers have
   * stopped and ended their spans): the last spans are exported before the process ends.
   */
  async onApplicationShutdown(): Promise<void> {
    await shutdownTracing();
  }
}
