import { Injectable, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { PW_CONNECTION } from '../database/data-source';
import { afterCommit, BeforeCommitBatch, runTransaction, TransactionState } from '../database/transaction';
import { TransactionEvents } from '../outbox/transaction-events';
import { InboxQueueService } from './inbox-queue.service';
import { InboxStore, PaymentFollowUp, ResourceKey } from './inbox.store';

/** Deliveries a transaction is processing itself: never among those it releases or reopens. */
export const deliveriesInProcess = new TransactionState<Set<string>>(() => new Set());

/** What a payment's change asks of its deliveries: release those waiting for it, or reopen those too early. */
interface PaymentChange {
  key: ResourceKey;
  /** `release`: the payment was registered; `reopen`: it moved. */
  ask: 'release' | 'reopen';
}

const keyOf = (k: ResourceKey) => `${k.provider}\u0000${k.merchantAccountId}\u0000${k.resourceId}`;

/**
 * The inbox's reactions to what the payment domain announces, inside the transaction that made
 * the change (so Payments never imports Webhooks):
 * - a payment registered (by the API, or created from an event's order id): its deliveries parked
 *   `unmatched`, or refused because their order did not expect their account yet, are released and
 *   processed at once; so are those that name a capture (PayPal refunds, disputes) once the
 *   capture is recorded;
 * - a payment or one of its refunds moved: its deliveries refused as too early (a refund before its
 *   capture, a refund's outcome before the provider's answer that names it was recorded) get their turn.
 * They are collected while the transaction runs and done once at its end, in one statement for
 * every payment it touched (a batch of deliveries touches many).
 */
@Injectable()
export class DeliveryReactions implements OnModuleInit {
  private readonly changes = new BeforeCommitBatch<PaymentChange>((em, changes) => this.react(em, changes));

  constructor(
    private readonly events: TransactionEvents,
    private readonly inbox: InboxStore,
    private readonly inboxQueue: InboxQueueService,
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
  ) {}

  onModuleInit(): void {
    this.events.on(['internal.payment.registered'], ({ payment }, em) => {
      const key = { provider: payment.provider, merchantAccountId: payment.merchantAccountId, resourceId: payment.providerPaymentId };
      this.changes.add(em, { key, ask: 'release' });
    });
    // A capture recorded: the refunds and disputes that name it, parked or waiting, find their payment now.
    this.events.on(['internal.capture.recorded'], ({ capture }, em) => {
      const key = { provider: capture.provider, merchantAccountId: capture.merchantAccountId, resourceId: capture.captureId };
      this.changes.add(em, { key, ask: 'release' });
    });
    this.events.on('*', (event, em) => {
      const payment = event.data.payment;
      // A refund's move too: an outcome of it that came before its provider id was known gets its turn.
      if (!(event.type.startsWith('payment.') || event.type.startsWith('refund.')) || !payment) return;
      const key = { provider: payment.provider, merchantAccountId: payment.merchantAccountId, resourceId: payment.providerPaymentId };
      this.changes.add(em, { key, ask: 'reopen' });
    });
  }

  private async react(em: EntityManager, changes: PaymentChange[]): Promise<void> {
    // One entry per payment, whatever it was asked for and however often.
    const payments = new Map<string, PaymentFollowUp>();
    for (const { key, ask } of changes) {
      const entry = payments.get(keyOf(key)) ?? { ...key, release: false, reopen: false };
      entry[ask] = true;
      payments.set(keyOf(key), entry);
    }
    const inProcess = [...deliveriesInProcess.of(em)];
    // Run with the transaction's other writes; what they found is followed once they have.
    await this.inbox.reopenTooEarlyAndFindWaiting(em, [...payments.values()], inProcess, ({ reopened, waiting }) =>
      this.follow(em, reopened, waiting, inProcess),
    );
  }

  private async follow(em: EntityManager, reopened: readonly string[], waiting: readonly ResourceKey[], inProcess: readonly string[]): Promise<void> {
    const toRequeue = [...reopened];
    const toReleaseAfterCommit: ResourceKey[] = [];
    for (const key of waiting) {
      // The registering transaction holds the order's lock: waiting here for a delivery a worker
      // holds (which locks the order after its own row) could deadlock, so those are skipped now…
      const released = await this.inbox.releaseParked(em, key, { skipLocked: true, exceptIds: inProcess });
      toRequeue.push(...released.ids);
      if (released.skipped) toReleaseAfterCommit.push(key);
    }
    if (toRequeue.length === 0 && toReleaseAfterCommit.length === 0) return;
    afterCommit(em, async () => {
      // …and, where any was skipped, released again once this has committed and holds nothing,
      // waiting for any a worker holds (one being parked at that very moment is then seen parked).
      const releasedAfterCommit: string[] = [];
      for (const key of toReleaseAfterCommit) {
        const released = await runTransaction(this.dataSource, (tx) => this.inbox.releaseParked(tx, key, { exceptIds: inProcess }));
        releasedAfterCommit.push(...released.ids);
      }
      await this.inboxQueue.requeueAfterCommit([...new Set([...toRequeue, ...releasedAfterCommit])], { expedite: true });
    });
  }
}
