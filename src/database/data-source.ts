import { DataSource, DataSourceOptions } from 'typeorm';
import { CreateWebhookInbox1764460800000 } from '../../migrations/1764460800000-CreateWebhookInbox';
import { CreatePaymentDomain1764547200000 } from '../../migrations/1764547200000-CreatePaymentDomain';
import { OperatorSurface1764633600000 } from '../../migrations/1764633600000-OperatorSurface';
import { OutboxCallStarted1764720000000 } from '../../migrations/1764720000000-OutboxCallStarted';
import { Fulfillment } from '../fulfillment/fulfillment.entity';
import { OutboxMessage } from '../outbox/outbox-message.entity';
import { IdempotencyKey } from '../payments/idempotency-key.entity';
import { Order } from '../payments/order.entity';
import { Payment } from '../payments/payment.entity';
import { WebhookInbox } from '../webhooks/inbox.entity';

/** The module's own TypeORM connection name, so a host's default connection is left alone. */
export const PW_CONNECTION = 'payment-webhooks';

export const ENTITIES = [WebhookInbox, Order, Payment, Fulfillment, OutboxMessage, IdempotencyKey];

/** Listed, not globbed, so Jest, the CLI and the app see the same list. */
export const MIGRATIONS = [
  CreateWebhookInbox1764460800000,
  CreatePaymentDomain1764547200000,
  OperatorSurface1764633600000,
  OutboxCallStarted1764720000000,
];

export function dataSourceOptions(databaseUrl: string): DataSourceOptions {
  return {
    type: 'postgres',
    url: databaseUrl,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'pw_migrations',
    // The schema comes from migrations only.
    synchronize: false,
    migrationsRun: false,
    extra: {
      max: 20,
      connectionTimeoutMillis: 5_000,
      application_name: 'payment-webhooks',
    },
  };
}

/** Any number of processes may start at once: one applies the migrations, the others wait. */
export async function runMigrationsLocked(dataSource: DataSource): Promise<void> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query(`SELECT pg_advisory_lock(hashtext('payment-webhooks:migrations'))`);
    try {
      await dataSource.runMigrations({ transaction: 'each' });
    } finally {
      await runner.query(`SELECT pg_advisory_unlock(hashtext('payment-webhooks:migrations'))`);
    }
  } finally {
    await runner.release();
  }
}
