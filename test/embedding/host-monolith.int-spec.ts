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
import { signedHeaders } from '../../tools/sign';
import { deleteQueueKeys, eventually } from '../support/app';
import { bodies } from '../support/domain';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';

/**
 * The module inside a NestJS monolith that has its own default TypeORM connection, its own BullMQ
 * configuration and queue, its own JSON routes and its own configuration: `forRootAsync` takes its
 * options from the host's ConfigService, and neither side disturbs the other.
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

@Controller('host')
class HostController {
  constructor(private readonly notes: HostNotes) {}

  @Get('ping')
  ping(): { pong: true } {
    return { pong: true };
  }

  /** A host JSON route: the body parser that configurePaymentWebhooksApp installs must serve it. */
  @Post('notes')
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
        isGlobal: true,
        load: [() => ({ HOST_DATABASE_URL: TEST_DATABASE_URL, HOST_REDIS_URL: TEST_REDIS_URL, STRIPE_WHSEC: STRIPE_SECRET })],
      }),
      // The host's own default connection and BullMQ configuration.
      TypeOrmModule.forRoot({ type: 'postgres', url: TEST_DATABASE_URL, entities: [], synchronize: false }),
      BullModule.forRoot({ connection: { host: redis.hostname, port: Number(redis.port || 6379) }, prefix: hostPrefix }),
      BullModule.registerQueue({ name: 'host-jobs' }),
      PaymentWebhooksModule.forRootAsync({
        inject: [ConfigService],
        useFactory: (config: ConfigService) => ({
          databaseUrl: config.getOrThrow<string>('HOST_DATABASE_URL'),
          redisUrl: config.getOrThrow<string>('HOST_REDIS_URL'),
          queuePrefix: modulePrefix,
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

describe.each([
  ['bodyParser: false + configurePaymentWebhooksApp (recommended)', { bodyParser: false }, true],
  ["Nest's own body parser with rawBody: true", { rawBody: true }, false],
] as const)('embedded in a host monolith: %s', (_name, appOptions, configure) => {
  const hostPrefix = `host-${randomUUID().slice(0, 8)}`;
  const modulePrefix = `pw-host-${randomUUID().slice(0, 8)}`;
  let app: INestApplication;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [hostModule(hostPrefix, modulePrefix)] }).compile();
    app = moduleRef.createNestApplication({ ...appOptions, logger: ['error'] });
    if (configure) configurePaymentWebhooksApp(app);
    await app.init();
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

  it('a host JSON route still parses its body, and its queue lives under its own prefix', async () => {
    const res = await request(app.getHttpServer()).post('/host/notes').send({ text: 'hello' });
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
    expect((await request(app.getHttpServer()).get('/host/ping')).body).toEqual({ pong: true });
  });

  it('a signed webhook is verified over the raw bytes, recorded once, and pays the order through the workers', async () => {
    const http = () => request(app.getHttpServer());
    const auth = { Authorization: `Bearer ${ADMIN}` };
    const order = await http()
      .post('/orders')
      .set(auth)
      .send({
        amount: '49.90',
        currency: 'EUR',
        shipTo: { name: 'Ada Lovelace', line1: '12 St James Sq', city: 'London', postalCode: 'SW1Y 4JH', country: 'GB' },
        items: [{ sku: 'SKU-1', quantity: 1 }],
      });
    expect(order.status).toBe(201);
    const pi = `pi_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
    const registered = await http().post(`/orders/${order.body.id}/payments`).set(auth).send({ provider: 'stripe', providerPaymentId: pi });
    expect(registered.status).toBe(201);

    const delivery = stripeDelivery('payment_intent.succeeded', pi);
    const first = await http().post('/webhooks/stripe').set(delivery.headers).send(delivery.body);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ status: 'accepted', eventId: delivery.eventId });
    const again = await http().post('/webhooks/stripe').set(delivery.headers).send(delivery.body);
    expect(again.body).toEqual({ status: 'duplicate', eventId: delivery.eventId });

    await eventually(async () => (await http().get(`/orders/${order.body.id}`).set(auth)).body.status === 'paid', 10_000, 'the order paid');
    const rows = await app.get(DataSource).query(`SELECT status, outcome FROM webhook_inbox WHERE event_id = $1`, [delivery.eventId]);
    expect(rows).toEqual([{ status: 'processed', outcome: 'applied' }]);
  });

  it('a body altered in transit is refused by the signature, whichever parser the host uses', async () => {
    const delivery = stripeDelivery('payment_intent.succeeded', 'pi_tampered');
    const res = await request(app.getHttpServer())
      .post('/webhooks/stripe')
      .set(delivery.headers)
      .send(delivery.body.replace('4990', '1'));
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'invalid_signature' });
  });
});
