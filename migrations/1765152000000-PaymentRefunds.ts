import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Refunds a provider reports one by one (Adyen's `REFUND` carries the amount of that refund only).
 *
 * - `payments.refunds`: the refunds of such a provider the payment has counted, by the provider's
 *   refund id, each with its amount in minor units (`{"<refund id>": "<minor>"}`). The payment's
 *   `refunded_minor` is then their sum: a repeated notification of one refund finds its id and adds
 *   nothing. Providers that report the cumulative refunded amount leave it `{}`, as every existing
 *   row is (a constant default: no table rewrite).
 */
export class PaymentRefunds1765152000000 implements MigrationInterface {
  name = 'PaymentRefunds1765152000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE payments ADD COLUMN refunds jsonb NOT NULL DEFAULT '{}'::jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE payments DROP COLUMN refunds`);
  }
}
