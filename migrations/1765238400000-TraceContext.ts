import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Traces across the queue and the outbox: the W3C `traceparent` of the span that recorded a
 * delivery (its receipt) and of the span that wrote an outbox message (its processing, an
 * operator's action), so the spans that handle them later, in any process, link to them. NULL when
 * nothing was traced (no default: adding the columns rewrites no row).
 */
export class TraceContext1765238400000 implements MigrationInterface {
  name = 'TraceContext1765238400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_inbox ADD COLUMN trace_context text`);
    await q.query(`ALTER TABLE outbox_message ADD COLUMN trace_context text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE outbox_message DROP COLUMN trace_context`);
    await q.query(`ALTER TABLE webhook_inbox DROP COLUMN trace_context`);
  }
}
