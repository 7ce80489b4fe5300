import { BullModule } from '@nestjs/bullmq';
import { DynamicModule, InjectionToken, Logger, Module, NestModule, OnApplicationShutdown, ModuleMetadata, OptionalFactoryDependency, Provider, Type } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions } from 'typeorm';
import type { PaymentWebhooksOptions, ResolvedOptions } from './config/options';
import { moduleRedisConnection, ModuleRedisConnection, releaseRedisConnection } from './common/redis-connection';
import { resolveOptions } from './config/validate';
import { providerTable } from './providers';
import { dataSourceOptions, MigrationFailedError, PW_CONNECTION, runMigrationsLocked } from './database/data-source';
import { EventsModule } from './events/events.module';
import { FulfillmentModule } from './fulfillment/fulfillment.module';
import { HealthModule } from './health/health.module';
import { JobsModule } from './jobs/jobs.module';
import { OutboxModule } from './outbox/outbox.module';
import { OperationsModule } from './operations/operations.module';
import { CLOCK, PW_ADMIN_GUARD, BULL_CONFIG_KEY, PW_CARRIER_ADAPTERS, PW_CARRIER_NAMES, PW_RECEIVE_PRESSURE, PW_LOGGER, PW_OPTIONS, PW_PROVIDERS, PW_RAW_OPTIONS, systemClock } from './config/tokens';
import { createLogger } from './observability/logger';
import { AdminAuthGuard } from './http/admin-auth.guard';
import { ReceivePressure } from './jobs/receive-pressure';
import { ObservabilityModule } from './observability/observability.module';
import { PaymentsModule } from './payments/payments.module';
import { WebhooksModule } from './webhooks/webhooks.module';
import { HttpSurface } from './http/http-surface';
import { ClientAddresses } from './http/client-address';
import { applyRoutePrefix } from './http/route-prefix';
import { RouteCollisions } from './http/route-collisions';
import { QueuePrefixOwnership } from './jobs/queue-owner';
import { deploymentIdentity } from './database/deployment-identity';

/** The module's modules that have routes: all of them go under `routePrefix`, and into its OpenAPI document. */
export const DOCUMENTED_MODULES: Type[] = [WebhooksModule, PaymentsModule, OperationsModule, HealthModule, ObservabilityModule];

export interface PaymentWebhooksAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  inject?: Array<InjectionToken | OptionalFactoryDependency>;
  useFactory: (...args: any[]) => PaymentWebhooksOptions | Promise<PaymentWebhooksOptions>;
}

/**
 * The connection of the module's BullMQ queues and workers: the options of one server, or one
 * ioredis Cluster that the queues share (each worker duplicates it). BullMQ never closes a client
 * it was given, so this provider closes it, once the module's queues and workers have.
 */
const PW_BULL_CONNECTION = 'PAYMENT_WEBHOOKS_BULL_CONNECTION';

interface BullConnection {
  connection: ModuleRedisConnection;
  onApplicationShutdown(): void;
}

/** Holds the validated options; global so the module's own connections can read them. */
@Module({})
class PaymentWebhooksOptionsModule {}

function optionsModule(rawProvider: Provider, imports: ModuleMetadata['imports'] = []): DynamicModule {
  return {
    module: PaymentWebhooksOptionsModule,
    global: true,
    imports,
    providers: [
      rawProvider,
      {
        provide: PW_OPTIONS,
        inject: [PW_RAW_OPTIONS],
        useFactory: (raw: PaymentWebhooksOptions) => resolveOptions(raw),
      },
      {
        provide: PW_PROVIDERS,
        // After PW_OPTIONS, which refused a table that cannot be built.
        inject: [PW_RAW_OPTIONS, PW_OPTIONS],
        useFactory: (raw: PaymentWebhooksOptions) => providerTable(raw.providers ?? []),
      },
      {
        provide: PW_CARRIER_ADAPTERS,
        inject: [PW_RAW_OPTIONS],
        useFactory: (raw: PaymentWebhooksOptions) => raw.carrierAdapters ?? [],
      },
      {
        provide: PW_CARRIER_NAMES,
        inject: [PW_OPTIONS, PW_CARRIER_ADAPTERS],
        useFactory: (o: ResolvedOptions, adapters: Array<{ name: string }>) =>
          new Set([...o.carriers.map((c) => c.name), ...adapters.map((a) => a.name)]),
      },
      {
        provide: PW_ADMIN_GUARD,
        inject: [PW_RAW_OPTIONS, PW_OPTIONS],
        useFactory: (raw: PaymentWebhooksOptions, options: ResolvedOptions) =>
          raw.adminGuard ?? new AdminAuthGuard(options.adminToken),
      },
      {
        provide: PW_LOGGER,
        inject: [PW_RAW_OPTIONS],
        useFactory: (raw: PaymentWebhooksOptions) => raw.logger ?? createLogger(),
      },
      { provide: CLOCK, useValue: systemClock },
      {
        // Who a request's client is, behind the trusted proxies (trustedProxies).
        provide: ClientAddresses,
        inject: [PW_OPTIONS],
        useFactory: (o: ResolvedOptions) => new ClientAddresses(o),
      },
      {
        provide: PW_RECEIVE_PRESSURE,
        inject: [PW_OPTIONS],
        useFactory: (o: ResolvedOptions) => new ReceivePressure(o.tuning.busyWorkerSlots, o.tuning.workerYieldMs, o.tuning.receiveBacklog, o.tuning.receiveLagMs),
      },
      {
        provide: PW_BULL_CONNECTION,
        inject: [PW_OPTIONS],
        useFactory: (o: ResolvedOptions): BullConnection => {
          const connection = moduleRedisConnection(o);
          return { connection, onApplicationShutdown: () => releaseRedisConnection(connection) };
        },
      },
    ],
    exports: [PW_OPTIONS, PW_PROVIDERS, PW_CARRIER_ADAPTERS, PW_CARRIER_NAMES, PW_ADMIN_GUARD, PW_LOGGER, CLOCK, ClientAddresses, PW_RECEIVE_PRESSURE, PW_BULL_CONNECTION],
  };
}

