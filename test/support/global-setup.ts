import 'reflect-metadata';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { dataSourceOptions, runMigrationsLocked } from '../../src/database/data-source';

const BASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/payments_test';

/**
 * Once per run: a database of the run's own (`<base>_<pid>`), every migration applied, as a fresh
 * deployment would get it. Two runs at once (two developers, CI beside a developer) never see each
 * other's rows. It is the template: each test file gets a copy of its own (`<base>_<pid>_<random>`,
 * see env.ts), whose URL reaches the suite through TEST_DATABASE_URL.
 */
export default async function globalSetup(): Promise<void> {
  const base = new URL(BASE_URL);
  const name = `${base.pathname.slice(1)}_${process.pid}`;
  const admin = new Client({ connectionString: withDatabase(base, 'postgres') });
  await admin.connect();
  try {
    await dropAbandoned(admin, base.pathname.slice(1));
    await admin.query(`DROP DATABASE IF EXISTS "${name}"`);
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = withDatabase(base, name);
  process.env.TEST_DATABASE_URL = url;
  process.env.PW_TEST_TEMPLATE_NAME = name;
  process.env.PW_TEST_ADMIN_URL = withDatabase(base, 'postgres');

  const dataSource = await new DataSource(dataSourceOptions(url)).initialize();
  try {
    await runMigrationsLocked(dataSource);
  } finally {
    await dataSource.destroy();
  }
}

function withDatabase(url: URL, name: string): string {
  const copy = new URL(url);
  copy.pathname = `/${name}`;
  return copy.toString();
}

/** Databases left by runs that died before their teardown (their process is gone). */
async function dropAbandoned(admin: Client, prefix: string): Promise<void> {
  const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [
    `${prefix}\\_%`,
  ]);
  for (const { datname } of rows) {
    // `<prefix>_<pid>` (a run's template) or `<prefix>_<pid>_<random>` (one of its suites' copies).
    const pid = Number(datname.slice(prefix.length + 1).split('_')[0]);
    if (!Number.isInteger(pid) || pid <= 0 || isAlive(pid)) continue;
    await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`).catch(() => undefined);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
