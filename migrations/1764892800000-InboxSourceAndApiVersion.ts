import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The archive says which API version an event was written in (Stripe and Factuarea envelopes carry
 * `api_version`) and how it arrived: by webhook, or pulled back from the provider by a backfill.
 */
export class InboxSourceAndApiVersion1764892800000 implements MigrationInterface {
  name = 'InboxSourceAndApiVersion1764892800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_inbox
      ADD COLUMN api_version text NULL,
      ADD COLUMN source      text NOT NULL DEFAULT 'webhook' CONSTRAINT webhook_inbox_source_check CHECK (source IN ('webhook', 'backfill'))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_inbox DROP COLUMN source, DROP COLUMN api_version`);
  }
}
