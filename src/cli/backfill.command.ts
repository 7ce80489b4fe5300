import { Queue } from 'bullmq';
import { DomainError, ValidationFailed } from '../common/domain-error';
import { DEFAULT_TUNING } from '../config/options';
import { jobOf, JOBS } from '../jobs/job-registry';
import { JobName } from '../jobs/queues';
import { moduleRedisConnection, releaseRedisConnection } from '../common/redis-connection';
import { withTimeout } from '../common/with-timeout';
import { createBackfill, findBackfill } from '../operations/backfill/backfill.store';
import { parseCommandArgs } from './args';
import { CliCommand, CliExit, EXIT } from './context';

const USAGE =
  'usage: payment-webhooks backfill --endpoint <id> --since <instant> [--until <instant>] [--account <acct_…>]…\n' +
  "  Records the events of [since, until) from Stripe's Events API as if they had been delivered (POST /admin/backfill),\n" +
  '  on a stripe endpoint with an apiKey; --account (repeatable) picks connected accounts of a merchantAccountIds endpoint.\n' +
  "  The service's workers run it (a process with RUN_WORKERS=true must be up); this command starts it, waits, and prints\n" +
  '  the counts (refused: events the webhook route would refuse with a 400, skipped).\n' +
  '  Exit 0 done, 1 failed, 2 could not run.';

const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;
const POLL_MS = 500;

/**
 * `payment-webhooks backfill`: the same request as `POST /admin/backfill`, validated
 * and recorded the same way, then enqueued for the service's workers, which hold the walk (so a
 * worker's crash is recovered as any backfill's is); the command polls the row to its end.
 */
export const backfillCommand: CliCommand = {
  summary: "record a window of Stripe's events as if delivered, and print the counts",
  usage: USAGE,
  needsDatabaseUrl: true,
  async run(ctx) {
    const values = parseCommandArgs('backfill', USAGE, ctx.args, {
      endpoint: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      account: { type: 'string', multiple: true },
    });
    if (!values.endpoint || !values.since) throw new CliExit(EXIT.couldNotRun, `backfill: --endpoint and --since are required\n${USAGE}`);
    for (const [name, value] of [['--since', values.since], ['--until', values.until]] as const) {
      if (value !== undefined && (!INSTANT.test(value) || Number.isNaN(Date.parse(value)))) {
        throw new CliExit(EXIT.couldNotRun, `backfill: ${name} must be an ISO 8601 instant with a time zone, e.g. 2026-11-29T10:00:00Z`);
      }
    }
    const { options } = ctx.config;
    const dataSource = await ctx.connect();

    const connection = moduleRedisConnection(options, { maxRetriesPerRequest: 1 });
    // The command runs outside the module: a queue of its own, of the job's queue in the registry.
    const queue = new Queue(JOBS[JobName.RunBackfill].queue, { prefix: options.queuePrefix, connection });
    queue.on('error', () => undefined); // reported below, once
    try {
      // Before anything is recorded: a backfill no worker will run would only block the endpoint.
      let workers: number;
      try {
        workers = await withTimeout(queue.getWorkersCount(), 5_000, 'Redis');
      } catch (err) {
        throw new CliExit(EXIT.couldNotRun, `backfill: cannot reach Redis: ${(err as Error).message}`);
      }
      if (workers === 0) {
        throw new CliExit(EXIT.couldNotRun, 'backfill: no worker runs backfills on this queue prefix (start the service with RUN_WORKERS=true)');
      }

      let id: string;
      try {
        id = await createBackfill(
          dataSource,
          options.endpoints,
          { endpointId: values.endpoint, since: values.since, until: values.until, accounts: values.account },
          Date.now(),
        );
      } catch (err) {
        if (err instanceof ValidationFailed) throw new CliExit(EXIT.couldNotRun, `backfill: ${err.message}`);
        if (err instanceof DomainError) throw new CliExit(EXIT.couldNotRun, `backfill: ${err.detail ?? err.message}`);
        throw err;
      }
      const job = jobOf(JobName.RunBackfill, { backfillId: id }, { ...DEFAULT_TUNING, ...options.tuning });
      // Should this fail, the row is running and the workers' sweep enqueues it: keep waiting.
      await queue.add(job.name, job.data, job.opts).catch(() => undefined);
      ctx.out(`backfill ${id} of ${values.endpoint} running`);

      for (;;) {
        const view = await findBackfill(dataSource, id);
        if (view.status !== 'running') {
          ctx.out(
            `backfill ${id}: ${view.status} — listed ${view.listed}, accepted ${view.accepted}, duplicates ${view.duplicates}, refused ${view.refused}`,
          );
          if (view.error) ctx.out(`error: ${view.error}`);
          return view.status === 'done' ? EXIT.ok : EXIT.failure;
        }
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
    } finally {
      await queue.close().catch(() => undefined);
      releaseRedisConnection(connection);
    }
  },
};
