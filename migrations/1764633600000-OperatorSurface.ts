import type { MigrationInterface, QueryRunner } from 'typeorm';

export class OperatorSurface1764633600000 implements MigrationInterface {
  name = 'OperatorSurface1764633600000';

  async up(q: QueryRunner): Promise<void> {
    // The time a UUIDv7 carries: a delivery's receivedAt is its id's time, so the archive's
    // newest-first order (by id) and its from/to window (on receivedAt) are the same order.
    await q.query(`
      CREATE FUNCTION pw_uuid7_time(id uuid) RETURNS timestamptz
      LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
      $$ SELECT to_timestamp((('x' || substr(replace(id::text, '-', ''), 1, 12))::bit(48)::bigint) / 1000.0) $$`);
    // Keyset pagination newest first under each archive filter; provider is served
    // by the event key (provider, merchant_account_id, event_id), a time window by the primary key.
    await q.query(`CREATE INDEX webhook_inbox_status_id_idx ON webhook_inbox (status, id)`);
    await q.query(`CREATE INDEX webhook_inbox_endpoint_id_idx ON webhook_inbox (endpoint_id, id)`);
    await q.query(`CREATE INDEX webhook_inbox_event_type_id_idx ON webhook_inbox (event_type, id)`);
    await q.query(`CREATE INDEX webhook_inbox_event_id_idx ON webhook_inbox (event_id)`);
    // Also how the deliveries of one provider payment are found, to park, release and re-run them.
    await q.query(`CREATE INDEX webhook_inbox_resource_id_idx ON webhook_inbox (resource_id, id)`);
    await q.query(`CREATE INDEX outbox_message_status_id_idx ON outbox_message (status, id)`);
    // Retention: finished deliveries and dispatched messages by age.
    await q.query(
      `CREATE INDEX webhook_inbox_retention_idx ON webhook_inbox (received_at)
        WHERE status IN ('processed', 'ignored', 'rejected', 'unmatched')`,
    );
    await q.query(`CREATE INDEX outbox_message_retention_idx ON outbox_message (created_at) WHERE status = 'dispatched'`);
    await q.query(`CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const index of [
      'idempotency_keys_created_idx',
      'outbox_message_retention_idx',
      'webhook_inbox_retention_idx',
      'outbox_message_status_id_idx',
      'webhook_inbox_resource_id_idx',
      'webhook_inbox_event_id_idx',
      'webhook_inbox_event_type_id_idx',
      'webhook_inbox_endpoint_id_idx',
      'webhook_inbox_status_id_idx',
    ]) {
      await q.query(`DROP INDEX ${index}`);
    }
    await q.query(`DROP FUNCTION pw_uuid7_time(uuid)`);
  }
}
