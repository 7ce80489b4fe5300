import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every order's history (docs/rest-api.md#order-history).
 *
 * - `order_history`: one row per move of an order, one of its payments or its fulfillment
 *   (`from_status` null: the move created it), with its cause (jsonb), appended by
 *   `OrderHistoryStore` in the transaction that makes the move. `seq` keeps the order moves were
 *   written in; read by order id, oldest first.
 * - Backfill: what the rows existing now can tell, with the cause `{"kind":"backfill"}`: each
 *   order's, payment's and fulfillment's creation (null → its initial status, at `created_at`) and,
 *   when it has moved since, its current status (null → the status, at `updated_at`, or `paid_at`
 *   for a paid order, whose `updated_at` also moves with its copy of the fulfillment: the moves in
 *   between are not known).
 */
export class OrderHistory1765497600000 implements MigrationInterface {
  name = 'OrderHistory1765497600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE order_history (
        seq bigserial PRIMARY KEY,
        order_id uuid NOT NULL,
        entity text NOT NULL CHECK (entity IN ('order', 'payment', 'fulfillment', 'refund')),
        entity_id uuid NOT NULL,
        from_status text,
        to_status text NOT NULL,
        at timestamptz NOT NULL,
        cause jsonb NOT NULL
      )`);
    await q.query(`CREATE INDEX order_history_order_at ON order_history (order_id, at, seq)`);
    await q.query(`
      INSERT INTO order_history (order_id, entity, entity_id, from_status, to_status, at, cause)
      SELECT order_id, entity, entity_id, NULL, to_status, at, '{"kind":"backfill"}'::jsonb
        FROM (
          SELECT id AS order_id, 'order' AS entity, id AS entity_id, 'awaiting_payment' AS to_status, created_at AS at, 0 AS step FROM orders
          UNION ALL
          SELECT id, 'order', id, status, CASE WHEN status = 'paid' THEN coalesce(paid_at, updated_at) ELSE updated_at END, 1
            FROM orders WHERE status <> 'awaiting_payment'
          UNION ALL
          SELECT order_id, 'payment', id, 'pending', created_at, 0 FROM payments
          UNION ALL
          SELECT order_id, 'payment', id, status, updated_at, 1 FROM payments WHERE status <> 'pending'
          UNION ALL
          SELECT order_id, 'fulfillment', id, 'requested', created_at, 0 FROM fulfillments
          UNION ALL
          SELECT order_id, 'fulfillment', id, status, updated_at, 1 FROM fulfillments WHERE status <> 'requested'
        ) known
       ORDER BY order_id, at, step, entity_id`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE order_history`);
  }
}
