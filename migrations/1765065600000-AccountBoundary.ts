import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Merchant accounts as a trust boundary.
 *
 * - `orders.merchant_account_id`: the account whose payments an order accepts (null: the order
 *   names none; every existing order is null).
 * - `webhook_inbox.key_scope`: part of the deduplication key. `''` for an event its endpoint serves
 *   (the key is then the event's own: provider, merchant account, event id); the endpoint's id for
 *   an event it does not serve, so that such an event is recorded without taking the key of the
 *   account it names. Every existing row is `''`, which keeps every existing key as it was.
 * - `backfills.refused`: events a backfill listed and could not record (the webhook route would
 *   refuse them with a 400), counted and skipped.
 */
export class AccountBoundary1765065600000 implements MigrationInterface {
  name = 'AccountBoundary1765065600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE orders ADD COLUMN merchant_account_id text NULL`);
    await q.query(`CREATE INDEX orders_merchant_account_idx ON orders (merchant_account_id, id) WHERE merchant_account_id IS NOT NULL`);

    // A constant default: no table rewrite. The new key is built before the old one is dropped, so
    // the table is never without a unique key.
    await q.query(`ALTER TABLE webhook_inbox ADD COLUMN key_scope text NOT NULL DEFAULT ''`);
    await q.query(`CREATE UNIQUE INDEX webhook_inbox_event_scope_key ON webhook_inbox (provider, merchant_account_id, event_id, key_scope)`);
    await q.query(`ALTER TABLE webhook_inbox DROP CONSTRAINT webhook_inbox_event_key`);
    await q.query(`ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_event_key UNIQUE USING INDEX webhook_inbox_event_scope_key`);

    await q.query(`ALTER TABLE backfills ADD COLUMN refused integer NOT NULL DEFAULT 0`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE backfills DROP COLUMN refused`);
    // Rows recorded under an endpoint's scope would collide with the old key: they go first.
    await q.query(`DELETE FROM webhook_inbox WHERE key_scope <> ''`);
    await q.query(`ALTER TABLE webhook_inbox DROP CONSTRAINT webhook_inbox_event_key`);
    await q.query(`ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_event_key UNIQUE (provider, merchant_account_id, event_id)`);
    await q.query(`ALTER TABLE webhook_inbox DROP COLUMN key_scope`);
    await q.query(`DROP INDEX orders_merchant_account_idx`);
    await q.query(`ALTER TABLE orders DROP COLUMN merchant_account_id`);
  }
}
