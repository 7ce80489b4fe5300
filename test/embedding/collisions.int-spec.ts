import { All, Controller, Get, INestApplication, Module, Post, RequestMethod, Type } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { randomBytes, randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Client } from 'pg';
import request from 'supertest';
import { configurePaymentWebhooksApp, PaymentWebhooksModule } from '../../src';
import type { PaymentWebhooksOptions } from '../../src/config/options';
import { queueOwnerKey } from '../../src/jobs/queue-owner';
import { createLogger } from '../../src/observability/logger';
import { fastifyAdapter } from '../../src/standalone';
import { deleteQueueKeys, Platform, PLATFORMS } from '../support/app';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';

/**
 * CONTRACT §6 "Collisions refused at start": a route of the module the host already serves (same
 * method, same full path with every prefix) stops the start with one line naming the route and
 * `routePrefix`, on Express as on Fastify (where the duplicate would otherwise crash the start with
 * FST_ERR_DUPLICATED_ROUTE, and on Express shadow one of the two); and a queue prefix whose queues
 * belong to a deployment on another database stops it too, naming `queuePrefix`/`QUEUE_PREFIX`
 * and both databases, without credentials.
 */
@Controller()
class HostHealthController {
  @Get('health')
  health(): { host: 'up' } {
    return { host: 'up' };
  }
}

@Controller('pay')
class HostPayController {
  @Get('orders')
  orders(): string[] {
    return [];
  }
}

@Controller('orders')
class HostOrdersController {
  @All(':orderId')
  any(): string {
    return 'host';
  }
}

@Controller()
class HostDocsController {
  @Get('docs')
  docs(): string {
    return 'host docs';
  }
}

@Controller('host')
class HostOwnController {
  @Post('notes')
  note(): { ok: true } {
    return { ok: true };
  }
}

function moduleOptions(overrides: Partial<PaymentWebhooksOptions>): PaymentWebhooksOptions {
  return {
    databaseUrl: TEST_DATABASE_URL,
    redisUrl: TEST_REDIS_URL,
    queuePrefix: `pw-coll-${randomUUID().slice(0, 8)}`,
    endpoints: [{ id: 'stripe', provider: 'stripe', secrets: ['whsec_collisions'], merchantAccountId: 'acct_1' }],
    carriers: [{ name: 'default', url: 'http://127.0.0.1:9' }],
    adminToken: 'collisions-admin',
    logger: createLogger({ level: 'silent' }),
    migrationsRun: false,
    runWorkers: false,
    tuning: { sweepIntervalMs: 60_000 },
    ...overrides,
  };
}

interface Host {
  controllers?: Type[];
  options?: Partial<PaymentWebhooksOptions>;
  prepare?: (app: INestApplication) => void;
  configure?: boolean;
}

/** A host app with controllers of its own and the module; not yet initialised. */
async function hostApp(platform: Platform, host: Host): Promise<INestApplication> {
  @Module({ imports: [PaymentWebhooksModule.forRoot(moduleOptions(host.options ?? {}))], controllers: host.controllers ?? [] })
  class HostAppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [HostAppModule] }).compile();
  const app =
    platform === 'fastify'
      ? moduleRef.createNestApplication(await fastifyAdapter(), { logger: false })
      : moduleRef.createNestApplication({ logger: false });
  host.prepare?.(app);
  if (host.configure ?? true) configurePaymentWebhooksApp(app);
  return app;
}

/** Starts the app as a host does; resolves with the start's error, or null when it started. */
async function start(platform: Platform, app: INestApplication): Promise<Error | null> {
  try {
    await app.init();
    if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready();
    return null;
  } catch (err) {
    return err as Error;
  }
}

const apps: INestApplication[] = [];
const prefixes: string[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close().catch(() => undefined);
  for (const prefix of prefixes.splice(0)) await deleteQueueKeys(prefix);
});

async function tracked(platform: Platform, host: Host): Promise<INestApplication> {
  const queuePrefix = host.options?.queuePrefix ?? `pw-coll-${randomUUID().slice(0, 8)}`;
  prefixes.push(queuePrefix);
  const app = await hostApp(platform, { ...host, options: { ...host.options, queuePrefix } });
  apps.push(app);
  return app;
}

function expectOneLine(err: Error | null, ...parts: string[]): void {
  expect(err).toBeInstanceOf(Error);
  const message = err!.message;
  expect(message.split('\n')).toHaveLength(1);
  for (const part of parts) expect(message).toContain(part);
}

