import { DataSource } from 'typeorm';
import type { EndpointDefinition } from '../config/options';
import type { ReconciliationBackfill, ReconciliationReport } from './dto/operations.dto';

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

/** How far back Stripe's Events API lists events: the widest window a backfill can recover. */
export const STRIPE_EVENTS_RETENTION_DAYS = 30;

/**
 * The backfill that recovers missing events (the body of POST /admin/backfill), or null: a stripe
 * endpoint with an apiKey serving the account, the first configured. We know which ids are missing,
 * not when they were sent, so the window is all that Stripe still lists (30 days) up to now; events
 * already recorded in it are duplicates and change nothing.
 */
export function recoveringBackfill(
  endpoints: EndpointDefinition[],
  provider: string,
  merchantAccountId: string,
  nowMs: number,
): ReconciliationBackfill | null {
  if (provider !== 'stripe') return null;
  const endpoint = endpoints.find(
    (e) =>
      e.provider === 'stripe' &&
      !!e.apiKey &&
      (e.merchantAccountIds === undefined
        ? e.merchantAccountId === merchantAccountId
        : e.merchantAccountIds.includes('*') || e.merchantAccountIds.includes(merchantAccountId)),
  );
  if (!endpoint) return null;
  const until = Math.floor(nowMs / 1000) * 1000;
  return {
    endpointId: endpoint.id,
    since: new Date(until - STRIPE_EVENTS_RETENTION_DAYS * 86_400_000).toISOString(),
    until: new Date(until).toISOString(),
    // On a multi-account endpoint, only this account's events (and "*" needs a list).
    ...(endpoint.merchantAccountIds === undefined ? {} : { accounts: [merchantAccountId] }),
  };
}

/**
 * Compares our table with what the provider says (CONTRACT §4). A missing event is a subscription
 * or firewall problem; a paid payment not succeeded here, a delivery lost or parked; an order
 * paid and not fulfilled, a stuck outbox; two shipments for one order, a key problem. Plain SQL
 * on a DataSource, so the admin route and the command line share it. Missing Stripe events come
 * with the backfill that recovers them, where an endpoint can run one.
 */
export async function reconcile(
  dataSource: DataSource,
  input: ReconciliationInput,
  endpoints: EndpointDefinition[] = [],
  nowMs: number = Date.now(),
): Promise<ReconciliationReport> {
  const eventIds = [...new Set(input.eventIds ?? [])];
  const paidIds = [...new Set(input.paidResourceIds ?? [])];

  const recorded: Array<{ event_id: string }> = eventIds.length
    ? await dataSource.query(
        // An event recorded by an endpoint that does not serve the account was never that account's.
        `SELECT event_id FROM webhook_inbox WHERE provider = $1 AND merchant_account_id = $2 AND event_id = ANY($3) AND key_scope = ''`,
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

  const missingEvents = eventIds.filter((id) => !seen.has(id));
  return {
    missingEvents,
    missingPaidPayments: paidIds.filter((id) => !paidHere.has(id)),
    paidNotFulfilled: stuck.map((r) => r.id),
    duplicateEffects: doubled.map((r) => r.order_id),
    backfill: missingEvents.length > 0 ? recoveringBackfill(endpoints, input.provider, input.merchantAccountId, nowMs) : null,
  };
}
