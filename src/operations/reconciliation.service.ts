import { DataSource } from 'typeorm';
import type { EndpointDefinition } from '../config/options';
import { FulfillmentStore } from '../fulfillment/fulfillment.store';
import { PaymentStore } from '../payments/payment-store';
import { InboxStore } from '../webhooks/inbox.store';
import type { ReconciliationBackfill, ReconciliationReport } from './dto/operations.dto';

export interface ReconciliationInput {
  provider: string;
  merchantAccountId: string;
  /** Event ids the provider says it sent. */
  eventIds?: string[];
  /** Provider payment ids the provider says were paid. */
  paidResourceIds?: string[];
}

/** The inbox's statements; stateless, so the command line's reconcile needs no Nest application. */
const inbox = new InboxStore();

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
 * Compares our table with what the provider says (docs/operations.md#reconciliation). A missing event is a subscription
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

  const recorded = new Set(
    await inbox.recordedEventIds(dataSource, { provider: input.provider, merchantAccountId: input.merchantAccountId, eventIds }),
  );

  const paidHere = new Set(await PaymentStore.capturedPaymentIds(dataSource, input.provider, input.merchantAccountId, paidIds));
  const stuck = await PaymentStore.paidNotDispatched(dataSource, 10);
  const doubled = await FulfillmentStore.ordersWithSeveralShipments(dataSource);

  const missingEvents = eventIds.filter((id) => !recorded.has(id));
  return {
    missingEvents,
    missingPaidPayments: paidIds.filter((id) => !paidHere.has(id)),
    paidNotFulfilled: stuck,
    duplicateEffects: doubled,
    backfill: missingEvents.length > 0 ? recoveringBackfill(endpoints, input.provider, input.merchantAccountId, nowMs) : null,
  };
}