describe.each(PLATFORMS)('routes the host already serves (%s)', (platform) => {
  it("refuses the start when the module, with no routePrefix, would land on the host's /health, naming the route and routePrefix", async () => {
    const app = await tracked(platform, { controllers: [HostHealthController] });
    const err = await start(platform, app);
    expectOneLine(err, 'GET /health', 'HostHealthController.health', 'routePrefix');
    expect(err!.message).toBe(
      "payment-webhooks: route GET /health of the module is already served by the host (HostHealthController.health); set the option routePrefix (for example routePrefix: 'pay') to move the module's routes under a path of their own",
    );
    expect(err!.message).not.toContain('FST_ERR_DUPLICATED_ROUTE');
  });

  it('counts the global prefix: the collision is named by its full path', async () => {
    const app = await tracked(platform, { controllers: [HostHealthController], prepare: (a) => a.setGlobalPrefix('api') });
    expectOneLine(await start(platform, app), 'route GET /api/health of the module', 'routePrefix');
  });

  it("counts the global prefix's exclusions: a host route excluded from it meets the module's route excluded alike", async () => {
    const exclude = { exclude: [{ path: 'health', method: RequestMethod.GET }] };
    const app = await tracked(platform, { controllers: [HostHealthController], prepare: (a) => a.setGlobalPrefix('api', exclude) });
    expectOneLine(await start(platform, app), 'route GET /health of the module', 'HostHealthController.health');
  });

  it('a host route excluded from the global prefix is not in the way of the module under it: both start and answer', async () => {
    const app = await tracked(platform, {
      controllers: [HostHealthController],
      options: { routePrefix: 'pay' },
      prepare: (a) => a.setGlobalPrefix('api', { exclude: [{ path: 'health', method: RequestMethod.GET }] }),
    });
    expect(await start(platform, app)).toBeNull();
    expect((await request(app.getHttpServer()).get('/health')).body).toEqual({ host: 'up' });
    expect((await request(app.getHttpServer()).get('/api/pay/health/ready')).status).toBe(200);
  });

  it('with routePrefix the module moves out of the way: both /health answer, each its own', async () => {
    const app = await tracked(platform, { controllers: [HostHealthController, HostOwnController], options: { routePrefix: 'pay' } });
    expect(await start(platform, app)).toBeNull();
    expect((await request(app.getHttpServer()).get('/health')).body).toEqual({ host: 'up' });
    const own = await request(app.getHttpServer()).get('/pay/health');
    expect(own.status).toBe(200);
    expect(own.body).not.toEqual({ host: 'up' });
  });

  it('a host route under the module’s routePrefix is refused too, naming the prefix in use', async () => {
    const app = await tracked(platform, { controllers: [HostPayController], options: { routePrefix: 'pay' } });
    expectOneLine(await start(platform, app), 'route GET /pay/orders of the module', 'HostPayController.orders', "routePrefix (now '/pay')");
  });

  it('a parameter of another name, or a host route for every method, is the same route', async () => {
    const app = await tracked(platform, { controllers: [HostOrdersController] });
    expectOneLine(await start(platform, app), 'route GET /orders/:id of the module', 'HostOrdersController.any', 'routePrefix');
  });

  it('one line names the first colliding route and counts the others', async () => {
    const app = await tracked(platform, { controllers: [HostHealthController, HostDocsController] });
    expectOneLine(await start(platform, app), 'route GET /health of the module', '(and 1 more: GET /docs)', 'routePrefix');
  });

  it("the module's Swagger UI at /docs is one of its routes", async () => {
    const app = await tracked(platform, { controllers: [HostDocsController] });
    expectOneLine(await start(platform, app), 'route GET /docs of the module', 'HostDocsController.docs');
  });

  it('a host whose routes are all elsewhere starts as before', async () => {
    const app = await tracked(platform, { controllers: [HostOwnController] });
    expect(await start(platform, app)).toBeNull();
    expect((await request(app.getHttpServer()).post('/host/notes').send({})).status).toBe(201);
    expect((await request(app.getHttpServer()).get('/health/ready')).status).toBe(200);
  });
});

