import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Client } from 'pg';
import { JobProducer } from '../jobs/job-producer';
import { JobName } from '../jobs/queues';
import { withTimeout } from '../common/with-timeout';
import type { ResolvedOptions } from '../config/options';
import { pgConnection } from '../database/data-source';
import { PW_OPTIONS } from '../config/tokens';
import { outboxChannel } from './outbox-channel';
import { OutboxStore } from './outbox.store';

/**
 * Carries committed outbox messages to the queue. Low latency without polling load: each commit
 * that wrote a message NOTIFYs, and the relay enqueues that message at once. Nothing depends on
 * it: a sweeper claims messages still pending a few seconds after they were due
 * (`FOR UPDATE SKIP LOCKED`, so relays in several processes share the work) and enqueues them,
 * so a lost notification, a Redis outage or a removed job delays a message, never loses it.
 */
@Injectable()
export class OutboxRelay implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('OutboxRelay');
  private listener: Client | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<unknown> | undefined;
  private stopped = false;
  private pendingIds = new Set<string>();
  private flushScheduled = false;

  constructor(
    private readonly store: OutboxStore,
    private readonly jobs: JobProducer,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.options.runWorkers) return;
    void this.listen();
    this.scheduleSweep();
  }

  /** Stops claiming: no new listen, no new sweep; waits for a sweep under way. */
  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.sweepTimer);
    clearTimeout(this.reconnectTimer);
    await this.sweeping;
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => undefined);
  }

  /**
   * One sweep: claims due messages still pending `sweepAfterMs` after they were due and enqueues
   * those with no live job. Returns how many it enqueued.
   */
  async runOnce(): Promise<number> {
    const { sweepAfterMs, sweepBatchSize, enqueueTimeoutMs } = this.options.tuning;
    return this.store.sweepDue(sweepAfterMs, sweepBatchSize, (ids) =>
      withTimeout(this.requeue(ids), Math.max(enqueueTimeoutMs, 5_000), 'outbox sweep enqueue'),
    );
  }

  /**
   * Enqueues each message unless its job is waiting, delayed or running; a finished job kept under
   * the same id is replaced (the message says it must run again: a retry from the admin API, or a
   * dispatcher that gave up on its own infrastructure).
   */
  async requeue(ids: readonly string[], trace?: string | null): Promise<number> {
    return this.jobs.requeue(JobName.DispatchOutboxMessage, ids, (messageId) => (trace ? { messageId, trace } : { messageId }));
  }

  private async listen(): Promise<void> {
    if (this.stopped) return;
    const client = new Client({ ...pgConnection(this.options.databaseUrl, this.options.schema), application_name: 'payment-webhooks-relay' });
    const retry = (err?: Error) => {
      if (this.listener !== client) return;
      this.listener = undefined;
      client.end().catch(() => undefined);
      if (this.stopped) return;
      if (err) this.logger.warn(`outbox listener lost (${err.message}); reconnecting`);
      this.reconnectTimer = setTimeout(() => void this.listen(), 1_000);
      this.reconnectTimer.unref();
    };
    client.on('error', retry);
    client.on('end', () => retry());
    client.on('notification', (msg) => {
      if (msg.channel === outboxChannel(this.options.schema) && msg.payload) this.enqueueSoon(msg.payload);
    });
    this.listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${outboxChannel(this.options.schema)}`);
      // Whatever was announced while no one listened is found by a sweep now, not in 5 s.
      this.sweepNow();
    } catch (err) {
      retry(err as Error);
    }
  }

  /** Notifications of one burst share one pass over the queue. */
  private enqueueSoon(id: string): void {
    this.pendingIds.add(id);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      const ids = [...this.pendingIds];
      this.pendingIds.clear();
      this.jobs
        .addMany(JobName.DispatchOutboxMessage, ids.map((messageId) => ({ messageId })))
        .catch((err: Error) => this.logger.warn(`${ids.length} messages left for the sweeper: ${err.message}`));
    });
  }

  private sweepNow(): void {
    if (this.stopped || this.sweeping) return;
    this.sweeping = this.runOnce()
      .then((count) => count > 0 && this.logger.log(`swept ${count} outbox messages`))
      .catch((err: Error) => this.logger.warn(`outbox sweep failed: ${err.message}`))
      .finally(() => (this.sweeping = undefined));
  }

  private scheduleSweep(): void {
    if (this.stopped) return;
    this.sweepTimer = setTimeout(() => {
      this.sweepNow();
      void Promise.resolve(this.sweeping).finally(() => this.scheduleSweep());
    }, this.options.tuning.sweepIntervalMs);
    this.sweepTimer.unref();
  }
}
