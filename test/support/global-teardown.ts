import { Client } from 'pg';

/** Drops the run's own database (see global-setup). */
export default async function globalTeardown(): Promise<void> {
  const name = process.env.PW_TEST_DATABASE_NAME;
  const adminUrl = process.env.PW_TEST_ADMIN_URL;
  if (!name || !adminUrl) return;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
