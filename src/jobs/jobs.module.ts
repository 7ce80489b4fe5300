import { BullModule } from '@nestjs/bullmq';
import { Global, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { BULL_CONFIG_KEY } from '../config/tokens';
import { JobProducer } from './job-producer';
import { JobRegistry } from './job-registry.service';
import { QueueName } from './queues';

const QUEUES = Object.values(QueueName).map((name) => BullModule.registerQueue({ name, configKey: BULL_CONFIG_KEY }));

/**
 * The module's queues, registered once, with the one producer of their jobs and the start-up check
 * that every job has a processor. Global within the module: contexts enqueue through JobProducer.
 */
@Global()
@Module({
  imports: [DiscoveryModule, ...QUEUES],
  providers: [JobProducer, JobRegistry],
  exports: [JobProducer, ...QUEUES],
})
export class JobsModule {}
