import type { JobsOptions } from 'bullmq';
import type { TuningOptions } from '../config/options';
import { JobName, QueueName } from './queues';

/** What each job carries: ids only; its processor reloads the state (the database decides). */
export interface JobData {
  /** `trace`: the `traceparent` of what enqueued it again (an operator's reprocess), when traced. */
  /**
   * `attemptsBefore`: attempts the delivery had before this job (its first, made by the process that
   * received it); the job has the rest of the budget, and its backoff goes on from there.
   */
  [JobName.ProcessDelivery]: { inboxId: string; trace?: string; attemptsBefore?: number };
  /** `trace`: the `traceparent` of an operator's retry that enqueued it, when traced. */
  [JobName.DispatchOutboxMessage]: { messageId: string; trace?: string };
  [JobName.PurgeExpired]: Record<string, never>;
  [JobName.RunBackfill]: { backfillId: string };
  [JobName.PollSweep]: Record<string, never>;
  [JobName.PollEndpoint]: { endpointId: string };
  [JobName.CheckEndpointSilence]: Record<string, never>;
}

/** A job of the module: its queue, and the options of one job of it. */
export interface JobDefinition<N extends JobName> {
  queue: QueueName;
  options(data: JobData[N], tuning: TuningOptions): JobsOptions;
}

/** Completed jobs are kept a while: a job id deduplicates only while its job exists. */
const KEEP_FINISHED = { removeOnComplete: { age: 3_600, count: 10_000 }, removeOnFail: { age: 7 * 24 * 3_600 } } as const;

/**
 * A job's backoff that is BullMQ's exponential one (the same delay, doubling, the same jitter) but
 * never shorter than the `retryAfterMs` of the error that failed the attempt: a provider's API that
 * answered `429` with `Retry-After` is not asked again before it said. Every module worker knows it
 * (startWorker).
 */
export const RETRY_AFTER_BACKOFF = 'exponential-retry-after';

/** The delay before attempt `attemptsMade + 1` of a job with RETRY_AFTER_BACKOFF. */
export function retryAfterBackoff(
  attemptsMade: number,
  type: string | undefined,
  err: Error | undefined,
  job: { opts: JobsOptions; data?: unknown } | undefined,
): number {
  const options = job?.opts.backoff;
  const { delay = 1_000, jitter = 0 } = typeof options === 'object' ? options : {};
  // Attempts made before the job (a delivery's first, made where it was received) count too.
  const before = Number((job?.data as { attemptsBefore?: unknown } | undefined)?.attemptsBefore) || 0;
  const max = Math.round(2 ** Math.max(attemptsMade + before - 1, 0) * delay);
  const exponential = jitter > 0 ? Math.floor(Math.random() * max * jitter + max * (1 - jitter)) : max;
  const asked = (err as { retryAfterMs?: unknown } | undefined)?.retryAfterMs;
  if (type !== RETRY_AFTER_BACKOFF) return exponential;
  if (typeof asked !== 'number' || !Number.isFinite(asked) || asked <= exponential) return exponential;
  // Never sooner than asked, and spread over a quarter more so that what was refused together does not return together.
  return Math.ceil(asked * (1 + Math.random() / 4));
}

/** Runs of a backfill's job before the backfill is `failed` (a database or Redis that stays away). */
export const BACKFILL_ATTEMPTS = 8;

/**
 * Every job of the module, in one table: its queue and its options. The start refuses a job name
 * that no processor handles (see JobRegistry), so a job can never be enqueued to wait forever.
 */
