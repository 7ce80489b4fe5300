import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

/**
 * Where the suites find PostgreSQL and Redis. Jest loads this module once per test file, and each
 * file that touches data gets a database of its own, copied from the run's migrated template (see
 * global-setup; a copy takes a fraction of a second). Rows one suite leaves behind (a pending outbox
 * entry, a parked delivery) can never be picked up by a later suite's workers, sweepers or service
 * processes. Synchronous, because the suites read the URL when they load.
 */
export const TEST_DATABASE_URL =
  suiteDatabase() ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/payments_test';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/** The module's default schema: the suites run the module as a host would get it. */
export const TEST_SCHEMA = 'payment_webhooks';

/** Options of a raw `pg` client on the suite's database, seeing the module's tables as the module does. */
export function testPgConnection(): { connectionString: string; options: string } {
  return { connectionString: TEST_DATABASE_URL, options: `-c search_path=${TEST_SCHEMA}` };
}

function suiteDatabase(): string | undefined {
  const template = process.env.PW_TEST_TEMPLATE_NAME;
  const adminUrl = process.env.PW_TEST_ADMIN_URL;
  if (!template || !adminUrl) return undefined;
  const name = `${template}_${randomBytes(4).toString('hex')}`;
  const result = spawnSync(process.execPath, [join(__dirname, 'clone-database.js'), adminUrl, template, name], {
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`could not create the suite's database ${name}: ${result.stderr.trim()}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  // Suites that open a client of their own read it from here too.
  process.env.TEST_DATABASE_URL = url.toString();
  return url.toString();
}

/**
 * A new, empty database of the run's own (`<template>_<tag>_<random>`, so the global teardown drops
 * it), for tests that must see the module meet a database it has never migrated. Returns its URL.
 */
export async function createEmptyDatabase(tag: string): Promise<string> {
  const template = process.env.PW_TEST_TEMPLATE_NAME;
  const adminUrl = process.env.PW_TEST_ADMIN_URL;
  if (!template || !adminUrl) throw new Error('createEmptyDatabase needs the global setup (PW_TEST_TEMPLATE_NAME)');
  const name = `${template}_${tag}_${randomBytes(3).toString('hex')}`;
  const { Client } = await import('pg');
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
