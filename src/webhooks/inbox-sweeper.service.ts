import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AdvisoryLock, advisoryLockArgs } from '../database/advisory-locks';
import { withTimeout } from '../common/with-timeout';
import type { ResolvedOptions } from '../config/options';
import { PW_CONNECTION } from '../database/data-source';
import { PW_OPTIONS } from '../config/tokens';
import { InboxHandoff } from './inbox-handoff.service';
import { InboxQueueService } from './inbox-queue.service';
import { InboxStore } from './inbox.store';

/**
 * Re-enqueues deliveries still `received` a few seconds after they arrived: an enqueue lost to a
 * Redis outage, a crash before the enqueue, or a flushed Redis delays a delivery, never loses it.
 * Jobs that still exist are not doubled (the job id is the inbox id).
 */
@Injectable()
export class InboxSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('InboxSweeper');
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;
  /** Where the last pass stopped: passes walk the whole backlog instead of re-reading its head. */
  private cursor: string | null = null;

  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly inbox: InboxStore,
    private readonly inboxQueue: InboxQueueService,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    private readonly handoff: InboxHandoff,
  ) {}

  onApplicationBootstrap(): void {
    if (this.options.runWorkers) this.schedule();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /**
   * One pass; returns how many deliveries it enqueued (0 when another process holds the turn).
   * The advisory lock makes one process sweep at a time.
   */
  async runOnce(): Promise<number> {
    const { sweepAfterMs, sweepBatchSize, enqueueTimeoutMs } = this.options.tuning;
    return this.dataSource.transaction(async (em) => {
      const [{ locked }] = await em.query(
        `SELECT pg_try_advisory_xact_lock(${advisoryLockArgs(AdvisoryLock.InboxSweeper)}) AS locked`,
        [this.options.schema],
      );
      if (!locked) return 0;
      // Rows waiting out a retry backoff keep their place in the backlog; walking it with a cursor
      // means a row whose job was lost is reached however many of those sit before it.
      const found = await this.inbox.stillReceived(em, { olderThanMs: sweepAfterMs, afterId: this.cursor, limit: sweepBatchSize });
      this.cursor = found.length === sweepBatchSize ? found[found.length - 1] : null;
      // A delivery this process is attempting (a slow first attempt, handed off) has its job to come, if it needs one.
      const ids = found.filter((id) => !this.handoff.isAttempting(id));
      if (ids.length === 0) return 0;
      // A job still waiting or running is left alone; a finished one kept under the same id is
      // replaced (the row says it must run again).
      return withTimeout(
        this.inboxQueue.requeue(ids),
        Math.max(enqueueTimeoutMs, 5_000),
        'sweeper enqueue',
      );
    });
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.runOnce()
        .then((count) => count > 0 && this.logger.log(`re-enqueued ${count} deliveries`))
        .catch((err: Error) => this.logger.warn(`sweep failed: ${err.message}`))
        .finally(() => {
          this.running = undefined;
          this.schedule();
        });
    }, this.options.tuning.sweepIntervalMs);
    this.timer.unref();
  }
}
