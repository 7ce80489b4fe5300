import { DataSource, DataSourceOptions } from 'typeorm';
import { CreateWebhookInbox1764460800000 } from '../../migrations/1764460800000-CreateWebhookInbox';
import { CreatePaymentDomain1764547200000 } from '../../migrations/1764547200000-CreatePaymentDomain';
import { OperatorSurface1764633600000 } from '../../migrations/1764633600000-OperatorSurface';
import { OutboxCallStarted1764720000000 } from '../../migrations/1764720000000-OutboxCallStarted';
import { GenericOutbox1764806400000 } from '../../migrations/1764806400000-GenericOutbox';
import { InboxSourceAndApiVersion1764892800000 } from '../../migrations/1764892800000-InboxSourceAndApiVersion';
import { Backfill1764979300000 } from '../../migrations/1764979300000-Backfill';
import { AccountBoundary1765065600000 } from '../../migrations/1765065600000-AccountBoundary';
import { PaymentRefunds1765152000000 } from '../../migrations/1765152000000-PaymentRefunds';
import { TraceContext1765238400000 } from '../../migrations/1765238400000-TraceContext';
import { InboxWriteIndexes1765324800000 } from '../../migrations/1765324800000-InboxWriteIndexes';
import { PaymentCaptures1765411200000 } from '../../migrations/1765411200000-PaymentCaptures';
import { OrderHistory1765497600000 } from '../../migrations/1765497600000-OrderHistory';
import { Refunds1765584000000 } from '../../migrations/1765584000000-Refunds';
import { Polling1765670400000 } from '../../migrations/1765670400000-Polling';
import { EndpointHealth1765756800000 } from '../../migrations/1765756800000-EndpointHealth';
import { AdvisoryLock, advisoryLockArgs } from './advisory-locks';
import { pgClientClass } from './prepared-statements';

/** The module's own TypeORM connection name, so a host's default connection is left alone. */
export const PW_CONNECTION = 'payment-webhooks';

/** The schema a module without a `schema` option uses. */
export const DEFAULT_SCHEMA = 'payment_webhooks';

/** Listed, not globbed, so Jest, the CLI and the app see the same list. */
export const MIGRATIONS = [
  CreateWebhookInbox1764460800000,
  CreatePaymentDomain1764547200000,
  OperatorSurface1764633600000,
  OutboxCallStarted1764720000000,
  GenericOutbox1764806400000,
  InboxSourceAndApiVersion1764892800000,
  Backfill1764979300000,
  AccountBoundary1765065600000,
  PaymentRefunds1765152000000,
  TraceContext1765238400000,
  InboxWriteIndexes1765324800000,
  PaymentCaptures1765411200000,
  OrderHistory1765497600000,
  Refunds1765584000000,
  Polling1765670400000,
  EndpointHealth1765756800000,
];

export const MIGRATIONS_TABLE = 'pw_migrations';

/**
 * Options of every `pg` connection the module opens (the data source's, the receive path's pool,
 * the relay's listener): the module's schema is the only one on the search path, so its SQL,
 * written without schema names, can never read or write a host's table of the same name.
 * `schema` is validated as a plain identifier before it gets here.
 */
export function pgConnection(databaseUrl: string, schema: string): { connectionString: string; options: string } {
  return { connectionString: databaseUrl, options: `-c search_path=${schema}` };
}

export function dataSourceOptions(databaseUrl: string, schema: string = DEFAULT_SCHEMA, { preparedStatements = true } = {}): DataSourceOptions {
  return {
    type: 'postgres',
    url: databaseUrl,
    schema,
    // No entity: each table's store writes its SQL and maps its rows (TypeORM runs the connection,
    // the transactions and the migrations).
    entities: [],
    migrations: MIGRATIONS,
    migrationsTableName: MIGRATIONS_TABLE,
    // The schema comes from migrations only.
    synchronize: false,
    migrationsRun: false,
    extra: {
      max: 20,
      connectionTimeoutMillis: 5_000,
      application_name: 'payment-webhooks',
      options: pgConnection(databaseUrl, schema).options,
      // pg-pool's client class: one that prepares the module's statements (prepared-statements.ts).
      Client: pgClientClass(preparedStatements),
    },
  };
}

/** A migration that failed: names it, so an operator is not told "unable to connect". */
export class MigrationFailedError extends Error {
  constructor(
    readonly migration: string,
    cause: unknown,
  ) {
    super(`migration ${migration} failed and was rolled back: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'MigrationFailedError';
  }
}

/**
 * Creates the module's schema when missing, then applies pending migrations, each in a transaction
 * of its own (a failed one leaves nothing half applied). Any number of processes may start at
 * once: one applies them, the others wait on the lock and then find nothing to do.
 */
export async function runMigrationsLocked(dataSource: DataSource): Promise<string[]> {
  const schema = schemaOf(dataSource);
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query(`SELECT pg_advisory_lock(${advisoryLockArgs(AdvisoryLock.Migrations)})`, [schema]);
    try {
      await runner.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
      const pending = await pendingMigrations(dataSource);
      if (pending.length === 0) return [];
      try {
        await dataSource.runMigrations({ transaction: 'each' });
      } catch (err) {
        // Each ran in its own transaction: the first one still pending is the one that failed.
        const [failed] = await pendingMigrations(dataSource).catch(() => [pending[0]]);
        throw new MigrationFailedError(failed ?? pending[0], err);
      }
      return pending;
    } finally {
      await runner.query(`SELECT pg_advisory_unlock(${advisoryLockArgs(AdvisoryLock.Migrations)})`, [schema]);
    }
  } finally {
    await runner.release();
  }
}

export function schemaOf(dataSource: DataSource): string {
  return (dataSource.options as { schema?: string }).schema ?? DEFAULT_SCHEMA;
}

/** Names of the migrations not yet applied, in the order they will run. */
export async function pendingMigrations(dataSource: DataSource): Promise<string[]> {
  const schema = schemaOf(dataSource);
  const [{ exists }]: Array<{ exists: boolean }> = await dataSource.query(
    `SELECT to_regclass($1) IS NOT NULL AS exists`,
    [`${schema}.${MIGRATIONS_TABLE}`],
  );
  const applied = new Set<string>();
  if (exists) {
    const rows: Array<{ name: string }> = await dataSource.query(`SELECT name FROM ${schema}.${MIGRATIONS_TABLE}`);
    for (const { name } of rows) applied.add(name);
  }
  return dataSource.migrations.map((m) => m.name ?? m.constructor.name).filter((name) => !applied.has(name));
}
