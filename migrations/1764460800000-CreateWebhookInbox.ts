import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateWebhookInbox1764460800000 implements MigrationInterface {
  name = 'CreateWebhookInbox1764460800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhook_inbox (
        id                  uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
        endpoint_id         text        NOT NULL,
        provider            text        NOT NULL,
        merchant_account_id text        NOT NULL,
        event_id            text        NOT NULL,
        event_type          text        NOT NULL,
        resource_id         text,
        delivery_id         text,
        headers             jsonb       NOT NULL,
        body                text        NOT NULL,
        status              text        NOT NULL DEFAULT 'received'
          CHECK (status IN ('received', 'processed', 'ignored', 'rejected', 'unmatched', 'failed')),
        outcome             text,
        attempts            integer     NOT NULL DEFAULT 0,
        last_error          text,
        received_at         timestamptz NOT NULL DEFAULT now(),
        processed_at        timestamptz,
        CONSTRAINT webhook_inbox_event_key UNIQUE (provider, merchant_account_id, event_id)
      )`);
    // The sweeper's scan: rows still waiting for a job, oldest first.
    await q.query(`CREATE INDEX webhook_inbox_received_idx ON webhook_inbox (received_at) WHERE status = 'received'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE webhook_inbox`);
  }
}
