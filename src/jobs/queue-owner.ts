import type { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { moduleRedisClient, type RedisTarget } from '../common/redis-connection';
import { withTimeout } from '../common/with-timeout';
import { QueueName } from './queues';

/** Which database a deployment runs on: the same for every process of it (HTTP-only and worker-only alike), never a credential. */
export interface DeploymentIdentity {
  /** Compared: the database server, the database and the module's schema. */
  id: string;
  /** Shown in the refusal: `database "payments", schema "payment_webhooks", on db.internal:5432`. */
  description: string;
}

/** The hash, under the queue prefix, naming the deployment the prefix's queues belong to (`id`, `description`). */
export function queueOwnerKey(queuePrefix: string): string {
  return `${queuePrefix}:payment-webhooks:owner`;
}

/** The live processes of the owner: a sorted set of process ids scored by when their lease ends. */
export function queueMembersKey(queuePrefix: string): string {
  return `${queuePrefix}:payment-webhooks:processes`;
}

/** BullMQ's keys of the jobs still to run on a queue (Redis deletes an empty list or set, so none exists once all ran). */
const PENDING = ['wait', 'active', 'paused', 'delayed', 'prioritized', 'waiting-children'];

/**
 * Atomically: a recorded owner on another database keeps the prefix while one of its processes
 * lives (its lease not lapsed) or a job of its is still to run; otherwise this deployment becomes
 * (or stays) the owner and this process a live one. Returns the other owner's description, or
 * false. KEYS: owner, processes, pending-job keys…; ARGV: id, description, now, process, lease end.
 */
const CLAIM = `
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[3])
local owner = redis.call('HGET', KEYS[1], 'id')
if owner and owner ~= ARGV[1] then
  local busy = redis.call('ZCARD', KEYS[2])
  for i = 3, #KEYS do busy = busy + redis.call('EXISTS', KEYS[i]) end
  if busy > 0 then return redis.call('HGET', KEYS[1], 'description') or owner end
  redis.call('DEL', KEYS[2])
end
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'description', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[5], ARGV[4])
return false
`;

/** How long the start waits for Redis to answer the claim before going on without it (as a start without Redis does). */
const CLAIM_TIMEOUT_MS = 2_000;
/** A process that stops renewing (it died) no longer holds the prefix after this. */
const LEASE_MS = 30_000;

/**
 * The start-up check that refuses a queue prefix of another deployment (docs/embedding.md#collisions-refused-at-start). The first process
 * of a deployment to start records, under the queue prefix, which database the prefix's queues
 * belong to; a process of a deployment on another database (another server, database or schema)
 * stops the start with one line naming `queuePrefix`/`QUEUE_PREFIX` and both databases, so that
 * two deployments sharing a Redis never take each other's jobs. Processes of one deployment pass.
 * The prefix is free again once its owner has no live process and no job left to run (every
 * process renews its lease while it runs, and gives it back when it shuts down).
 *
 * A Redis that does not answer is not a refusal: the start goes on as it does without Redis and
 * says the prefix was not checked. Once Redis answers it claims the prefix, and if the prefix turns
 * out to belong to another deployment it says so in one error line, but it does not stop then.
 */
export class QueuePrefixOwnership {
  private readonly process = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private client: ReturnType<typeof moduleRedisClient> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ours: DeploymentIdentity | undefined;
  private claimed = false;
  private reported = false;

  constructor(
    private readonly target: RedisTarget & { queuePrefix: string },
    private readonly identity: () => Promise<DeploymentIdentity>,
    private readonly logger: Pick<Logger, 'warn' | 'error'>,
    private readonly timing = { timeoutMs: CLAIM_TIMEOUT_MS, leaseMs: LEASE_MS },
  ) {}

  /** Claims the prefix; throws the one-line refusal when it belongs to a deployment on another database. */
  async start(): Promise<void> {
    this.ours = await this.identity();
    const client = moduleRedisClient(this.target, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: this.timing.timeoutMs });
    client.on('error', () => undefined);
    this.client = client;
    let theirs: string | false;
    try {
      theirs = await withTimeout(
        client.connect().then(() => this.claim()),
        this.timing.timeoutMs,
        'the claim of the queue prefix',
      );
    } catch (err) {
      this.logger.warn(`queue prefix "${this.target.queuePrefix}" not yet checked against other deployments: Redis did not answer (${(err as Error).message})`);
      this.renewLater();
      return;
    }
    if (theirs !== false) {
      this.close();
      throw new Error(queuePrefixTakenMessage(this.target.queuePrefix, theirs, this.ours.description));
    }
    this.renewLater();
  }

  /** Gives the process's lease back (the owner stays recorded). */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const client = this.client;
    if (client && this.claimed) {
      await withTimeout(client.zrem(queueMembersKey(this.target.queuePrefix), this.process), this.timing.timeoutMs, 'the release').catch(() => undefined);
    }
    this.close();
  }

  private close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.client?.disconnect();
    this.client = undefined;
  }

  private async claim(): Promise<string | false> {
    const prefix = this.target.queuePrefix;
    // The maintenance and polling queues always hold their schedulers' next runs: that is no work of
    // the owner's data, and would keep the prefix taken for ever after the owner is gone (a poll's
    // schedule is in the database).
    const pending = Object.values(QueueName)
      .filter((queue) => queue !== QueueName.Maintenance && queue !== QueueName.Polling)
      .flatMap((queue) => PENDING.map((list) => `${prefix}:${queue}:${list}`));
    const now = Date.now();
    const theirs = (await this.client!.eval(
      CLAIM,
      2 + pending.length,
      queueOwnerKey(prefix),
      queueMembersKey(prefix),
      ...pending,
      this.ours!.id,
      this.ours!.description,
      String(now),
      this.process,
      String(now + this.timing.leaseMs),
    )) as string | null;
    if (theirs === null) this.claimed = true;
    return theirs ?? false;
  }

  /** A client that gave up (a start without Redis) connects again; one reconnecting is left to it. */
  private async connected(): Promise<void> {
    const client = this.client!;
    if (client.status === 'wait' || client.status === 'end') await client.connect();
  }

  /** Renews the lease (or makes the claim a start could not) every third of it, while the process runs. */
  private renewLater(): void {
    this.timer = setTimeout(() => {
      this.connected()
        .then(() => this.claim())
        .then((theirs) => {
          if (theirs !== false && !this.reported) {
            this.reported = true;
            this.logger.error(queuePrefixTakenMessage(this.target.queuePrefix, theirs, this.ours!.description));
          }
        })
        .catch(() => undefined)
        .finally(() => {
          if (this.client) this.renewLater();
        });
    }, Math.floor(this.timing.leaseMs / 3));
    this.timer.unref();
  }
}

/** The one line that refuses the start. */
export function queuePrefixTakenMessage(queuePrefix: string, theirs: string, ours: string): string {
  return (
    `payment-webhooks: queue prefix "${queuePrefix}" (option queuePrefix, QUEUE_PREFIX) already belongs to a deployment on ${theirs}; ` +
    `this one is on ${ours}, and two deployments on one Redis would take each other's jobs: give this one a queue prefix of its own`
  );
}
