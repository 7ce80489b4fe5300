import { Inject, Logger } from '@nestjs/common';
import type { ResolvedOptions } from '../../src/config/options';
import { PW_OPTIONS } from '../../src/config/tokens';
import { Test } from '@nestjs/testing';
import { ModuleProcessor, ModuleWorker } from '../../src/jobs/module-worker';
import { JobName, QueueName } from '../../src/jobs/queues';
import { createLogger } from '../../src/observability/logger';
import { PaymentWebhooksModule } from '../../src/payment-webhooks.module';
import { InboxProcessor } from '../../src/webhooks/inbox.processor';
import { TEST_ENDPOINTS } from '../support/app';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';

/** A processor of the inbox queue that handles no job: the start must refuse it, naming the job. */
@ModuleProcessor(QueueName.Inbox)
class ForgetfulInboxProcessor extends ModuleWorker {
  protected readonly logger = new Logger('ForgetfulInboxProcessor');
  protected readonly handlers = {};
  constructor(@Inject(PW_OPTIONS) options: ResolvedOptions) {
    super(options, null);
  }
}

/** One that takes the outbox's job on the inbox queue. */
@ModuleProcessor(QueueName.Inbox)
class MisplacedInboxProcessor extends ModuleWorker {
  protected readonly logger = new Logger('MisplacedInboxProcessor');
  protected readonly handlers = {
    [JobName.ProcessDelivery]: async () => undefined,
    [JobName.DispatchOutboxMessage]: async () => undefined,
  };
  constructor(@Inject(PW_OPTIONS) options: ResolvedOptions) {
    super(options, null);
  }
}

const options = {
  databaseUrl: TEST_DATABASE_URL,
  redisUrl: TEST_REDIS_URL,
  queuePrefix: 'pwtest-registry',
  endpoints: TEST_ENDPOINTS,
  carriers: [{ name: 'default', url: 'http://127.0.0.1:9' }],
  adminToken: 'test-admin-token',
  logger: createLogger({ level: 'silent' }),
  migrationsRun: false,
  runWorkers: false,
};

/**
 * The job registry's start-up check (src/jobs/job-registry.service.ts), on the real module: a job
 * name that no processor handles on its queue stops the start, naming the job, before any job could
 * be enqueued to wait for ever.
 */
describe('the start refuses a job without a processor', () => {
  async function start(processor?: new (...args: never[]) => ModuleWorker): Promise<Error | null> {
    const builder = Test.createTestingModule({ imports: [PaymentWebhooksModule.forRoot(options)] });
    if (processor) builder.overrideProvider(InboxProcessor).useClass(processor);
    const moduleRef = await builder.compile();
    moduleRef.useLogger(false);
    try {
      await moduleRef.init();
      return null;
    } catch (err) {
      return err as Error;
    } finally {
      await moduleRef.close().catch(() => undefined);
    }
  }

  it('a job of the table handled nowhere: the start fails naming it', async () => {
    const err = await start(ForgetfulInboxProcessor);
    expect(err?.message).toBe('payment-webhooks: job "process-delivery" (queue "inbox") has no processor');
  });

  it('a job handled on another queue than its own: the start fails naming it', async () => {
    const err = await start(MisplacedInboxProcessor);
    expect(err?.message).toBe('payment-webhooks: job "dispatch" is handled on queue "inbox", not its own');
  });

  it('the module as shipped starts (every job has its processor)', async () => {
    expect(await start()).toBeNull();
  });
});
