import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The outbox carries any message type, so it owns more of
 * the delivery: a lease (who works on a message, until when; checked on every write), and an
 * ordering key (a subscriber's events of one order are delivered in order at their first attempt).
 * Fulfillment keeps what it ships (address, items, reference) and learns of refunds through events,
 * so it never reads the orders table; an order keeps a copy of its fulfillment's state for its views.
 */
export class GenericOutbox1764806400000 implements MigrationInterface {
  name = 'GenericOutbox1764806400000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE outbox_message
      ADD COLUMN lease_owner  text        NULL,
      ADD COLUMN lease_until  timestamptz NULL,
      ADD COLUMN ordering_key text        NULL`);
    await q.query(`CREATE INDEX outbox_message_ordering_idx ON outbox_message (ordering_key, id) WHERE status = 'pending'`);

    // stop_reason: the order was refunded or canceled before the shipment left; it must not ship.
    await q.query(`ALTER TABLE fulfillments
      ADD COLUMN order_reference text  NULL,
      ADD COLUMN ship_to         jsonb NULL,
      ADD COLUMN items           jsonb NULL,
      ADD COLUMN stop_reason     text  NULL`);
    await q.query(`UPDATE fulfillments f SET order_reference = o.reference, ship_to = o.ship_to, items = o.items
                     FROM orders o WHERE o.id = f.order_id`);
    await q.query(`ALTER TABLE fulfillments ALTER COLUMN ship_to SET NOT NULL, ALTER COLUMN items SET NOT NULL`);

    // The deliveries of one provider payment, found by its whole key (released when it is
    // registered, reopened when it moves): the resource id alone, or the event key's two leading
    // columns, would make the planner scan every delivery of a merchant.
    await q.query(`CREATE INDEX webhook_inbox_resource_key_idx ON webhook_inbox (provider, merchant_account_id, resource_id)`);

    await q.query(`ALTER TABLE orders ADD COLUMN fulfillment jsonb NULL`);
    await q.query(`UPDATE orders o
                      SET fulfillment = jsonb_build_object('id', f.id, 'status', f.status, 'carrier', f.carrier, 'shipmentId', f.shipment_id)
                     FROM fulfillments f WHERE f.order_id = o.id`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE orders DROP COLUMN fulfillment`);
    await q.query(`DROP INDEX webhook_inbox_resource_key_idx`);
    await q.query(`ALTER TABLE fulfillments DROP COLUMN order_reference, DROP COLUMN ship_to, DROP COLUMN items, DROP COLUMN stop_reason`);
    await q.query(`DROP INDEX outbox_message_ordering_idx`);
    await q.query(`ALTER TABLE outbox_message DROP COLUMN lease_owner, DROP COLUMN lease_until, DROP COLUMN ordering_key`);
  }
}
