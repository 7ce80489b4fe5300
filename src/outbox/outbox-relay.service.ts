import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Client } from 'pg';
import { JobProducer } from '../jobs/job-producer';
import { JobName } from '../jobs/queues';
import { withTimeout } from '../common/with-timeout';
import type { ResolvedOptions } from '../config/options';
import { pgConnection } from '../database/data-source';
import { PW_OPTIONS, PW_RECEIVE_PRESSURE } from '../config/tokens';
import type { ReceivePressure } from '../jobs/receive-pressure';
import { detached } from '../observability/tracing';
import { outboxChannel } from './outbox-channel';
import { OutboxDispatcher } from './outbox-dispatcher.service';
import { OutboxStore } from './outbox.store';

/** A committed message handed to this process's dispatcher: its id, and the key it is ordered by. */
export interface CommittedMessage {
  id: string;
  orderingKey?: string;
}

/**
 * Carries committed outbox messages to their dispatch, by the shortest way there is:
 * - In a process that runs the workers, what its own transactions write is handed to its own
 *   dispatcher as soon as they commit (`handOff`): no notification, queue or worker between the
 *   commit and the call.
 * - Elsewhere (an HTTP-only process, a transaction of the host's), each commit that wrote a message
 *   NOTIFYs, and the relay of a worker process enqueues that message at once.
 * Nothing depends on either: a sweeper claims messages still pending a few seconds after they were
 * due (`FOR UPDATE SKIP LOCKED`, so relays in several processes share the work) and enqueues them,
 * so a crash after the commit, a lost notification, a Redis outage or a removed job delays a
 * message, never loses it; the dispatcher's lease keeps any two attempts apart.
 */
@Injectable()
export class OutboxRelay implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('OutboxRelay');
  private listener: Client | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private sweeping: Promise<unknown> | undefined;
  private stopped = false;
  private pendingIds = new Set<string>();
  private flushScheduled = false;
  /** Hand-offs under way (a chain of one ordering key's messages each). */
  private readonly handOffs = new Set<Promise<void>>();

  constructor(
    private readonly store: OutboxStore,
    private readonly jobs: JobProducer,
    private readonly dispatcher: OutboxDispatcher,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    @Inject(PW_RECEIVE_PRESSURE) private readonly pressure: ReceivePressure,
  ) {}

  /**
   * Whether what this process's transactions write is dispatched here once committed: it runs the
   * workers, and their queue's Redis is up (while it is away the messages wait for it, as every
   * other job does; the sweeper brings them once it is back).
   */
  get dispatchesHere(): boolean {
    return this.options.runWorkers && !this.stopped && this.jobs.connected(JobName.DispatchOutboxMessage);
  }

  /**
   * Messages this process wrote, just committed, unannounced: each is dispatched here at once, as a
   * job of the outbox queue would be (a slot of the process's ReceivePressure, then the
   * dispatcher's claim, call and record). Messages sharing an ordering key go one after another, in
   * the order written. A message goes to the queue instead when `workerConcurrency` hand-offs are
   * under way already, when its attempt must wait (a backoff, an earlier message, another worker's
   * lease) and when its dispatch fails; one that even the queue does not take is the sweeper's.
   * Returns at once.
   */
  handOff(messages: readonly CommittedMessage[]): void {
    const chains = new Map<string, string[]>();
    for (const m of messages) {
      const key = m.orderingKey ?? `\u0000${m.id}`;
      chains.set(key, [...(chains.get(key) ?? []), m.id]);
    }
    const queued: string[] = [];
    for (const ids of chains.values()) {
      if (this.stopped || this.handOffs.size >= this.options.tuning.workerConcurrency) {
        queued.push(...ids);
        continue;
      }
      const run = detached(() => this.dispatchInOrder(ids)).finally(() => this.handOffs.delete(run));
      this.handOffs.add(run);
    }
    if (queued.length > 0) this.enqueue(queued);
  }

  private async dispatchInOrder(ids: readonly string[]): Promise<void> {
    for (const id of ids) {
      // Shutting down: no new call; the rest of the chain is pending, for the sweep of whoever runs next.
      if (this.stopped) return;
      let release: (() => void) | undefined;
      try {
        release = await this.pressure.slot();
        if (this.stopped) return;
        const step = await this.dispatcher.dispatch(id);
        if (!step.done) this.enqueue([id]);
      } catch (err) {
        this.logger.warn(`outbox message ${id} left for its job: ${(err as Error)?.message ?? String(err)}`);
        this.enqueue([id]);
      } finally {
        release?.();
      }
    }
  }

  /** Puts messages on the queue (a job already there, waiting or delayed, is left alone); the sweeper covers a failure. */
  private enqueue(ids: string[]): void {
    void this.requeue(ids).catch((err: Error) => this.logger.warn(`${ids.length} messages left for the sweeper: ${err.message}`));
  }

  /** Lets the hand-offs under way finish (at most a lease), before the connections close. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.handOffs.size === 0) return;
    await withTimeout(Promise.allSettled([...this.handOffs]), this.options.tuning.jobLockMs, 'outbox hand-offs').catch(() => undefined);
  }

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
