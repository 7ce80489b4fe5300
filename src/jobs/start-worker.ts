import type { Logger } from '@nestjs/common';
import type { Worker } from 'bullmq';
import type { ResolvedOptions } from '../config/options';
import { retryAfterBackoff } from './job-registry';

/**
 * Starts a processor's worker where this process runs workers (`runWorkers`); an HTTP-only
 * process leaves it idle. Workers are declared with `autorun: false` so the options, known only at
 * start, apply: concurrency, and how soon a job of a worker that died is taken back.
 *
 * A job's lock lasts `jobLockMs` and is renewed every quarter of it while the worker lives, however
 * long the job takes (a live worker's lock never has less than three quarters left, so an event
 * loop held up for seconds does not pass its job to another worker). Every `stalledIntervalMs`
 * one of the workers looks for jobs whose lock lapsed: a dead worker's job is back in the queue
 * within `jobLockMs + stalledIntervalMs` of its death (BullMQ moves it on the first check that
 * finds it unlocked, having seen it active at the check before). A job found stalled is retried
 * once (BullMQ's `maxStalledCount`, 1); one that stalls again is failed and its row, still due,
 * is enqueued again by the sweeper or the outbox relay.
 */
export function startWorker(worker: Worker, options: ResolvedOptions, logger: Logger, what: string): void {
  if (!options.runWorkers) return;
  const { workerConcurrency, jobLockMs, stalledIntervalMs } = options.tuning;
  Object.assign(worker.opts, {
    lockDuration: jobLockMs,
    lockRenewTime: Math.max(1, Math.floor(jobLockMs / 4)),
    stalledInterval: stalledIntervalMs,
    maxStalledCount: 1,
    // The backoff of the module's own type (RETRY_AFTER_BACKOFF), read when a job fails.
    settings: { ...worker.opts.settings, backoffStrategy: retryAfterBackoff },
  });
  // BullMQ's lock manager copies lockDuration and lockRenewTime when the worker is constructed
  // (with BullMQ's 30 s defaults, as the decorator passes none): made again, it renews with ours.
  // It starts only with run(), so nothing of the old one ever ran.
  // A private method of BullMQ 6: where a release lacks it, the worker runs with BullMQ's own lock
  // timing (a slower takeover after a crash, never a double effect) and says so once.
  const internals = worker as unknown as { createLockManager?: () => void };
  if (typeof internals.createLockManager === 'function') internals.createLockManager();
  else logger.warn(`${what} worker: this BullMQ release keeps its own lock timing (jobLockMs applies to new locks only)`);
  worker.concurrency = workerConcurrency;
  worker.run().catch((err: Error) => logger.error(`${what} worker stopped: ${err.message}`));
}
