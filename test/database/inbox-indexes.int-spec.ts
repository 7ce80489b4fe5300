import { DataSource, QueryRunner } from 'typeorm';
import { InboxWriteIndexes1765324800000 } from '../../migrations/1765324800000-InboxWriteIndexes';
import { dataSourceOptions, runMigrationsLocked } from '../../src/database/data-source';
import { TEST_DATABASE_URL } from '../support/env';

/**
 * The indexes every new delivery writes (docs/benchmarks.md, "A database that has worked for
 * months"): each is an index page to read and write per insert and per change of status on a large
 * inbox, so the set is pinned here, each with what reads it. The migration that dropped the unused
 * one goes down and up again. Against the real PostgreSQL, in a scratch schema.
 */
describe('webhook_inbox indexes', () => {
  const schema = `inbox_indexes_${process.pid}`;
  let ds: DataSource;

  const indexes = async (): Promise<string[]> =>
    (
      await ds.query(`SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'webhook_inbox' ORDER BY indexname`, [schema])
    ).map((r: { indexname: string }) => r.indexname);

  beforeAll(async () => {
    ds = new DataSource(dataSourceOptions(TEST_DATABASE_URL, schema));
    await ds.initialize();
    await ds.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await runMigrationsLocked(ds);
  });
  afterAll(async () => {
    await ds?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await ds?.destroy();
  });

  it('are exactly the ones a statement or the archive reads', async () => {
    expect(await indexes()).toEqual([
      'webhook_inbox_endpoint_id_idx', // the archive's endpoint filter
      'webhook_inbox_event_id_idx', // the archive's event id filter
      'webhook_inbox_event_key', // the inbox's idempotency: (provider, account, event id, key scope)
      'webhook_inbox_event_type_id_idx', // the archive's event type filter
      'webhook_inbox_pkey',
      'webhook_inbox_received_idx', // the sweeper: deliveries still received
      'webhook_inbox_resource_id_idx', // a payment's deliveries (processing), the archive's resource filter
      'webhook_inbox_retention_idx', // retention: final deliveries by age
      'webhook_inbox_status_id_idx', // the archive's status filter
    ]);
  });

  it('the migration that dropped the unused one goes down and up again', async () => {
    const migration = new InboxWriteIndexes1765324800000();
    const inTransaction = async (step: (runner: QueryRunner) => Promise<void>) => {
      const runner = ds.createQueryRunner();
      await runner.connect();
      try {
        await runner.startTransaction();
        await step(runner);
        await runner.commitTransaction();
      } finally {
        await runner.release();
      }
    };
    await inTransaction((runner) => migration.down(runner));
    expect(await indexes()).toContain('webhook_inbox_resource_key_idx');
    await inTransaction((runner) => migration.up(runner));
    expect(await indexes()).not.toContain('webhook_inbox_resource_key_idx');
    expect(await indexes()).toHaveLength(9);
  });
});
