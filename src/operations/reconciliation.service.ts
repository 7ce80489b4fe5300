import { DataSource } from 'typeorm';
import type { ReconciliationReport } from './dto/operations.dto';

export interface ReconciliationInput {
  provider: string;
  merchantAccountId: string;
  /** Event ids the provider says it sent. */
  eventIds?: string[];
  /** Provider payment ids the provider says were paid. */
  paidResourceIds?: string[];
}

/** Statuses that mean "the money was captured here". */
const CAPTURED = ['succeeded', 'partially_refunded', 'refunded', 'disputed', 'dispute_lost'];

/**
 * Compares our table with what the provider says (CONTRACT §4). A missing event is a subscription
 * or firewall problem; a paid payment not succeeded here, a delivery lost or parked; an order
 * paid and not fulfilled, a stuck outbox; two shipments for one order, a key problem. Plain SQL
 * on a DataSource, so the admin route and the command line share it.
 */
export async function reconcile(dataSource: DataSource, input: ReconciliationInput): Promise<ReconciliationReport> {
  const eventIds = [...new Set(input.eventIds ?? [])];
  const paidIds = [...new Set(input.paidResourceIds ?? [])];

  const recorded: Array<{ event_id: string }> = eventIds.length
    ? await dataSource.query(
        `SELECT event_id FROM webhook_inbox WHERE provider = $1 AND merchant_account_id = $2 AND event_id = ANY($3)`,
        [input.provider, input.merchantAccountId, eventIds],
      )
    : [];
  const seen = new Set(recorded.map((r) => r.event_id));

  const captured: Array<{ provider_payment_id: string }> = paidIds.length
    ? await dataSource.query(
        `SELECT provider_payment_id FROM payments
          WHERE provider = $1 AND merchant_account_id = $2 AND provider_payment_id = ANY($3) AND status = ANY($4)`,
        [input.provider, input.merchantAccountId, paidIds, CAPTURED],
      )
    : [];
  const paidHere = new Set(captured.map((r) => r.provider_payment_id));

  const stuck: Array<{ id: string }> = await dataSource.query(
    `SELECT o.id FROM orders o
       LEFT JOIN fulfillments f ON f.order_id = o.id
      WHERE o.status = 'paid' AND o.paid_at < now() - interval '10 minutes'
        AND (f.id IS NULL OR f.status <> 'dispatched')
      ORDER BY o.paid_at`,
  );
  const doubled: Array<{ order_id: string }> = await dataSource.query(
    `SELECT order_id FROM fulfillments WHERE shipment_id IS NOT NULL
      GROUP BY order_id HAVING count(DISTINCT shipment_id) > 1`,
  );

  return {
    missingEvents: eventIds.filter((id) => !seen.has(id)),
    missingPaidPayments: paidIds.filter((id) => !paidHere.has(id)),
    paidNotFulfilled: stuck.map((r) => r.id),
    duplicateEffects: doubled.map((r) => r.order_id),
  };
}