/** A second database on the same server, a copy of the suite's migrated one. */
async function otherDatabase(): Promise<string> {
  const template = process.env.PW_TEST_TEMPLATE_NAME;
  const adminUrl = process.env.PW_TEST_ADMIN_URL;
  if (!template || !adminUrl) throw new Error('needs the global setup (PW_TEST_TEMPLATE_NAME)');
  const name = `${template}_owner_${randomBytes(3).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

describe.each(PLATFORMS)('queue prefixes of another deployment (%s)', (platform) => {
  let elsewhere: string;
  beforeAll(async () => {
    elsewhere = await otherDatabase();
  });

  it('refuses a prefix whose queues belong to a deployment on another database, naming queuePrefix/QUEUE_PREFIX and both databases without credentials', async () => {
    const queuePrefix = `pw-coll-${randomUUID().slice(0, 8)}`;
    const first = await tracked(platform, { options: { queuePrefix, runWorkers: true } });
    expect(await start(platform, first)).toBeNull();

    const second = await tracked(platform, { options: { queuePrefix, databaseUrl: elsewhere, runWorkers: true } });
    const err = await start(platform, second);
    const here = new URL(TEST_DATABASE_URL).pathname.slice(1);
    const there = new URL(elsewhere).pathname.slice(1);
    expectOneLine(err, `queue prefix "${queuePrefix}"`, 'queuePrefix', 'QUEUE_PREFIX', `database "${here}"`, `database "${there}"`, 'schema "payment_webhooks"');
    expect(err!.message).toBe(
      `payment-webhooks: queue prefix "${queuePrefix}" (option queuePrefix, QUEUE_PREFIX) already belongs to a deployment on ` +
        `database "${here}", schema "payment_webhooks", on 127.0.0.1:5432; this one is on database "${there}", schema "payment_webhooks", on 127.0.0.1:5432, ` +
        `and two deployments on one Redis would take each other's jobs: give this one a queue prefix of its own`,
    );
    expect(err!.message).not.toMatch(/postgres:postgres|password/i);

    // The owner is recorded under the prefix, without credentials either.
    const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
    try {
      const recorded = await redis.hgetall(queueOwnerKey(queuePrefix));
      expect(recorded.description).toBe(`database "${here}", schema "payment_webhooks", on 127.0.0.1:5432`);
      expect(JSON.stringify(recorded)).not.toContain('postgres:postgres');
    } finally {
      redis.disconnect();
    }
  });

  it('another schema on the same database is another deployment too', async () => {
    const queuePrefix = `pw-coll-${randomUUID().slice(0, 8)}`;
    const first = await tracked(platform, { options: { queuePrefix } });
    expect(await start(platform, first)).toBeNull();
    const second = await tracked(platform, { options: { queuePrefix, schema: `pw_coll_${randomBytes(3).toString('hex')}`, migrationsRun: true } });
    expectOneLine(await start(platform, second), 'QUEUE_PREFIX', 'schema "payment_webhooks"', 'schema "pw_coll_');
  });

  it('processes of one deployment share the prefix: an HTTP-only and a worker-only process both start, and start again', async () => {
    const queuePrefix = `pw-coll-${randomUUID().slice(0, 8)}`;
    const http = await tracked(platform, { options: { queuePrefix, runWorkers: false } });
    expect(await start(platform, http)).toBeNull();
    const worker = await tracked(platform, { options: { queuePrefix, runWorkers: true } });
    expect(await start(platform, worker)).toBeNull();
    await worker.close();
    const again = await tracked(platform, { options: { queuePrefix, runWorkers: true } });
    expect(await start(platform, again)).toBeNull();
  });

  it.each([false, true])('a prefix is free again once its owner has no process running and no job left to run (its workers ran: %s; the daily retention schedule does not hold it)', async (runWorkers) => {
    const queuePrefix = `pw-coll-${randomUUID().slice(0, 8)}`;
    const first = await tracked(platform, { options: { queuePrefix, runWorkers } });
    expect(await start(platform, first)).toBeNull();
    await first.close();
    const second = await tracked(platform, { options: { queuePrefix, databaseUrl: elsewhere } });
    expect(await start(platform, second)).toBeNull();
  });

  it("a job of the owner still to run keeps the prefix its own, with no process of it running", async () => {
    const queuePrefix = `pw-coll-${randomUUID().slice(0, 8)}`;
    const first = await tracked(platform, { options: { queuePrefix } });
    expect(await start(platform, first)).toBeNull();
    await first.close();
    const queue = new Queue('inbox', { connection: { url: TEST_REDIS_URL }, prefix: queuePrefix });
    try {
      await queue.add('process-delivery', { left: 'behind' }, { delay: 60_000 });
    } finally {
      await queue.close();
    }
    const second = await tracked(platform, { options: { queuePrefix, databaseUrl: elsewhere } });
    expectOneLine(await start(platform, second), `queue prefix "${queuePrefix}"`, 'QUEUE_PREFIX');
  });

  it('Redis not answering at start is no refusal: the start goes on as without the check', async () => {
    const app = await tracked(platform, { options: { redisUrl: 'redis://127.0.0.1:9' } });
    const began = Date.now();
    expect(await start(platform, app)).toBeNull();
    expect(Date.now() - began).toBeLessThan(10_000);
  });
});
