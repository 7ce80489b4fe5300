import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { Job, Queue } from 'bullmq';
import { moduleRedisConnection, type ModuleRedisConnection, releaseRedisConnection } from '../common/redis-connection';
import { withTimeout } from '../common/with-timeout';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS } from '../config/tokens';
import { JobData, jobOf, JOBS } from './job-registry';
import { JobName, JobSchedule, QueueName } from './queues';
import { requeueJobs } from './requeue';

/**
 * The one producer of the module's jobs: every enqueue goes through it, with the options of the
 * job registry. The receive path has a lane of its own (`addManyAtOnce`): a queue on a connection
 * that queues nothing while Redis is away, so an enqueue fails within its bound instead of waiting
 * (the row is committed; the sweeper covers what it misses).
 */
@Injectable()
export class JobProducer implements OnApplicationShutdown {
  private readonly logger = new Logger('JobProducer');
  private readonly queues: Record<QueueName, Queue>;
  private atOnce: { queue: Queue; redis: ModuleRedisConnection } | undefined;
  /** Each queue's connection once known (null while it is being asked for). */
  private readonly clients = new Map<Queue, { status: string } | null>();

  constructor(
    @InjectQueue(QueueName.Inbox) inbox: Queue,
    @InjectQueue(QueueName.Outbox) outbox: Queue,
    @InjectQueue(QueueName.Maintenance) maintenance: Queue,
    @InjectQueue(QueueName.Backfill) backfill: Queue,
    @InjectQueue(QueueName.Polling) polling: Queue,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
  ) {
    this.queues = {
      [QueueName.Inbox]: inbox,
      [QueueName.Outbox]: outbox,
      [QueueName.Maintenance]: maintenance,
      [QueueName.Backfill]: backfill,
      [QueueName.Polling]: polling,
    };
  }

  /**
   * Whether the connection of the job's queue is up now (as far as this process knows): work that
   * could bypass the queue waits for it instead while Redis is away, as the rest of the pipeline does.
   */
  connected(name: JobName): boolean {
    const queue = this.queueOf(name);
    let client = this.clients.get(queue);
    if (client === undefined) {
      this.clients.set(queue, null);
      void queue.backend.client.then(
        (c: { status: string }) => this.clients.set(queue, c),
        () => this.clients.delete(queue),
      );
      client = null;
    }
    return client !== null && client.status === 'ready';
  }

  /** `delayMs`: the job waits that long before it may run. */
  add<N extends JobName>(name: N, data: JobData[N], { delayMs }: { delayMs?: number } = {}): Promise<Job> {
    const job = jobOf(name, data, this.options.tuning);
    return this.queueOf(name).add(job.name, job.data, delayMs ? { ...job.opts, delay: delayMs } : job.opts);
  }

  addMany<N extends JobName>(name: N, data: ReadonlyArray<JobData[N]>): Promise<Job[]> {
    return this.queueOf(name).addBulk(data.map((d) => jobOf(name, d, this.options.tuning)));
  }

  /**
   * The receive path's enqueue: on its own connection, which fails at once while Redis is away
   * rather than queueing the command, and never past `enqueueTimeoutMs`.
   */
  addManyAtOnce<N extends JobName>(name: N, data: ReadonlyArray<JobData[N]>): Promise<Job[]> {
    const queue = this.atOnceQueue(JOBS[name].queue);
    return withTimeout(queue.addBulk(data.map((d) => jobOf(name, d, this.options.tuning))), this.options.tuning.enqueueTimeoutMs, 'enqueue');
  }

  /**
   * Puts jobs whose rows say "run" back on their queue (see requeueJobs): a job still waiting or
   * running is left alone, a finished one kept under the same id replaced; with `expedite` a
   * delayed one is promoted. `dataOf` makes a job's data from its id.
   */
  requeue<N extends JobName>(name: N, ids: readonly string[], dataOf: (id: string) => JobData[N], { expedite = false } = {}): Promise<number> {
    const queue = this.queueOf(name);
    return requeueJobs(queue, ids, (added) => this.addMany(name, added.map(dataOf)), { expedite });
  }

  /** A repeated job, once across every process (the scheduler's id is its key): on a cron `pattern`, or `every` so many milliseconds. */
  async schedule<N extends JobName>(id: JobSchedule, repeat: string | { every: number }, name: N, data: JobData[N]): Promise<void> {
    await this.queueOf(name).upsertJobScheduler(id, typeof repeat === 'string' ? { pattern: repeat } : repeat, { name, data, opts: JOBS[name].options(data, this.options.tuning) });
  }

  private queueOf(name: JobName): Queue {
    return this.queues[JOBS[name].queue];
  }

  private atOnceQueue(queue: QueueName): Queue {
    if (queue !== QueueName.Inbox) throw new Error(`no enqueue-at-once lane for queue ${queue}`);
    if (!this.atOnce) {
      const redis = moduleRedisConnection(this.options, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
      const q = new Queue(queue, { prefix: this.options.queuePrefix, connection: redis });
      q.on('error', (err) => this.logger.warn(`${queue} queue connection: ${err.message}`));
      this.atOnce = { queue: q, redis };
    }
    return this.atOnce.queue;
  }

  async onApplicationShutdown(): Promise<void> {
    const lane = this.atOnce;
    if (!lane) return;
    // While Redis is away a graceful close cannot reach it (this connection queues nothing): drop it
    // instead, or its reconnect timer would keep the process alive. A Cluster given to the queue is
    // this producer's to close (BullMQ leaves it open), then too.
    await withTimeout(lane.queue.close(), 2_000, 'queue close')
      .catch(() => {
        releaseRedisConnection(lane.redis);
        return lane.queue.disconnect();
      })
      .finally(() => releaseRedisConnection(lane.redis));
  }
}
