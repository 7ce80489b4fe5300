import { InjectQueue } from '@nestjs/bullmq';
import { QueueName, JobName } from '../jobs/queues';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Queue } from 'bullmq';
import type { EntityManager } from 'typeorm';
import type { ResolvedOptions } from '../config/options';
import { requeueJobs } from '../jobs/requeue';
import { withTimeout } from '../common/with-timeout';
import { PW_OPTIONS } from '../config/tokens';
import { processDeliveryJobOptions, ProcessDeliveryData } from './inbox.queue';
import { InboxStatus, REOPEN_SQL, REOPENABLE, WAITS_FOR_REGISTRATION } from './inbox.state';

/** The deliveries of one provider payment: what parking, releasing and re-running select on. */
export interface ResourceKey {
  provider: string;
  merchantAccountId: string;
  resourceId: string;
}

/**
 * Puts deliveries (back) on the inbox queue: for the sweeper, for deliveries re-run after their
 * payment moved, for parked deliveries released by a registration, and for replays. A job id is
 * the inbox id; a finished job still kept under that id is replaced, since the row says it must
 * run again. The database decides what the run does.
 */
@Injectable()
export class InboxQueueService {
  private readonly logger = new Logger('InboxQueue');

  constructor(
    @InjectQueue(QueueName.Inbox) private readonly queue: Queue<ProcessDeliveryData>,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
  ) {}

  /**
   * Enqueues each delivery unless its job is already waiting or running. `expedite` also moves a
   * job out of its retry backoff (a registration that makes a parked delivery processable).
   * Returns how many jobs were added or promoted.
   */
  async requeue(ids: readonly string[], { expedite = false } = {}): Promise<number> {
    return requeueJobs(
      this.queue,
      ids,
      (id) => this.queue.add(JobName.ProcessDelivery, { inboxId: id }, processDeliveryJobOptions(id, this.options.tuning)),
      { expedite },
    );
  }

  /** Best effort after a commit: a failure leaves the rows `received`, and the sweeper enqueues them. */
  async requeueAfterCommit(ids: readonly string[], options: { expedite?: boolean } = {}): Promise<void> {
    if (ids.length === 0) return;
    try {
      await withTimeout(this.requeue(ids, options), Math.max(this.options.tuning.enqueueTimeoutMs, 2_000), 'requeue');
    } catch (err) {
      this.logger.warn(`${ids.length} deliveries left for the sweeper: ${(err as Error).message}`);
    }
  }

  /**
   * In the caller's transaction: deliveries of one provider payment parked as `unmatched` become
   * `received` again, and the ids of every delivery of that payment still waiting are returned, to
   * be requeued (expedited) after the commit. `exceptIds` leaves out the deliveries being
   * processed. With `skipLocked`, rows another transaction holds are passed over: `skipped` says
   * whether any were, so the caller can look again once it holds nothing.
   */
  async releaseParked(
    em: EntityManager,
    key: ResourceKey,
    { exceptIds = [], skipLocked = false }: { exceptIds?: readonly string[]; skipLocked?: boolean } = {},
  ): Promise<{ ids: string[]; skipped: boolean }> {
    const where = `w.provider = $1 AND w.merchant_account_id = $2 AND w.resource_id = $3
          AND (w.status = 'received' OR ${WAITS_FOR_REGISTRATION}) AND NOT (w.id = ANY($4::uuid[]))`;
    const params = [key.provider, key.merchantAccountId, key.resourceId, exceptIds];
    if (skipLocked) {
      // Nearly always nothing waits for a payment being registered: one look, no lock, says so.
      const [{ waiting }]: Array<{ waiting: number }> = await em.query(`SELECT count(*)::int AS waiting FROM webhook_inbox w WHERE ${where}`, params);
      if (waiting === 0) return { ids: [], skipped: false };
    }
    // Lock first: a worker whose last attempt is parking one of these right now is waited for,
    // and its row is then seen as `unmatched` (and released) rather than missed as `received`.
    // Inbox rows are locked before orders everywhere, so this wait cannot close a cycle; a
    // transaction that holds an order already skips the rows other workers hold instead.
    const rows: Array<{ id: string; status: string }> = await em.query(
      `SELECT id, status FROM webhook_inbox w WHERE ${where} ORDER BY id FOR UPDATE${skipLocked ? ' SKIP LOCKED' : ''}`,
      params,
    );
    const parked = rows.filter((r) => r.status !== 'received').map((r) => r.id);
    if (parked.length > 0) await em.query(`${REOPEN_SQL} WHERE id = ANY($1)`, [parked]);
    const [{ waiting }]: Array<{ waiting: number }> = skipLocked
      ? await em.query(`SELECT count(*)::int AS waiting FROM webhook_inbox w WHERE ${where}`, params)
      : [{ waiting: rows.length }];
    return { ids: rows.map((r) => r.id), skipped: waiting > rows.length };
  }

  /** A replay: a final delivery that can still change goes back to `received` (in the caller's transaction). */
  async reopen(em: EntityManager, id: string, status: InboxStatus): Promise<boolean> {
    if (!REOPENABLE.includes(status)) return false;
    await em.query(`${REOPEN_SQL} WHERE id = $1`, [id]);
    return true;
  }
}
