import { Client } from 'pg';

/** Drops the run's template database and every suite's copy of it (see global-setup). */
export default async function globalTeardown(): Promise<void> {
  const name = process.env.PW_TEST_TEMPLATE_NAME;
  const adminUrl = process.env.PW_TEST_ADMIN_URL;
  if (!name || !adminUrl) return;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [
      `${name}\\_%`,
    ]);
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
