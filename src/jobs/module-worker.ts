import { Processor, WorkerHost } from '@nestjs/bullmq';
import { applyDecorators, Logger, OnApplicationBootstrap, SetMetadata } from '@nestjs/common';
import { Job, UnrecoverableError } from 'bullmq';
import type { ResolvedOptions } from '../config/options';
import { BULL_CONFIG_KEY } from '../config/tokens';
import type { ReceivePressure } from './receive-pressure';
import { JobName, QueueName } from './queues';
import { startWorker } from './start-worker';

/** Where the queue a module worker consumes is recorded, for the start-up check. */
export const MODULE_WORKER_QUEUE = 'payment-webhooks:worker-queue';

/**
 * A processor of one of the module's queues: BullMQ's `@Processor` on the module's config key,
 * not started until the options say so (see startWorker), and the queue recorded for the job
 * registry's start-up check.
 */
export function ModuleProcessor(queue: QueueName): ClassDecorator {
  return applyDecorators(SetMetadata(MODULE_WORKER_QUEUE, queue), Processor({ name: queue, configKey: BULL_CONFIG_KEY }, { autorun: false }));
}

/**
 * What every processor of the module shares: started where `runWorkers` is on, one handler per job
 * name it declares (a job of another name fails at once, without retries: a start-up check makes
 * that a bug, never a state), and, for the work that competes with the receive path, a slot of the
 * process's ReceivePressure around each job.
 */
export abstract class ModuleWorker extends WorkerHost implements OnApplicationBootstrap {
  protected abstract readonly logger: Logger;
  /** The job names this worker runs, each with its handler. */
  protected abstract readonly handlers: { readonly [N in JobName]?: (job: Job, token?: string) => Promise<unknown> };

  constructor(
    protected readonly options: ResolvedOptions,
    /** Given: each job waits for a slot while deliveries are being received (ingest before drain). */
    private readonly pressure: ReceivePressure | null,
  ) {
    super();
  }

  /** The job names this worker runs (what the start-up check reads). */
  get jobNames(): JobName[] {
    return Object.keys(this.handlers) as JobName[];
  }

  onApplicationBootstrap(): void {
    if (!this.options.runWorkers) return;
    const queue: string | undefined = Reflect.getMetadata(MODULE_WORKER_QUEUE, this.constructor);
    startWorker(this.worker, this.options, this.logger, queue ?? 'worker');
    this.started();
  }

  /** More to do once the worker runs (a schedule, a sweep); nothing by default. */
  protected started(): void {}

  async process(job: Job, token?: string): Promise<unknown> {
    const handler = this.handlers[job.name as JobName];
    if (!handler) throw new UnrecoverableError(`no handler for job "${job.name}" on this queue`);
    const release = this.pressure ? await this.pressure.slot() : null;
    try {
      return await handler(job, token);
    } finally {
      release?.();
    }
  }
}
