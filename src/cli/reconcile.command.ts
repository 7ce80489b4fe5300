import { readFileSync } from 'node:fs';
import { PROVIDER_NAMES } from '../config/options';
import { PROVIDER_NAME } from '../providers';
import { reconcile } from '../operations/reconciliation.service';
import { parseCommandArgs } from './args';
import { CliCommand, CliExit, describeDatabase, EXIT } from './context';

const USAGE =
  `usage: payment-webhooks reconcile --provider ${PROVIDER_NAMES.join('|')}|<a host's provider> --account <merchant account> ` +
  '[--paid <file of paid payment ids>] [--events <file of event ids>]\n' +
  '  Files hold one id per line (blank lines and lines starting with # are skipped), as exported from the\n' +
  "  provider's dashboard. Prints the report as JSON; exit 0 when there is nothing to report, 1 when there is\n" +
  '  (2: it could not run). The database and schema it read go to stderr.';

/**
 * `payment-webhooks reconcile`: the same check as `POST /admin/reconciliation`,
 * nightly from cron: exit 0 when nothing is reported, 1 when something is, 2 when it could not run.
 */
export const reconcileCommand: CliCommand = {
  summary: 'compare the inbox with what the provider says it sent and was paid',
  usage: USAGE,
  needsDatabaseUrl: true,
  async run(ctx) {
    const values = parseCommandArgs('reconcile', USAGE, ctx.args, {
      provider: { type: 'string' },
      account: { type: 'string' },
      paid: { type: 'string' },
      events: { type: 'string' },
    });
    // Any provider name: one of the host's own (`providers` option) is recorded under its name too.
    if (!values.provider || !PROVIDER_NAME.test(values.provider) || !values.account) {
      throw new CliExit(EXIT.couldNotRun, `reconcile: --provider (${PROVIDER_NAMES.join(', ')}, or a host's provider) and --account are required\n${USAGE}`);
    }
    const paidResourceIds = readIds('--paid', values.paid);
    const eventIds = readIds('--events', values.events);
    const dataSource = await ctx.connect();
    const { databaseUrl, schema } = ctx.config.options;
    process.stderr.write(`reconcile: schema ${schema} of ${describeDatabase(databaseUrl)}\n`);
    const report = await reconcile(
      dataSource,
      { provider: values.provider, merchantAccountId: values.account, paidResourceIds, eventIds },
      ctx.config.options.endpoints,
    );
    ctx.out(JSON.stringify(report, null, 2));
    const { backfill: _recovery, ...lists } = report;
    return Object.values(lists).some((list) => list.length > 0) ? EXIT.failure : EXIT.ok;
  },
};

function readIds(option: string, path: string | undefined): string[] | undefined {
  if (path === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CliExit(EXIT.couldNotRun, `reconcile: cannot read ${option} ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line.length > 0 && !line.startsWith('#'));
}
