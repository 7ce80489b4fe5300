import { INestApplication, LoggerService, Provider } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { getDataSourceToken } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { EndpointDefinition, PaymentWebhooksOptions } from '../../src/config/options';
import { fastifyAdapter, prepareStandaloneApp } from '../../src/standalone';
import { createLogger } from '../../src/observability/logger';
import { PW_CONNECTION } from '../../src/database/data-source';
import { CLOCK, Clock } from '../../src/config/tokens';
import { PaymentWebhooksModule } from '../../src/payment-webhooks.module';
import { TEST_DATABASE_URL, TEST_REDIS_URL, TEST_SCHEMA } from './env';

const silentLogger = createLogger({ level: 'silent' });

/** The endpoints most suites use; secrets match the shared signature vectors where they can. */
export const TEST_ENDPOINTS: EndpointDefinition[] = [
  { id: 'paymos-a', provider: 'paymos', secrets: ['paymos-secret-old'], merchantAccountId: 'acc_1' },
  { id: 'paymos-b', provider: 'paymos', secrets: ['paymos-secret-b'], merchantAccountId: 'acc_1' },
  {
    id: 'factuarea-company',
    provider: 'factuarea',
    secrets: ['whsec_factuarea_company'],
    merchantAccountId: 'fa-merchant-1',
  },
  {
    id: 'factuarea-account',
    provider: 'factuarea',
    secrets: ['whsec_factuarea_account'],
    merchantAccountId: 'fa-merchant-1',
  },
  // Rotation: only the new secret is configured, as in the shared vector.
  { id: 'stripe-main', provider: 'stripe', secrets: ['whsec_test_stripe_new'], merchantAccountId: 'acct_1' },
  {
    id: 'standard-main',
    provider: 'standard',
    secrets: ['whsec_c3RhbmRhcmQtd2ViaG9va3MtdGVzdC1rZXktMDAwMQ=='],
    merchantAccountId: 'acc_1',
  },
];

/** The admin token every test app is configured with. */
export const ADMIN_TOKEN = 'test-admin-token';
export const AUTH = { Authorization: `Bearer ${ADMIN_TOKEN}` };

export function secretOf(endpointId: string): string {
  const endpoint = TEST_ENDPOINTS.find((e) => e.id === endpointId);
  if (!endpoint) throw new Error(`no test endpoint ${endpointId}`);
  const first = endpoint.secrets[0];
  return typeof first === 'string' ? first : first.secret;
}

/** The real clock, which a test may set to another time; it keeps running from there. */
export class TestClock implements Clock {
  private offsetMs = 0;
  now(): number {
    return Date.now() + this.offsetMs;
  }
  /** From now on, the clock reads `seconds` (and runs on). */
  setSeconds(seconds: number): void {
    this.offsetMs = seconds * 1000 - Date.now();
  }
  reset(): void {
    this.offsetMs = 0;
  }
}

export interface TestApp {
  app: INestApplication;
  dataSource: DataSource;
  clock: TestClock;
  queuePrefix: string;
  get<T>(token: (abstract new (...args: any[]) => T) | string | symbol): T;
  close(): Promise<void>;
}

/**
 * The module on the real PostgreSQL and Redis, under a queue prefix of its own so suites never
 * see each other's jobs. Workers are off unless a suite asks for them.
 */
/** The HTTP platforms every rule of the contract holds on (CONTRACT §1 `HTTP_ADAPTER`). */
export const PLATFORMS = ['express', 'fastify'] as const;
export type Platform = (typeof PLATFORMS)[number];

export async function createTestApp(
  overrides: Partial<PaymentWebhooksOptions> = {},
  {
    platform = 'express',
    providers = [],
    nestLogger,
  }: { platform?: Platform; providers?: Provider[]; /** The app's Nest logger (default: errors only, to the console). */ nestLogger?: LoggerService } = {},
): Promise<TestApp> {
  const queuePrefix = `pwtest-${randomUUID().slice(0, 8)}`;
  const clock = new TestClock();
  const moduleRef = await Test.createTestingModule({
    imports: [
      PaymentWebhooksModule.forRoot({
        databaseUrl: TEST_DATABASE_URL,
        redisUrl: TEST_REDIS_URL,
        queuePrefix,
        endpoints: TEST_ENDPOINTS,
        // Nothing listens on port 9: suites that dispatch to a carrier configure their own.
        carriers: [{ name: 'default', url: 'http://127.0.0.1:9' }],
        adminToken: ADMIN_TOKEN,
        logger: silentLogger,
        migrationsRun: false,
        runWorkers: false,
        ...overrides,
        tuning: { sweepIntervalMs: 60_000, inboxBackoffMs: 100, ...(overrides.tuning ?? {}) },
      }),
    ],
    // The host's own providers (an @OnPaymentEvent subscriber, say).
    providers,
  })
    .overrideProvider(CLOCK)
    .useValue(clock)
    .compile();
  const app =
    platform === 'fastify'
      ? moduleRef.createNestApplication(await fastifyAdapter(), { bodyParser: false, logger: nestLogger ?? ['error'] })
      : moduleRef.createNestApplication({ bodyParser: false, logger: nestLogger ?? ['error'] });
  prepareStandaloneApp(app);
  await app.init();
  if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready();
  const dataSource = app.get<DataSource>(getDataSourceToken(PW_CONNECTION));
  return {
    app,
    dataSource,
    clock,
    queuePrefix,
    get: <T>(token: (abstract new (...args: any[]) => T) | string | symbol) => app.get(token as never) as T,
    close: async () => {
      await app.close();
      await deleteQueueKeys(queuePrefix);
    },
  };
}

/** Removes every Redis key under a queue prefix (a suite's, or a host's in the embedding test). */
export async function deleteQueueKeys(prefix: string): Promise<void> {
  const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
  } catch {
    // Redis may be the thing a suite took down; leftover keys under a random prefix are harmless.
  } finally {
    redis.disconnect();
  }
}

/** Polls `probe` until it returns a truthy value or the deadline passes (no fixed sleeps). */
export async function eventually<T>(probe: () => Promise<T>, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T;
  do {
    last = await probe();
    if (last) return last;
    await new Promise((r) => setTimeout(r, 25));
  } while (Date.now() < deadline);
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

export async function truncateAll(dataSource: DataSource): Promise<void> {
  const tables: Array<{ tablename: string }> = await dataSource.query(
    `SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename <> 'pw_migrations'`,
    [TEST_SCHEMA],
  );
  if (tables.length === 0) return;
  const sql = `TRUNCATE ${tables.map((t) => `${TEST_SCHEMA}."${t.tablename}"`).join(', ')} CASCADE`;
  // A worker still finishing the previous test's job can hold row locks in another table order:
  // PostgreSQL then aborts one side of the deadlock, sometimes this one. Try again.
  for (let attempt = 1; ; attempt++) {
    try {
      await dataSource.query(sql);
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== '40P01' || attempt === 5) throw err;
    }
  }
}
