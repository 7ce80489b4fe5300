import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { dataSourceOptions, runMigrationsLocked } from '../../src/database/data-source';
import { TEST_DATABASE_URL } from './env';

/** Once per run: an empty schema, then every migration, as a fresh deployment would get it. */
export default async function globalSetup(): Promise<void> {
  const dataSource = await new DataSource(dataSourceOptions(TEST_DATABASE_URL)).initialize();
  try {
    await dataSource.query('DROP SCHEMA public CASCADE');
    await dataSource.query('CREATE SCHEMA public');
    await runMigrationsLocked(dataSource);
  } finally {
    await dataSource.destroy();
  }
}
