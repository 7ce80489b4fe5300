import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Backfills from a provider's events API: one row each, with its progress, so a
 * backfill survives a restart and resumes from its last recorded page. One runs per endpoint at a
 * time: a unique partial index on the running ones decides, not a look before the insert.
 */
export class Backfill1764979300000 implements MigrationInterface {
  name = 'Backfill1764979300000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE backfills (
      id          uuid PRIMARY KEY,
      endpoint_id text NOT NULL,
      status      text NOT NULL DEFAULT 'running' CONSTRAINT backfills_status_check CHECK (status IN ('running', 'done', 'failed')),
      since       timestamptz NOT NULL,
      until       timestamptz NOT NULL,
      -- The accounts walked, in order: [null] for a single-account endpoint (no Stripe-Account header).
      accounts    jsonb NOT NULL,
      -- Per account (by index in accounts): the starting_after of the next page, and whether it is walked.
      cursors     jsonb NOT NULL,
      listed      integer NOT NULL DEFAULT 0,
      accepted    integer NOT NULL DEFAULT 0,
      duplicates  integer NOT NULL DEFAULT 0,
      error       text NULL,
      created_at  timestamptz NOT NULL DEFAULT now(),
      updated_at  timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT backfills_window_check CHECK (since < until)
    )`);
    await q.query(`CREATE UNIQUE INDEX backfills_one_running ON backfills (endpoint_id) WHERE status = 'running'`);
    await q.query(`CREATE INDEX backfills_endpoint_created ON backfills (endpoint_id, created_at DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE backfills`);
  }
}
