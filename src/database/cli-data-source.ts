import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { DEFAULT_DATABASE_URL } from '../config/env';
import { dataSourceOptions } from './data-source';

/** The TypeORM CLI's data source: `npm run migration:run` (runs on the build, see package.json). */
export default new DataSource(dataSourceOptions(process.env.DATABASE_URL || DEFAULT_DATABASE_URL));
