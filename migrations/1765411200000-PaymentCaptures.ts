import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Captures of a payment, for a provider whose refunds and disputes name the capture they concern
 * and not the payment (PayPal: a `PAYMENT.CAPTURE.REFUNDED` names its capture, which only the
 * capture's own event tied to the order).
 *
 * - `payment_captures`: (provider, merchant account, capture id) → the provider's id of the payment
 *   (`payments.provider_payment_id`), written when a capture event is applied. The key is the
 *   payment's own key with the capture in place of the payment, so one account's capture never
 *   resolves for another.
 */
export class PaymentCaptures1765411200000 implements MigrationInterface {
  name = 'PaymentCaptures1765411200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE payment_captures (
        provider text NOT NULL,
        merchant_account_id text NOT NULL,
        capture_id text NOT NULL,
        provider_payment_id text NOT NULL,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (provider, merchant_account_id, capture_id)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE payment_captures`);
  }
}