export const JOBS: { readonly [N in JobName]: JobDefinition<N> } = {
  /**
   * The job id is the inbox id, so the receive path, the sweeper and a replay can all enqueue
   * without doubling.
   */
  [JobName.ProcessDelivery]: {
    queue: QueueName.Inbox,
    options: ({ inboxId, attemptsBefore = 0 }, tuning) => ({
      jobId: inboxId,
      attempts: Math.max(1, tuning.inboxAttempts - attemptsBefore),
      // Exponential, and never sooner than the provider's `Retry-After` (a thin notification's fetch).
      backoff: { type: RETRY_AFTER_BACKOFF, delay: tuning.inboxBackoffMs, jitter: 0.5 },
      ...KEEP_FINISHED,
    }),
  },
  /**
   * Id = message id. Retries are scheduled by the dispatcher itself from the message's own attempt
   * count (the database decides); BullMQ's attempts only cover a dispatcher that crashed on its own
   * infrastructure (database down), after which the relay's sweeper enqueues the message again.
   */
  [JobName.DispatchOutboxMessage]: {
    queue: QueueName.Outbox,
    options: ({ messageId }) => ({
      jobId: messageId,
      attempts: 5,
      backoff: { type: 'exponential', delay: 1_000, jitter: 0.5 },
      ...KEEP_FINISHED,
    }),
  },
  /** Scheduled daily (one scheduler across every process); the job is its run. */
  [JobName.PurgeExpired]: {
    queue: QueueName.Maintenance,
    options: () => ({}),
  },
  /** Scheduled every `silenceCheckIntervalMs` (one scheduler across every process); the job is one check. */
  [JobName.CheckEndpointSilence]: {
    queue: QueueName.Maintenance,
    options: () => ({ removeOnComplete: true, removeOnFail: { age: 3_600 } }),
  },
  /**
   * Id = backfill id, so the route, the start-up sweep and BullMQ's stalled-job recovery can all
   * enqueue it without doubling. Removed once finished, so a backfill still `running` (its job lost)
   * can be enqueued again; the row decides what is left to do.
   */
  [JobName.RunBackfill]: {
    queue: QueueName.Backfill,
    options: ({ backfillId }, tuning) => ({
      jobId: backfillId,
      attempts: BACKFILL_ATTEMPTS,
      backoff: { type: 'exponential', delay: tuning.inboxBackoffMs, jitter: 0.5 },
      removeOnComplete: true,
      removeOnFail: true,
    }),
  },
  /** Scheduled every `pollSweepMs` (one scheduler across every process): starts each polling endpoint's run. */
  [JobName.PollSweep]: {
    queue: QueueName.Polling,
    options: () => ({ removeOnComplete: true, removeOnFail: { count: 100 } }),
  },
  /**
   * One endpoint's run (docs/operations.md#when-webhooks-stop). The id is the endpoint's, so one run
   * at a time polls it across every process: that is what bounds its calls a second. Removed once
   * finished, so that the next sweep can start the next; a run that failed (the database away) is
   * not retried, the next sweep starts another (the schedule is in the database).
   */
  [JobName.PollEndpoint]: {
    queue: QueueName.Polling,
    options: ({ endpointId }) => ({ jobId: `poll-${endpointId}`, attempts: 1, removeOnComplete: true, removeOnFail: true }),
  },
};

/** One job, ready for `Queue.add`/`addBulk`: its name, data and options from the table. */
export function jobOf<N extends JobName>(name: N, data: JobData[N], tuning: TuningOptions): { name: N; data: JobData[N]; opts: JobsOptions } {
  return { name, data, opts: JOBS[name].options(data, tuning) };
}

/** The job names that go to a queue. */
export function jobsOf(queue: QueueName): JobName[] {
  return (Object.keys(JOBS) as JobName[]).filter((name) => JOBS[name].queue === queue);
}

/**
 * What the start-up check refuses: a job name no processor handles, or one handled on another
 * queue than the table's. `handled` maps each processor's queue to the job names it handles.
 */
export function unhandledJobs(handled: ReadonlyMap<QueueName, ReadonlySet<JobName>>): string[] {
  const problems: string[] = [];
  for (const name of Object.keys(JOBS) as JobName[]) {
    const queue = JOBS[name].queue;
    if (!handled.get(queue)?.has(name)) problems.push(`job "${name}" (queue "${queue}") has no processor`);
  }
  for (const [queue, names] of handled) {
    for (const name of names) if (JOBS[name]?.queue !== queue) problems.push(`job "${name}" is handled on queue "${queue}", not its own`);
  }
  return problems;
}
