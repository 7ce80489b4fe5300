import { BullModule, InjectQueue } from '@nestjs/bullmq';
import { Body, Controller, Get, INestApplication, Injectable, Module, Post } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import { getDataSourceToken, InjectDataSource, TypeOrmModule } from '@nestjs/typeorm';
import { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import request from 'supertest';
import { DataSource } from 'typeorm';
// The package's public entry point, as a host imports it.
import { configurePaymentWebhooksApp, PaymentWebhooksModule, PW_CONNECTION } from '../../src';
import { createLogger } from '../../src/observability/logger';
import { signedHeaders } from '../../src/testing/sign';
import { fastifyAdapter } from '../../src/standalone';
import { deleteQueueKeys, eventually } from '../support/app';
import { bodies } from '../support/domain';
import { TEST_DATABASE_URL, TEST_REDIS_URL, TEST_SCHEMA } from '../support/env';

/**
 * The module inside a NestJS monolith that has its own default TypeORM connection (and an `orders`
 * table of its own in `public`), its own BullMQ configuration and queue, its own JSON routes and
 * `/health`, a global prefix and its own configuration: `forRootAsync` takes its options from the
 * host's ConfigService (imported, not global), the module lives under `/api/pay` and in its own
 * schema, and neither side disturbs the other.
 */
const ADMIN = 'host-admin-token';
const STRIPE_SECRET = 'whsec_host_stripe';

@Injectable()
class HostNotes {
  constructor(
    @InjectDataSource() readonly db: DataSource,
    @InjectQueue('host-jobs') readonly jobs: Queue,
  ) {}
}

@Controller()
class HostController {
  constructor(private readonly notes: HostNotes) {}

  /** The host's own health route: the module's is under its prefix, never in the way. */
  @Get('health')
  health(): { host: 'up' } {
    return { host: 'up' };
  }

  /** The host's own orders, in its own `public.orders` table. */
  @Get('orders')
  async orders(): Promise<unknown> {
    return this.notes.db.query(`SELECT id, label FROM public.orders ORDER BY id`);
  }

  @Get('host/ping')
  ping(): { pong: true } {
    return { pong: true };
  }

  /** A host JSON route: the host's own body parser serves it. */
  @Post('host/notes')
  async add(@Body() body: { text: string }): Promise<{ text: string; jobId: string | undefined; database: string }> {
    const job = await this.notes.jobs.add('note', { text: body.text });
    const [{ db }] = await this.notes.db.query(`SELECT current_database() AS db`);
    return { text: body.text, jobId: job.id, database: db };
  }
}

function hostModule(hostPrefix: string, modulePrefix: string) {
  const redis = new URL(TEST_REDIS_URL);
  @Module({
    imports: [
      ConfigModule.forRoot({
        ignoreEnvFile: true,
        load: [() => ({ HOST_DATABASE_URL: TEST_DATABASE_URL, HOST_REDIS_URL: TEST_REDIS_URL, STRIPE_WHSEC: STRIPE_SECRET })],
      }),
      // The host's own default connection and BullMQ configuration.
      TypeOrmModule.forRoot({ type: 'postgres', url: TEST_DATABASE_URL, entities: [], synchronize: false }),
      BullModule.forRoot({ connection: { host: redis.hostname, port: Number(redis.port || 6379) }, prefix: hostPrefix }),
      BullModule.registerQueue({ name: 'host-jobs' }),
      PaymentWebhooksModule.forRootAsync({
        imports: [ConfigModule],
        inject: [ConfigService],
        useFactory: (config: ConfigService) => ({
          databaseUrl: config.getOrThrow<string>('HOST_DATABASE_URL'),
          redisUrl: config.getOrThrow<string>('HOST_REDIS_URL'),
          queuePrefix: modulePrefix,
          routePrefix: 'pay',
          endpoints: [{ id: 'stripe', provider: 'stripe', secrets: [config.getOrThrow<string>('STRIPE_WHSEC')], merchantAccountId: 'acct_host' }],
          carriers: [{ name: 'default', url: 'http://127.0.0.1:9' }],
          adminToken: ADMIN,
          logger: createLogger({ level: 'silent' }),
          migrationsRun: false,
          runWorkers: true,
          tuning: { sweepIntervalMs: 60_000 },
        }),
      }),
    ],
    controllers: [HostController],
    providers: [HostNotes],
  })
  class HostAppModule {}
  return HostAppModule;
}

function stripeDelivery(type: string, paymentIntent: string) {
  const { eventId, body } = bodies.stripe(type, paymentIntent, { account: 'acct_host' });
  const raw = JSON.stringify(body);
  return { eventId, body: raw, headers: signedHeaders('stripe', STRIPE_SECRET, raw) };
}

/** The host's own `orders` table, with a row of its own: the module must never touch it. */
async function createHostOrders(db: DataSource): Promise<void> {
  await db.query(`CREATE TABLE IF NOT EXISTS public.orders (id integer PRIMARY KEY, label text NOT NULL)`);
  await db.query(`INSERT INTO public.orders (id, label) VALUES (1, 'host order') ON CONFLICT (id) DO NOTHING`);
}

describe.each([
  ["Express, Nest's body parser + configurePaymentWebhooksApp (recommended)", 'express', {}, true],
  ["Fastify, Nest's body parser + configurePaymentWebhooksApp (recommended)", 'fastify', {}, true],
  ["Express, Nest's own body parser with rawBody: true, no configurePaymentWebhooksApp", 'express', { rawBody: true }, false],
] as const)('embedded in a host monolith: %s', (_name, platform, appOptions, configure) => {
  const hostPrefix = `host-${randomUUID().slice(0, 8)}`;
  const modulePrefix = `pw-host-${randomUUID().slice(0, 8)}`;
  let app: INestApplication;
  const http = () => request(app.getHttpServer());
  const auth = { Authorization: `Bearer ${ADMIN}` };

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [hostModule(hostPrefix, modulePrefix)] }).compile();
    app =
      platform === 'fastify'
        ? moduleRef.createNestApplication(await fastifyAdapter(), { ...appOptions, logger: ['error'] })
        : moduleRef.createNestApplication({ ...appOptions, logger: ['error'] });
    app.setGlobalPrefix('api');
    if (configure) configurePaymentWebhooksApp(app);
    await createHostOrders(app.get(DataSource));
    await app.init();
    if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready();
  });
  afterAll(async () => {
    await app?.close();
    await deleteQueueKeys(hostPrefix);
    await deleteQueueKeys(modulePrefix);
  });

  it("the host's default connection and the module's named one are two data sources on the same database", () => {
    const host = app.get(DataSource);
    const module = app.get<DataSource>(getDataSourceToken(PW_CONNECTION));
    expect(host).not.toBe(module);
    expect(host.isInitialized).toBe(true);
    expect(module.isInitialized).toBe(true);
  });

  it("the host's /api/health and /api/orders are its own; the module's are under /api/pay", async () => {
    expect((await http().get('/api/health')).body).toEqual({ host: 'up' });
    expect((await http().get('/api/orders')).body).toEqual([{ id: 1, label: 'host order' }]);
    const ready = await http().get('/api/pay/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ok');
    const orders = await http().get('/api/pay/orders').set(auth);
    expect(orders.status).toBe(200);
    expect(Array.isArray(orders.body.items)).toBe(true);
    expect((await http().get('/api/pay/orders')).status).toBe(401);
  });

  it('a host JSON route still parses its body, and its queue lives under its own prefix', async () => {
    const res = await http().post('/api/host/notes').send({ text: 'hello' });
    expect(res.status).toBe(201);
    expect(res.body.text).toBe('hello');
    expect(res.body.database).toBe(new URL(TEST_DATABASE_URL).pathname.slice(1));
    const redis = new Redis(TEST_REDIS_URL, { maxRetriesPerRequest: 1 });
    try {
      expect(await redis.exists(`${hostPrefix}:host-jobs:${res.body.jobId}`)).toBe(1);
      expect((await redis.keys(`${modulePrefix}:host-jobs:*`)).length).toBe(0);
    } finally {
      redis.disconnect();
    }
    expect((await http().get('/api/host/ping')).body).toEqual({ pong: true });
  });

  it('a signed webhook at /api/pay/webhooks/stripe is verified over the raw bytes, recorded once, and pays the order through the workers', async () => {
    const order = await http()
      .post('/api/pay/orders')
      .set(auth)
      .send({
        amount: '49.90',
        currency: 'EUR',
        shipTo: { name: 'Ada Lovelace', line1: '12 St James Sq', city: 'London', postalCode: 'SW1Y 4JH', country: 'GB' },
        items: [{ sku: 'SKU-1', quantity: 1 }],
      });
    expect(order.status).toBe(201);
    const pi = `pi_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
    const registered = await http().post(`/api/pay/orders/${order.body.id}/payments`).set(auth).send({ provider: 'stripe', providerPaymentId: pi });
    expect(registered.status).toBe(201);

    const delivery = stripeDelivery('payment_intent.succeeded', pi);
    const first = await http().post('/api/pay/webhooks/stripe').set(delivery.headers).send(delivery.body);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ status: 'accepted', eventId: delivery.eventId });
    const again = await http().post('/api/pay/webhooks/stripe').set(delivery.headers).send(delivery.body);
    expect(again.body).toEqual({ status: 'duplicate', eventId: delivery.eventId });

    await eventually(async () => (await http().get(`/api/pay/orders/${order.body.id}`).set(auth)).body.status === 'paid', 10_000, 'the order paid');
    const rows = await app
      .get(DataSource)
      .query(`SELECT status, outcome FROM ${TEST_SCHEMA}.webhook_inbox WHERE event_id = $1`, [delivery.eventId]);
    expect(rows).toEqual([{ status: 'processed', outcome: 'applied' }]);
    // The host's table is untouched, and none of the module's tables is in public.
    expect(await app.get(DataSource).query(`SELECT id, label FROM public.orders`)).toEqual([{ id: 1, label: 'host order' }]);
    const inPublic = await app
      .get(DataSource)
      .query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename IN ('webhook_inbox', 'payments', 'fulfillments', 'outbox_message', 'pw_migrations')`);
    expect(inPublic).toEqual([]);
  });

  it('a body altered in transit is refused by the signature, whichever parser the host uses', async () => {
    const delivery = stripeDelivery('payment_intent.succeeded', 'pi_tampered');
    const res = await http().post('/api/pay/webhooks/stripe').set(delivery.headers).send(delivery.body.replace('4990', '1'));
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'invalid_signature' });
  });

  if (configure) {
    it('the module\'s Swagger UI is at /api/pay/docs, behind the admin token, and documents only the module\'s routes', async () => {
      expect((await http().get('/api/pay/docs')).status).toBe(401);
      expect((await http().get('/api/pay/docs/').set(auth)).status).toBe(200);
      const doc = await http().get('/api/pay/docs-json').set(auth);
      expect(doc.status).toBe(200);
      const paths = Object.keys(doc.body.paths);
      expect(paths).toContain('/api/pay/webhooks/{endpointId}');
      expect(paths).toContain('/api/pay/orders');
      expect(paths.filter((p) => !p.startsWith('/api/pay/'))).toEqual([]);
    });
  }
});
