import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { PW_CONNECTION } from '../database/data-source';
import { afterCommit, beforeCommit, runTransaction, TransactionState } from '../database/transaction';
import { TransactionEvents } from '../outbox/transaction-events';
import { InboxQueueService, ResourceKey } from './inbox-queue.service';
import { REOPEN_SQL, WAITS_FOR_REGISTRATION } from './inbox.state';

/** Deliveries a transaction is processing itself: never among those it releases or reopens. */
export const deliveriesInProcess = new TransactionState<Set<string>>(() => new Set());

interface Pending {
  /** Provider payments registered in the transaction: their parked deliveries are released. */
  release: Map<string, ResourceKey>;
  /** Provider payments that moved: their deliveries refused as too early get their turn. */
  reopen: Map<string, ResourceKey>;
  scheduled: boolean;
}

const keyOf = (k: ResourceKey) => `${k.provider}\u0000${k.merchantAccountId}\u0000${k.resourceId}`;

/**
 * The inbox's reactions to what the payment domain announces, inside the transaction that made
 * the change (so Payments never imports Webhooks):
 * - a payment registered (by the API, or created from an event's order id): its deliveries parked
 *   `unmatched`, or refused because their order did not expect their account yet, are released and
 *   processed at once;
 * - a payment moved: its deliveries refused as too early (a refund before its capture) get their turn.
 * They are collected while the transaction runs and done once at its end, in one statement for
 * every payment it touched (a batch of deliveries touches many).
 */
@Injectable()
export class DeliveryReactions implements OnModuleInit {
  private readonly pending = new TransactionState<Pending>(() => ({ release: new Map(), reopen: new Map(), scheduled: false }));

  constructor(
    private readonly events: TransactionEvents,
    private readonly inboxQueue: InboxQueueService,
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
  ) {}

  onModuleInit(): void {
    this.events.on(['internal.payment.registered'], ({ payment }, em) => {
      const key = { provider: payment.provider, merchantAccountId: payment.merchantAccountId, resourceId: payment.providerPaymentId };
      this.schedule(em).release.set(keyOf(key), key);
    });
    this.events.on('*', (event, em) => {
      const payment = event.data.payment;
      if (!event.type.startsWith('payment.') || !payment) return;
      const key = { provider: payment.provider, merchantAccountId: payment.merchantAccountId, resourceId: payment.providerPaymentId };
      this.schedule(em).reopen.set(keyOf(key), key);
    });
  }

  private schedule(em: EntityManager): Pending {
    const pending = this.pending.of(em);
    if (!pending.scheduled) {
      pending.scheduled = true;
      beforeCommit(em, () => this.react(em, pending));
    }
    return pending;
  }

  private async react(em: EntityManager, pending: Pending): Promise<void> {
    pending.scheduled = false;
    const keys = new Map<string, ResourceKey & { release: boolean; reopen: boolean }>();
    for (const [k, key] of pending.release) keys.set(k, { ...key, release: true, reopen: false });
    for (const [k, key] of pending.reopen) keys.set(k, { ...(keys.get(k) ?? { ...key, release: false }), reopen: true });
    pending.release.clear();
    pending.reopen.clear();
    if (keys.size === 0) return;
    const own = [...deliveriesInProcess.of(em)];
    // One statement: reopen what came too early, and look (without a lock) for deliveries waiting
    // for a payment just registered. Nearly always the look finds nothing.
    const rows: Array<{ kind: 'reopened' | 'waiting'; id: string; provider: string; account: string; resource: string }> = await em.query(
      `WITH k AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb) AS k(provider text, account text, resource text, release boolean, reopen boolean)),
       reopened AS (
         ${REOPEN_SQL.replace('UPDATE webhook_inbox SET', 'UPDATE webhook_inbox w SET')}
           FROM k
          WHERE k.reopen AND w.provider = k.provider AND w.merchant_account_id = k.account AND w.resource_id = k.resource
            AND w.status = 'rejected' AND w.outcome = 'illegal_transition' AND NOT (w.id = ANY($2::uuid[]))
         RETURNING w.id)
       SELECT 'reopened' AS kind, id, NULL AS provider, NULL AS account, NULL AS resource FROM reopened
       UNION ALL
       SELECT 'waiting', w.id, k.provider, k.account, k.resource
         FROM webhook_inbox w JOIN k ON k.release AND w.provider = k.provider AND w.merchant_account_id = k.account AND w.resource_id = k.resource
        WHERE (w.status = 'received' OR ${WAITS_FOR_REGISTRATION}) AND NOT (w.id = ANY($2::uuid[]))`,
      [
        JSON.stringify([...keys.values()].map((k) => ({ provider: k.provider, account: k.merchantAccountId, resource: k.resourceId, release: k.release, reopen: k.reopen }))),
        own,
      ],
    );
    const requeue = rows.filter((r) => r.kind === 'reopened').map((r) => r.id);
    const waiting = new Map<string, ResourceKey>();
    for (const r of rows) {
      if (r.kind === 'waiting') waiting.set(`${r.provider}\u0000${r.account}\u0000${r.resource}`, { provider: r.provider, merchantAccountId: r.account, resourceId: r.resource });
    }
    let again: ResourceKey[] = [];
    for (const key of waiting.values()) {
      // The registering transaction holds the order's lock: waiting here for a delivery a worker
      // holds (which locks the order after its own row) could deadlock, so those are skipped now…
      const released = await this.inboxQueue.releaseParked(em, key, { skipLocked: true, exceptIds: own });
      requeue.push(...released.ids);
      if (released.skipped) again.push(key);
    }
    if (requeue.length === 0 && again.length === 0) return;
    afterCommit(em, async () => {
      // …and, where any was skipped, released again once this has committed and holds nothing,
      // waiting for any a worker holds (one being parked at that very moment is then seen parked).
      const later: string[] = [];
      for (const key of again) {
        later.push(...(await runTransaction(this.dataSource, (tx) => this.inboxQueue.releaseParked(tx, key, { exceptIds: own }))).ids);
      }
      again = [];
      await this.inboxQueue.requeueAfterCommit([...new Set([...requeue, ...later])], { expedite: true });
    });
  }
}
