import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Endpoint health (docs/operations.md#endpoint-health). Written only by periodic flushes of each
 * process's in-memory tallies and by the silence check, never by the receive path itself.
 *
 * - `endpoint_health`: one row per configured endpoint. `watched_since`: when the service first saw
 *   it (a silence with no authentic delivery ever is counted from there); the last delivery and the
 *   last authentic one; `silent_since` while it is silent (set once, cleared once: the guard of
 *   `endpoint.silent` and `endpoint.resumed`); `secrets_matched`, per configured secret index the
 *   last time a delivery verified with it; `alerts`, the provider's newest health alerts.
 * - `endpoint_counts`: per endpoint and hour, the deliveries accepted, duplicate and refused; each
 *   process adds what it counted (`+=`), so many processes add up.
 */
export class EndpointHealth1765756800000 implements MigrationInterface {
  name = 'EndpointHealth1765756800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE endpoint_health (
        endpoint_id       text        PRIMARY KEY,
        watched_since     timestamptz NOT NULL,
        last_delivery_at  timestamptz NULL,
        last_authentic_at timestamptz NULL,
        silent_since      timestamptz NULL,
        secrets_matched   jsonb       NOT NULL DEFAULT '{}'::jsonb,
        alerts            jsonb       NOT NULL DEFAULT '[]'::jsonb
      )`);
    await q.query(`
      CREATE TABLE endpoint_counts (
        endpoint_id text        NOT NULL,
        hour        timestamptz NOT NULL,
        accepted    integer     NOT NULL DEFAULT 0 CHECK (accepted >= 0),
        duplicate   integer     NOT NULL DEFAULT 0 CHECK (duplicate >= 0),
        refused     integer     NOT NULL DEFAULT 0 CHECK (refused >= 0),
        PRIMARY KEY (endpoint_id, hour)
      )`);
    await q.query(`CREATE INDEX endpoint_counts_hour ON endpoint_counts (hour)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE endpoint_counts`);
    await q.query(`DROP TABLE endpoint_health`);
  }
}
