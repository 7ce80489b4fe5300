/**
 * Nightly reconciliation from the command line (the same check as POST /admin/reconciliation):
 *
 *   npm run reconcile -- --provider stripe --account acct_1 --paid paid-ids.txt [--events event-ids.txt]
 *
 * The files hold one id per line (blank lines and lines starting with # are skipped). Prints the
 * report as JSON. Exit code: 0 nothing to report, 2 something to look at, 1 the check could not run.
 * Reads DATABASE_URL (default as in .env.example).
 */
import 'reflect-metadata';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { DataSource } from 'typeorm';
import { DEFAULT_DATABASE_URL } from '../src/config/env';
import { PROVIDER_NAMES } from '../src/config/options';
import { dataSourceOptions } from '../src/database/data-source';
import { reconcile } from '../src/operations/reconciliation.service';

function ids(path: string | undefined): string[] | undefined {
  if (path === undefined) return undefined;
  return readFileSync(path, 'utf8')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line.length > 0 && !line.startsWith('#'));
}

const USAGE = `usage: reconcile --provider ${PROVIDER_NAMES.join('|')} --account <merchant account> [--paid file] [--events file]\n`;

async function main(): Promise<number> {
  let values: { provider?: string; account?: string; paid?: string; events?: string };
  try {
    ({ values } = parseArgs({
      options: {
        provider: { type: 'string' },
        account: { type: 'string' },
        paid: { type: 'string' },
        events: { type: 'string' },
      },
    }));
  } catch (err) {
    process.stderr.write(`reconcile: ${(err as Error).message}\n${USAGE}`);
    return 1;
  }
  if (!values.provider || !(PROVIDER_NAMES as readonly string[]).includes(values.provider) || !values.account) {
    process.stderr.write(USAGE);
    return 1;
  }
  const dataSource = await new DataSource(dataSourceOptions(process.env.DATABASE_URL || DEFAULT_DATABASE_URL)).initialize();
  try {
    const report = await reconcile(dataSource, {
      provider: values.provider,
      merchantAccountId: values.account,
      paidResourceIds: ids(values.paid),
      eventIds: ids(values.events),
    });
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return Object.values(report).some((list) => list.length > 0) ? 2 : 0;
  } finally {
    await dataSource.destroy();
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`reconcile failed: ${err.message}\n`);
    process.exit(1);
  },
);
