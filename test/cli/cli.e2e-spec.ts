import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { createEmptyDatabase, TEST_REDIS_URL, TEST_SCHEMA } from '../support/env';
import { emptyDir, ServiceProcess } from '../support/process';

/** The built command, as `npx payment-webhooks` runs it (CONTRACT §8). */
const CLI = join(__dirname, '..', '..', 'dist', 'src', 'cli', 'main.js');
const MIGRATIONS = [
  'CreateWebhookInbox1764460800000',
  'CreatePaymentDomain1764547200000',
  'OperatorSurface1764633600000',
  'OutboxCallStarted1764720000000',
  'GenericOutbox1764806400000',
  'InboxSourceAndApiVersion1764892800000',
  'Backfill1764979300000',
  'AccountBoundary1765065600000',
  'PaymentRefunds1765152000000',
  'TraceContext1765238400000',
  'InboxWriteIndexes1765324800000',
  'PaymentCaptures1765411200000',
  'OrderHistory1765497600000',
  'Refunds1765584000000',
  'Polling1765670400000',
  'EndpointHealth1765756800000',
];

function run(args: string[], env: Record<string, string>) {
  const result = spawnSync(process.execPath, [CLI, ...args], {
    // A folder with no .env, and exactly this environment.
    cwd: emptyDir(),
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

async function tables(url: string): Promise<Array<{ schema: string; name: string }>> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT schemaname AS schema, tablename AS name FROM pg_tables
        WHERE schemaname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2`,
    );
    return rows;
  } finally {
    await client.end();
  }
}

describe('payment-webhooks status / migrate need a database named (CONTRACT §8 v3)', () => {
  it.each([
    ['status', []],
    ['migrate', []],
    ['reconcile', ['--provider', 'paymos', '--account', 'acc_1']],
  ])('%s without DATABASE_URL nor --database-url: exit 2, one line saying so, nothing on stdout', (command, args) => {
    const out = run([command, ...(args as string[])], {});
    expect(out.code).toBe(2);
    expect(out.stdout).toBe('');
    expect(out.stderr).toBe(
      `payment-webhooks: ${command}: DATABASE_URL is not set (nor --database-url <url>): name the database to ${command === 'migrate' ? 'migrate' : 'check'}; a default one would pass for the wrong reason\n`,
    );
  });

  it('--database-url names it instead (and wins over DATABASE_URL); without a value it is refused', async () => {
    const url = await createEmptyDatabase('cli-url');
    const out = run(['status', '--database-url', url], { DATABASE_URL: 'postgres://nobody@127.0.0.1:9/none' });
    expect(out.code).toBe(1);
    expect(out.stdout).toContain(`${MIGRATIONS.length} pending migration(s) in schema ${TEST_SCHEMA} of 127.0.0.1:5432/`);
    expect(run(['migrate', `--database-url=${url}`], {}).code).toBe(0);
    expect(run(['status', `--database-url=${url}`], {}).code).toBe(0);
    // A local .env still fills the rest of the environment (here the schema) beside --database-url.
    const dir = emptyDir();
    writeFileSync(join(dir, '.env'), 'DATABASE_SCHEMA=shop_payments_env\n');
    const withEnv = spawnSync(process.execPath, [CLI, 'status', '--database-url', url], { cwd: dir, env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8', timeout: 30_000 });
    expect(withEnv.status).toBe(1);
    expect(withEnv.stdout).toContain(`${MIGRATIONS.length} pending migration(s) in schema shop_payments_env of 127.0.0.1:5432/`);
    const missing = run(['status', '--database-url'], {});
    expect([missing.code, missing.stderr]).toEqual([2, 'payment-webhooks: status: --database-url needs a value\n']);
  });
});

describe('payment-webhooks status / migrate on a fresh database (CONTRACT §8)', () => {
  let url: string;
  beforeAll(async () => {
    url = await createEmptyDatabase('cli');
  });

  it('status on a database never migrated: every migration pending, exit 1', () => {
    const out = run(['status'], { DATABASE_URL: url });
    expect(out.code).toBe(1);
    expect(out.stdout.trim().split('\n').slice(0, MIGRATIONS.length)).toEqual(MIGRATIONS.map((m) => `pending  ${m}`));
    expect(out.stdout).toContain(`${MIGRATIONS.length} pending migration(s) in schema ${TEST_SCHEMA}`);
    expect(out.stdout).not.toContain('postgres@');
  });

  it('migrate applies them all in the module schema, exit 0; then status exits 0 and migrate has nothing to do', async () => {
    const migrate = run(['migrate'], { DATABASE_URL: url });
    expect({ code: migrate.code, stderr: migrate.stderr }).toEqual({ code: 0, stderr: '' });
    expect(migrate.stdout.trim().split('\n').slice(0, MIGRATIONS.length)).toEqual(MIGRATIONS.map((m) => `applied  ${m}`));

    const status = run(['status'], { DATABASE_URL: url });
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`schema ${TEST_SCHEMA} of`);
    expect(status.stdout).toContain('is up to date');

    const again = run(['migrate'], { DATABASE_URL: url });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('nothing to apply');

    // Everything, the migrations table included, is in the module's schema; nothing in public.
    const all = await tables(url);
    expect(all.filter((t) => t.schema !== TEST_SCHEMA)).toEqual([]);
    expect(all.map((t) => t.name).sort()).toEqual(
      ['backfills', 'endpoint_counts', 'endpoint_health', 'fulfillments', 'idempotency_keys', 'order_history', 'orders', 'outbox_message', 'payment_captures', 'payment_polls', 'payments', 'pw_migrations', 'refunds', 'webhook_inbox'].sort(),
    );
  });

  it('DATABASE_SCHEMA puts the same tables in another schema, created when missing', async () => {
    const out = run(['migrate'], { DATABASE_URL: url, DATABASE_SCHEMA: 'shop_payments' });
    expect(out.code).toBe(0);
    const all = await tables(url);
    expect(all.filter((t) => t.schema === 'shop_payments').length).toBe(14);
    expect(run(['status'], { DATABASE_URL: url, DATABASE_SCHEMA: 'shop_payments' }).code).toBe(0);
  });
});

describe('payment-webhooks: could not run is exit 2, with one line saying why', () => {
  it.each([
    ['no command', [], {}, /^$/],
    ['an unknown command', ['frobnicate'], {}, /^payment-webhooks: unknown command "frobnicate"/],
    ['an unknown option', ['status', '--force'], {}, /^payment-webhooks: status: Unknown option '--force'/],
    ['a DATABASE_SCHEMA that is not a plain identifier', ['status'], { DATABASE_SCHEMA: 'Pay-Ments' }, /^payment-webhooks: configuration error: DATABASE_SCHEMA: must be a plain identifier/],
    ['a database that does not answer', ['status'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:9/nowhere' }, /^payment-webhooks: cannot reach the database 127\.0\.0\.1:9\/nowhere: /],
  ])('%s', (_name, args, env, stderr) => {
    const out = run(args as string[], env as Record<string, string>);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(stderr as RegExp);
    expect(out.stderr).not.toContain('postgres@');
  });

  it('--help prints the commands, exit 0', () => {
    const out = run(['--help'], {});
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^usage: payment-webhooks <command>/);
    for (const command of ['migrate', 'status', 'reconcile', 'backfill']) expect(out.stdout).toContain(`  ${command}`);
  });
});

describe('a migration that fails leaves nothing half applied and is named (not "unable to connect")', () => {
  let url: string;
  beforeAll(async () => {
    url = await createEmptyDatabase('badmig');
    // Something in the way of the second migration's last table: it must fail, and roll back whole.
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA ${TEST_SCHEMA}`);
      await client.query(`CREATE TABLE ${TEST_SCHEMA}.idempotency_keys (x int)`);
    } finally {
      await client.end();
    }
  });

  it('the command: exit 1, the migration named; the first migration stays applied, the second left no table', async () => {
    const out = run(['migrate'], { DATABASE_URL: url });
    expect(out.code).toBe(1);
    expect(out.stderr).toMatch(/^payment-webhooks: migration CreatePaymentDomain1764547200000 failed and was rolled back: /);
    const names = (await tables(url)).map((t) => t.name).sort();
    // webhook_inbox and pw_migrations from the first; none of orders/payments/fulfillments/outbox_message.
    expect(names).toEqual(['idempotency_keys', 'pw_migrations', 'webhook_inbox']);
    const status = run(['status'], { DATABASE_URL: url });
    expect(status.code).toBe(1);
    expect(status.stdout).toContain(`applied  ${MIGRATIONS[0]}`);
    expect(status.stdout).toContain(`pending  ${MIGRATIONS[1]}`);
  });

  it('the service at start: exits 1 once, with that migration named (no "unable to connect" retry loop)', async () => {
    const started = Date.now();
    const service = new ServiceProcess({ DATABASE_URL: url, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: `pwtest-badmig-${process.pid}` });
    const exited = await service.exited();
    expect(exited.code).toBe(1);
    expect(exited.stderr).toMatch(/^Start failed: migration CreatePaymentDomain1764547200000 failed and was rolled back: /m);
    expect(exited.stdout + exited.stderr).not.toMatch(/Unable to connect to the database/);
    // TypeORM's module retries a connection error 3 times, a second apart; this was not retried.
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});
