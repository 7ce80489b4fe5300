import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Refunds the shop asks for through the module (CONTRACT §3.1; docs/commands.md).
 *
 * - `refunds`: one row per refund, its lifecycle `requested` → `submitted` → `succeeded` | `failed`
 *   (checked by the table too). `provider_refund_id` is the provider's id of it once accepted:
 *   unique per (provider, merchant account), so one provider refund confirms one of ours, and never
 *   one of another account.
 * - Indexes: an order's refunds (`GET /orders/{id}/refunds`, newest first) and a payment's (what a
 *   new refund may still take).
 */
export class Refunds1765584000000 implements MigrationInterface {
  name = 'Refunds1765584000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE refunds (
        id uuid PRIMARY KEY,
        order_id uuid NOT NULL REFERENCES orders(id),
        payment_id uuid NOT NULL REFERENCES payments(id),
        provider text NOT NULL,
        merchant_account_id text NOT NULL,
        amount_minor bigint NOT NULL CHECK (amount_minor > 0),
        currency text NOT NULL,
        reason text,
        status text NOT NULL CHECK (status IN ('requested', 'submitted', 'succeeded', 'failed')),
        provider_refund_id text,
        failure_reason text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    await q.query(`CREATE INDEX refunds_order ON refunds (order_id, id)`);
    await q.query(`CREATE INDEX refunds_payment ON refunds (payment_id)`);
    // The captures of a payment (a PayPal refund is sent against the payment's capture).
    await q.query(`CREATE INDEX payment_captures_payment ON payment_captures (provider, merchant_account_id, provider_payment_id)`);
    await q.query(
      `CREATE UNIQUE INDEX refunds_provider_refund ON refunds (provider, merchant_account_id, provider_refund_id) WHERE provider_refund_id IS NOT NULL`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE refunds`);
    await q.query(`DROP INDEX payment_captures_payment`);
  }
}
