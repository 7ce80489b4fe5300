import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One index fewer to write for every delivery: `webhook_inbox_resource_key_idx` (provider, merchant
 * account, resource id) served the lookups of a payment's deliveries, which now probe the resource
 * id alone (`webhook_inbox_resource_id_idx`) and match the rest of the key on the rows found, so
 * that no planner statistics can turn them into a scan of a merchant's deliveries. No statement
 * reads it any more (a benchmark's `pg_stat_user_indexes`: 0 scans), yet every insert and every
 * change of a delivery's status (a non-HOT update: `status` is indexed) wrote it. On a 10-million
 * row inbox whose indexes no longer fit in memory, each index written is a page read for a new
 * delivery.
 *
 * Dropping an index rewrites nothing, however large the table, but it takes the table's strongest
 * lock for a moment: it waits for the statements running on the inbox, and the deliveries arriving
 * meanwhile wait behind it. So it waits at most `lock_timeout` (5 s): past that the migration fails,
 * is rolled back, and runs again at the next start (`migrate` says which one failed). `down` builds
 * the index again without `CONCURRENTLY` (a migration runs in a transaction): on a large inbox that
 * blocks its writes for as long as the build takes (minutes for 10 million rows); build it
 * `CONCURRENTLY` by hand first if intake must go on.
 */
export class InboxWriteIndexes1765324800000 implements MigrationInterface {
  name = 'InboxWriteIndexes1765324800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`SET LOCAL lock_timeout = '5s'`);
    await q.query(`DROP INDEX IF EXISTS webhook_inbox_resource_key_idx`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS webhook_inbox_resource_key_idx ON webhook_inbox (provider, merchant_account_id, resource_id)`);
  }
}
