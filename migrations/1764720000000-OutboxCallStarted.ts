import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * When the relay last began a carrier call for a message. A worker that dies during the call
 * leaves no answer behind; this column is how the next run knows a shipment may already exist
 * (the carrier may have said yes before the crash) even if the order has been refunded since.
 */
export class OutboxCallStarted1764720000000 implements MigrationInterface {
  name = 'OutboxCallStarted1764720000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE outbox_message ADD COLUMN last_call_at timestamptz NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE outbox_message DROP COLUMN last_call_at`);
  }
}
