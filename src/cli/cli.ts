import { existsSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { loadStandaloneConfig, StandaloneConfig } from '../config/env';
import { ConfigurationError } from '../config/validate';
import { dataSourceOptions } from '../database/data-source';
import { backfillCommand } from './backfill.command';
import { migrateCommand, statusCommand } from './migrate.command';
import { reconcileCommand } from './reconcile.command';
import { simulateCommand } from './simulate.command';
import { conformanceCommand } from './conformance.command';
import { paypalTestCaCommand } from './paypal-test-ca.command';
import { CliCommand, CliContext, CliExit, describeDatabase, EXIT } from './context';

export { CliExit, EXIT } from './context';

export const COMMANDS: Record<string, CliCommand> = {
  migrate: migrateCommand,
  status: statusCommand,
  reconcile: reconcileCommand,
  backfill: backfillCommand,
  simulate: simulateCommand,
  conformance: conformanceCommand,
  'paypal-test-ca': paypalTestCaCommand,
};

export function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((n) => n.length));
  return [
    'usage: payment-webhooks <command> [options]',
    '',
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`),
    '',
    'Reads the service environment (DATABASE_URL, DATABASE_SCHEMA, …; a local .env fills the rest);',
    'conformance and simulate read only ADMIN_TOKEN, when --admin-token is absent.',
    'Exit code: 0 success, 1 failure, 2 could not run.',
  ].join('\n');
}

/**
 * `--database-url <url>` (or `--database-url=<url>`) taken out of a command's arguments and made its
 * DATABASE_URL, which it then overrides.
 */
function withDatabaseUrl(name: string, args: string[], env: NodeJS.ProcessEnv): { args: string[]; env: NodeJS.ProcessEnv } {
  // A local .env fills the rest (DATABASE_SCHEMA…) of the environment the copy below is made of.
  if (env === process.env && existsSync('.env')) process.loadEnvFile('.env');
  const rest: string[] = [];
  let url: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--database-url') {
      url = args[++i];
      if (url === undefined || url.startsWith('--')) throw new CliExit(EXIT.couldNotRun, `${name}: --database-url needs a value`);
    } else if (arg.startsWith('--database-url=')) url = arg.slice('--database-url='.length);
    else rest.push(arg);
  }
  return { args: rest, env: url === undefined ? env : { ...env, DATABASE_URL: url } };
}

export async function runCli(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const [name, ...rawArgs] = argv;
  let args = rawArgs;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(`${usage()}\n`);
    return name === undefined ? EXIT.couldNotRun : EXIT.ok;
  }
  const command = COMMANDS[name];
  if (!command) throw new CliExit(EXIT.couldNotRun, `unknown command "${name}"\n${usage()}`);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${command.usage}\n`);
    return EXIT.ok;
  }

  if (command.needsDatabaseUrl) ({ args, env } = withDatabaseUrl(name, args, env));

  // Read on first use: the commands that talk to a running service over HTTP (`simulate`,
  // `conformance`) run from anywhere, without the service's environment.
  let config: StandaloneConfig | undefined;
  const loadConfig = (): StandaloneConfig => {
    if (config) return config;
    try {
      if (existsSync('.env')) process.loadEnvFile('.env');
      config = loadStandaloneConfig(env);
    } catch (err) {
      if (err instanceof ConfigurationError) throw new CliExit(EXIT.couldNotRun, `configuration error: ${err.message}`);
      throw err;
    }
    return config;
  };
  if (command.environment !== false) loadConfig();

  const opened: DataSource[] = [];
  const ctx: CliContext = {
    args,
    remoteEnv: {
      get ADMIN_TOKEN() {
        return env.ADMIN_TOKEN;
      },
    },
    get config() {
      return loadConfig();
    },
    out: (line) => process.stdout.write(`${line}\n`),
    connect: async () => {
      // Checked once the arguments are (a usage error is said first).
      if (command.needsDatabaseUrl && !(env.DATABASE_URL ?? '').trim()) {
        throw new CliExit(
          EXIT.couldNotRun,
          `${name}: DATABASE_URL is not set (nor --database-url <url>): name the database to ${name === 'migrate' ? 'migrate' : 'check'}; a default one would pass for the wrong reason`,
        );
      }
      const { databaseUrl, schema } = loadConfig().options;
      const dataSource = new DataSource({ ...dataSourceOptions(databaseUrl, schema), logging: false });
      try {
        await dataSource.initialize();
      } catch (err) {
        throw new CliExit(EXIT.couldNotRun, `cannot reach the database ${describeDatabase(databaseUrl)}: ${(err as Error).message}`);
      }
      opened.push(dataSource);
      return dataSource;
    },
  };
  try {
    return await command.run(ctx);
  } finally {
    await Promise.allSettled(opened.map((d) => d.destroy()));
  }
}
