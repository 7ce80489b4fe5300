import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { TransactionEvents } from '../outbox/transaction-events';
import type { Queryable } from './payment-store';

/** A capture of a payment, keyed as the payment is (provider, merchant account) with the capture's id. */
export interface CaptureKey {
  provider: string;
  merchantAccountId: string;
  captureId: string;
}

const keyText = (k: CaptureKey) => `${k.provider}\u0000${k.merchantAccountId}\u0000${k.captureId}`;

/**
 * The store of `payment_captures`: which payment each capture belongs to, for a provider whose
 * refunds and disputes name the capture and not the payment (PayPal). A capture is recorded in the
 * transaction that applies its event; a capture recorded for the first time is announced
 * (`internal.capture.recorded`), so that the deliveries waiting for it are released.
 */
@Injectable()
export class PaymentCapturesStore {
  constructor(private readonly events: TransactionEvents) {}

  /** The provider payment id each capture was recorded for, by `keyText`; a capture not recorded is absent. */
  async paymentsOf(db: Queryable, keys: readonly CaptureKey[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    if (keys.length === 0) return found;
    const rows: Array<{ provider: string; account: string; capture: string; payment: string }> = await db.query(
      `SELECT c.provider, c.merchant_account_id AS account, c.capture_id AS capture, c.provider_payment_id AS payment
         FROM jsonb_to_recordset($1::jsonb) AS k(provider text, account text, capture text)
         JOIN payment_captures c ON c.provider = k.provider AND c.merchant_account_id = k.account AND c.capture_id = k.capture`,
      [JSON.stringify(keys.map((k) => ({ provider: k.provider, account: k.merchantAccountId, capture: k.captureId })))],
    );
    for (const r of rows) found.set(keyText({ provider: r.provider, merchantAccountId: r.account, captureId: r.capture }), r.payment);
    return found;
  }

  /** The captures recorded for a payment, oldest first (a PayPal refund names the capture it refunds). */
  async capturesOf(db: Queryable, payment: { provider: string; merchantAccountId: string; providerPaymentId: string }): Promise<string[]> {
    const rows: Array<{ capture_id: string }> = await db.query(
      `SELECT capture_id FROM payment_captures WHERE provider = $1 AND merchant_account_id = $2 AND provider_payment_id = $3 ORDER BY recorded_at, capture_id`,
      [payment.provider, payment.merchantAccountId, payment.providerPaymentId],
    );
    return rows.map((r) => r.capture_id);
  }

  /** The payment a capture was recorded for, from what `paymentsOf` answered. */
  static paymentIn(found: ReadonlyMap<string, string>, key: CaptureKey): string | undefined {
    return found.get(keyText(key));
  }

  /**
   * Records that a capture belongs to a payment, in the caller's transaction. The first record of a
   * capture stands (a capture belongs to one payment); a new one is announced.
   */
  async record(em: EntityManager, capture: CaptureKey & { providerPaymentId: string }): Promise<void> {
    const inserted: unknown[] = await em.query(
      `INSERT INTO payment_captures (provider, merchant_account_id, capture_id, provider_payment_id)
       VALUES ($1, $2, $3, $4)
       ON CONFLICT (provider, merchant_account_id, capture_id) DO NOTHING
       RETURNING capture_id`,
      [capture.provider, capture.merchantAccountId, capture.captureId, capture.providerPaymentId],
    );
    if (inserted.length === 0) return;
    await this.events.publish(em, { type: 'internal.capture.recorded', capture });
  }
}
