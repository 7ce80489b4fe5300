import type { Worker } from 'bullmq';
import { Logger } from '@nestjs/common';
import { DEFAULT_TUNING, ResolvedOptions } from '../config/options';
import { retryAfterBackoff } from './job-registry';
import { startWorker } from './start-worker';

describe('startWorker', () => {
  it("gives the worker the module's backoff strategy (what BullMQ reads, from the worker's settings, when a job of RETRY_AFTER_BACKOFF fails)", () => {
    const run = jest.fn(() => new Promise<void>(() => undefined));
    const worker = { opts: { settings: { repeatStrategy: undefined } }, run, concurrency: 1 } as unknown as Worker;
    startWorker(worker, { runWorkers: true, tuning: DEFAULT_TUNING } as unknown as ResolvedOptions, new Logger('spec'), 'spec');
    expect(worker.opts.settings?.backoffStrategy).toBe(retryAfterBackoff);
    expect(Object.keys(worker.opts.settings ?? {}).sort()).toEqual(['backoffStrategy', 'repeatStrategy']);
    expect(run).toHaveBeenCalledTimes(1);
  });

  it('leaves an idle worker (runWorkers off) untouched', () => {
    const worker = { opts: {}, run: jest.fn() } as unknown as Worker;
    startWorker(worker, { runWorkers: false, tuning: DEFAULT_TUNING } as unknown as ResolvedOptions, new Logger('spec'), 'spec');
    expect(worker.opts).toEqual({});
  });
});
