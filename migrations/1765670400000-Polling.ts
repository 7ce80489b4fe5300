import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Recovering a payment whose webhook never came (docs/operations.md#when-webhooks-stop).
 *
 * - `webhook_inbox.source` may be `poll`: what a poll of the provider read, recorded as a delivery.
 * - `payment_polls`: one row per payment a poll asked about, its schedule counted from the payment's
 *   last change (`since`, the payment's `updated_at` then): a payment that moves starts a new one.
 *   `requested_at`: an operator asked for a poll now.
 * - `payments_open`: the payments polling looks at (`pending`, `processing`, `authorized`), by
 *   provider and age, so that finding them never reads the settled ones.
 */
export class Polling1765670400000 implements MigrationInterface {
  name = 'Polling1765670400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_inbox DROP CONSTRAINT webhook_inbox_source_check`);
    await q.query(`ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_source_check CHECK (source IN ('webhook', 'backfill', 'poll'))`);
    await q.query(`
      CREATE TABLE payment_polls (
        payment_id     uuid        PRIMARY KEY REFERENCES payments (id),
        since          timestamptz NOT NULL,
        polls          integer     NOT NULL DEFAULT 0 CHECK (polls >= 0),
        next_at        timestamptz NOT NULL,
        requested_at   timestamptz NULL,
        last_polled_at timestamptz NULL,
        last_result    text        NULL CHECK (last_result IN ('changed', 'unchanged', 'error'))
      )`);
    await q.query(`CREATE INDEX payment_polls_requested ON payment_polls (requested_at) WHERE requested_at IS NOT NULL`);
    await q.query(
      `CREATE INDEX payments_open ON payments (provider, updated_at) WHERE status IN ('pending', 'processing', 'authorized')`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX payments_open`);
    await q.query(`DROP TABLE payment_polls`);
    await q.query(`DELETE FROM webhook_inbox WHERE source = 'poll'`);
    await q.query(`ALTER TABLE webhook_inbox DROP CONSTRAINT webhook_inbox_source_check`);
    await q.query(`ALTER TABLE webhook_inbox ADD CONSTRAINT webhook_inbox_source_check CHECK (source IN ('webhook', 'backfill'))`);
  }
}
