import type { Logger } from '@nestjs/common';
import type { Worker } from 'bullmq';
import type { ResolvedOptions } from '../config/options';

/**
 * Starts a processor's worker where this process runs workers (`runWorkers`); an HTTP-only
 * process leaves it idle. Workers are declared with `autorun: false` so the options, known only at
 * start, apply: concurrency, and how soon a job of a worker that died is taken back (its lock is
 * renewed while the worker lives, however long the job takes).
 */
export function startWorker(worker: Worker, options: ResolvedOptions, logger: Logger, what: string): void {
  if (!options.runWorkers) return;
  const { workerConcurrency, jobLockMs, stalledIntervalMs } = options.tuning;
  Object.assign(worker.opts, { lockDuration: jobLockMs, stalledInterval: stalledIntervalMs });
  worker.concurrency = workerConcurrency;
  worker.run().catch((err: Error) => logger.error(`${what} worker stopped: ${err.message}`));
}