/**
 * Idempotent payment webhooks as a NestJS dynamic module: signed deliveries recorded once in an
 * inbox, processed in one PostgreSQL transaction, fulfilled through an outbox. It brings its own
 * named TypeORM connection and BullMQ config key, so a host's own are left alone.
 */
@Module({})
export class PaymentWebhooksModule implements NestModule, OnApplicationShutdown {
  private readonly logger = new Logger('PaymentWebhooks');

  constructor(private readonly collisions: RouteCollisions) {}

  /**
   * Runs when the app initialises, after the host's setGlobalPrefix() and before Nest hands any
   * route to the HTTP platform: a route of the module the host already serves stops the start.
   */
  configure(): void {
    this.collisions.check(DOCUMENTED_MODULES);
  }

  /** Runs after every worker, sweeper and connection of the module has closed. */
  onApplicationShutdown(signal?: string): void {
    this.logger.log(`shut down${signal ? ` (${signal})` : ''}: workers and connections closed`);
  }

  static forRoot(options: PaymentWebhooksOptions): DynamicModule {
    return this.build(optionsModule({ provide: PW_RAW_OPTIONS, useValue: options }));
  }

  static forRootAsync(options: PaymentWebhooksAsyncOptions): DynamicModule {
    return this.build(
      optionsModule(
        { provide: PW_RAW_OPTIONS, inject: options.inject ?? [], useFactory: options.useFactory },
        options.imports,
      ),
    );
  }

  private static build(options: DynamicModule): DynamicModule {
    return {
      module: PaymentWebhooksModule,
      providers: [
        HttpSurface,
        RouteCollisions,
        {
          // Before any worker, sweeper or relay starts (they start at bootstrap): a queue prefix
          // that belongs to a deployment on another database stops the start.
          provide: 'PAYMENT_WEBHOOKS_QUEUE_OWNER',
          inject: [PW_OPTIONS, getDataSourceToken(PW_CONNECTION)],
          useFactory: (o: ResolvedOptions, dataSource: DataSource) => {
            const ownership = new QueuePrefixOwnership(o, () => deploymentIdentity(dataSource, o.databaseUrl, o.schema), new Logger('PaymentWebhooks'));
            return { onModuleInit: () => ownership.start(), onApplicationShutdown: () => ownership.stop() };
          },
        },
        {
          // Before the routes are registered: every route of the module under its prefix.
          provide: 'PAYMENT_WEBHOOKS_ROUTE_PREFIX',
          inject: [PW_OPTIONS, ModulesContainer],
          useFactory: (o: ResolvedOptions, container: ModulesContainer) => {
            applyRoutePrefix(container, DOCUMENTED_MODULES, o.routePrefix);
            return o.routePrefix;
          },
        },
      ],
      exports: [HttpSurface],
      imports: [
        options,
        TypeOrmModule.forRootAsync({
          name: PW_CONNECTION,
          inject: [PW_OPTIONS],
          useFactory: (o: ResolvedOptions) => ({
            ...dataSourceOptions(o.databaseUrl, o.schema, { preparedStatements: o.preparedStatements }),
            retryAttempts: 3,
            retryDelay: 1_000,
            // A failed migration is not a connection problem: say which one, once.
            toRetry: (err: unknown) => !(err instanceof MigrationFailedError),
            // Read back by dataSourceFactory below; TypeORM's own migrationsRun would not take a lock.
            pwMigrationsRun: o.migrationsRun,
          }),
          dataSourceFactory: async (dsOptions?: DataSourceOptions) => {
            const dataSource = await new DataSource(dsOptions!).initialize();
            const migrate = (dsOptions as { pwMigrationsRun?: boolean }).pwMigrationsRun;
            if (migrate !== false) {
              // A start that fails must leave no connection behind.
              await runMigrationsLocked(dataSource).catch(async (err: unknown) => {
                await dataSource.destroy().catch(() => undefined);
                throw err;
              });
            }
            return dataSource;
          },
        }),
        BullModule.forRootAsync(BULL_CONFIG_KEY, {
          inject: [PW_OPTIONS, PW_BULL_CONNECTION],
          useFactory: (o: ResolvedOptions, bull: BullConnection) => ({
            connection: bull.connection,
            prefix: o.queuePrefix,
          }),
        }),
        JobsModule,
        ObservabilityModule,
        WebhooksModule,
        PaymentsModule,
        FulfillmentModule,
        EventsModule,
        OutboxModule,
        OperationsModule,
        HealthModule,
      ],
    };
  }
}
