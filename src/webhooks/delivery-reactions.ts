import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PW_CONNECTION } from '../database/data-source';
import { afterCommit, runTransaction } from '../database/transaction';
import { TransactionEvents } from '../outbox/transaction-events';
import { InboxQueueService, ResourceKey } from './inbox-queue.service';

/**
 * The inbox's reactions to what the payment domain announces, inside the transaction that made
 * the change (so Payments never imports Webhooks):
 * - a payment registered (by the API, or created from an event's order id): its deliveries parked
 *   `unmatched` are released and processed at once;
 * - a payment moved: its deliveries refused as too early (a refund before its capture) get their turn.
 */
@Injectable()
export class DeliveryReactions implements OnModuleInit {
  constructor(
    private readonly events: TransactionEvents,
    private readonly inboxQueue: InboxQueueService,
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
  ) {}

  onModuleInit(): void {
    this.events.on(['internal.payment.registered'], async ({ payment, sourceEventId }, em) => {
      const key: ResourceKey = { provider: payment.provider, merchantAccountId: payment.merchantAccountId, resourceId: payment.providerPaymentId };
      // The registering transaction holds the order's lock: waiting here for a delivery a worker
      // holds (which locks the order after its own row) could deadlock, so those are skipped now…
      const released = await this.inboxQueue.releaseParked(em, key, { skipLocked: true, exceptEventId: sourceEventId });
      if (released.ids.length === 0 && !released.skipped) return;
      afterCommit(em, async () => {
        // …and, if any was skipped, released again once it has committed and holds nothing, waiting
        // for any a worker holds (one being parked at that very moment is then seen parked, not missed).
        const again = released.skipped
          ? (await runTransaction(this.dataSource, (tx) => this.inboxQueue.releaseParked(tx, key, { exceptEventId: sourceEventId }))).ids
          : [];
        await this.inboxQueue.requeueAfterCommit([...new Set([...released.ids, ...again])], { expedite: true });
      });
    });
    this.events.on('*', async (event, em) => {
      const payment = event.data.payment;
      if (!event.type.startsWith('payment.') || !payment) return;
      const reopened = await this.inboxQueue.reopenRejected(em, {
        provider: payment.provider,
        merchantAccountId: payment.merchantAccountId,
        resourceId: payment.providerPaymentId,
      });
      if (reopened.length > 0) afterCommit(em, () => this.inboxQueue.requeueAfterCommit(reopened, { expedite: true }));
    });
  }
}
