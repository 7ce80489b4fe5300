import { Injectable, OnModuleInit } from '@nestjs/common';
import { DiscoveryService, Reflector } from '@nestjs/core';
import { unhandledJobs } from './job-registry';
import { MODULE_WORKER_QUEUE, ModuleWorker } from './module-worker';
import type { JobName, QueueName } from './queues';

/**
 * The start-up check of the job registry (Immich's `setup()`): every job name of the table has a
 * processor on its queue, or the module does not start, naming the job. A job no one runs would
 * wait in Redis forever.
 */
@Injectable()
export class JobRegistry implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly reflector: Reflector,
  ) {}

  onModuleInit(): void {
    const handled = new Map<QueueName, Set<JobName>>();
    for (const wrapper of this.discovery.getProviders()) {
      const instance: unknown = wrapper.instance;
      if (!(instance instanceof ModuleWorker) || !wrapper.metatype) continue;
      const queue = this.reflector.get<QueueName | undefined>(MODULE_WORKER_QUEUE, wrapper.metatype as never);
      if (!queue) continue;
      const names = handled.get(queue) ?? new Set<JobName>();
      for (const name of instance.jobNames) names.add(name);
      handled.set(queue, names);
    }
    const problems = unhandledJobs(handled);
    if (problems.length > 0) throw new Error(`payment-webhooks: ${problems.join('; ')}`);
  }
}
