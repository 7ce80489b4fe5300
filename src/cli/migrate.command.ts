import { MigrationFailedError, pendingMigrations, runMigrationsLocked } from '../database/data-source';
import { CliCommand, describeDatabase, EXIT } from './context';
import { parseCommandArgs } from './args';

/** `payment-webhooks migrate`: applies pending migrations (each in its own transaction). */
export const migrateCommand: CliCommand = {
  summary: 'apply pending migrations to DATABASE_URL (or --database-url), schema DATABASE_SCHEMA',
  usage: 'usage: payment-webhooks migrate [--database-url <url>]   (DATABASE_URL or --database-url is required)',
  needsDatabaseUrl: true,
  async run(ctx) {
    parseCommandArgs('migrate', this.usage, ctx.args, {});
    const dataSource = await ctx.connect();
    const { databaseUrl, schema } = ctx.config.options;
    try {
      const applied = await runMigrationsLocked(dataSource);
      for (const name of applied) ctx.out(`applied  ${name}`);
      ctx.out(
        applied.length === 0
          ? `nothing to apply: schema ${schema} of ${describeDatabase(databaseUrl)} is up to date`
          : `${applied.length} migration(s) applied to schema ${schema} of ${describeDatabase(databaseUrl)}`,
      );
      return EXIT.ok;
    } catch (err) {
      if (err instanceof MigrationFailedError) {
        process.stderr.write(`payment-webhooks: ${err.message}\n`);
        return EXIT.failure;
      }
      throw err;
    }
  },
};

/** `payment-webhooks status`: lists migrations; exit 1 while any is pending (a deployment gate). */
export const statusCommand: CliCommand = {
  summary: 'list applied and pending migrations; exit 1 while any is pending',
  usage: 'usage: payment-webhooks status [--database-url <url>]   (DATABASE_URL or --database-url is required)',
  needsDatabaseUrl: true,
  async run(ctx) {
    parseCommandArgs('status', this.usage, ctx.args, {});
    const dataSource = await ctx.connect();
    const { databaseUrl, schema } = ctx.config.options;
    const pending = new Set(await pendingMigrations(dataSource));
    for (const migration of dataSource.migrations) {
      const name = migration.name ?? migration.constructor.name;
      ctx.out(`${pending.has(name) ? 'pending' : 'applied'}  ${name}`);
    }
    ctx.out(
      pending.size === 0
        ? `schema ${schema} of ${describeDatabase(databaseUrl)} is up to date`
        : `${pending.size} pending migration(s) in schema ${schema} of ${describeDatabase(databaseUrl)}: run payment-webhooks migrate`,
    );
    return pending.size === 0 ? EXIT.ok : EXIT.failure;
  },
};
