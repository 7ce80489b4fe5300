import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { dirname, join, relative } from 'node:path';
import { deleteKeys } from '../support/npm-project';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';

/**
 * The host tests of docs/embedding.md ("A host test per provider") run as they are written: each
 * ```ts block named `// test/<provider>-webhook.e2e-spec.ts`, with the helpers and endpoints of the
 * same section, is copied out of the doc and run against an AppModule of this suite's (the
 * module with `webhookEndpoints()`, workers on, a carrier stub). Only the package's name is
 * rewritten to the sources, and `.js` dropped from relative imports. The doc's tests run twice in
 * a row on one database: they pass the second time only because each run makes ids of its own.
 */
const REPO = join(__dirname, '..', '..');
const DOC = readFileSync(join(REPO, 'docs', 'embedding.md'), 'utf8');
const PROVIDERS = ['adyen', 'paypal', 'checkout', 'square', 'paddle'] as const;
/** Out of Jest's testMatch (no `.spec`), deleted afterwards. */
const GENERATED = join(__dirname, `.host-tests-${process.pid}-${randomBytes(3).toString('hex')}`);

/** The doc's ts block whose first line names `path`. */
function snippet(path: string): string {
  const fence = /^```ts\n([\s\S]*?)^```$/gm;
  for (let m = fence.exec(DOC); m; m = fence.exec(DOC)) {
    if (m[1].startsWith(`// ${path}\n`)) return m[1];
  }
  throw new Error(`docs/embedding.md has no ts block named ${path}`);
}

/** The snippet as this repository runs it: the package's entry points are its sources. */
function rewrite(code: string, file: string): string {
  const to = (target: string) => {
    const path = relative(dirname(file), target);
    return path.startsWith('.') ? path : `./${path}`;
  };
  return code
    .replace(/from 'nestjs-payment-webhooks\/testing'/g, `from '${to(join(REPO, 'src', 'testing', 'index'))}'`)
    .replace(/from 'nestjs-payment-webhooks'/g, `from '${to(join(REPO, 'src', 'index'))}'`)
    .replace(/from '(\.\.?\/[^']+)\.js'/g, "from '$1'");
}

/** The host's AppModule in these runs: the module as the doc's endpoints configure it. */
const APP_MODULE = `import { Module } from '@nestjs/common';
import { PaymentWebhooksModule } from 'nestjs-payment-webhooks';
import { webhookEndpoints } from './webhook-endpoints.js';

@Module({
  imports: [
    PaymentWebhooksModule.forRootAsync({
      useFactory: () => ({
        databaseUrl: process.env.HOST_TESTS_DATABASE_URL!,
        redisUrl: process.env.HOST_TESTS_REDIS_URL!,
        adminToken: process.env.ADMIN_TOKEN!,
        queuePrefix: process.env.HOST_TESTS_QUEUE_PREFIX!,
        routePrefix: 'payments',
        endpoints: webhookEndpoints(),
        carriers: [{ name: 'default', url: process.env.HOST_TESTS_CARRIER_URL! }],
        runWorkers: true,
      }),
    }),
  ],
})
export class AppModule {}
`;

/** Writes one run's copy of the doc's files; returns its test files. */
function writeRun(run: number): string[] {
  const root = join(GENERATED, `run-${run}`);
  const files: Record<string, string> = {
    'src/app.module.ts': APP_MODULE,
    'src/webhook-endpoints.ts': snippet('src/webhook-endpoints.ts'),
    'test/payment-webhooks.ts': snippet('test/payment-webhooks.ts'),
  };
  for (const provider of PROVIDERS) files[`test/${provider}-webhook.host-test.ts`] = snippet(`test/${provider}-webhook.e2e-spec.ts`);
  for (const [path, code] of Object.entries(files)) {
    const file = join(root, path);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, rewrite(code, file));
  }
  return PROVIDERS.map((provider) => join(root, 'test', `${provider}-webhook.host-test.ts`));
}

const RUN = randomBytes(4).toString('hex');
const QUEUE_PREFIX = `pw-host-tests-${RUN}`;
/** What the doc's tests read from the environment, as a host's CI would set it. */
const ENV: Record<string, string> = {
  HOST_TESTS_DATABASE_URL: TEST_DATABASE_URL,
  HOST_TESTS_REDIS_URL: TEST_REDIS_URL,
  HOST_TESTS_QUEUE_PREFIX: QUEUE_PREFIX,
  ADMIN_TOKEN: `admin-${randomBytes(12).toString('hex')}`,
  ADYEN_HMAC_KEY: randomBytes(32).toString('hex').toUpperCase(),
  ADYEN_MERCHANT_ACCOUNT: 'ShopEU',
  PAYPAL_MERCHANT_ID: 'MERCHANTPP1',
  PAYPAL_WEBHOOK_ID: `WH${randomBytes(8).toString('hex').toUpperCase()}`,
  PAYPAL_CERT_HOSTS: 'api.paypal.com',
  CHECKOUT_SIGNATURE_KEY: `cko-${randomBytes(16).toString('hex')}`,
  CHECKOUT_ENTITY_ID: 'ent_shop_eu',
  SQUARE_SIGNATURE_KEY: randomBytes(16).toString('base64url'),
  SQUARE_MERCHANT_ID: 'ML_SHOP_EU',
  SQUARE_NOTIFICATION_URL: 'https://shop.example/api/payments/webhooks/square-main',
  PADDLE_SECRET_KEY: `pdl_ntfset_${randomBytes(16).toString('hex')}`,
  PADDLE_SELLER_ID: 'seller_12345',
};
const saved = Object.fromEntries([...Object.keys(ENV), 'PAYPAL_CA_FILE'].map((name) => [name, process.env[name]]));
/** Shipments the carrier stub received, per order. */
const shipments = new Map<string, number>();
let carrier: Server | undefined;

beforeAll(async () => {
  carrier = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const { orderId } = JSON.parse(text) as { orderId: string };
      shipments.set(orderId, (shipments.get(orderId) ?? 0) + 1);
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: `shp_${randomBytes(4).toString('hex')}` }));
    });
  });
  await new Promise<void>((resolve) => carrier!.listen(0, '127.0.0.1', resolve));
  Object.assign(process.env, ENV, { HOST_TESTS_CARRIER_URL: `http://127.0.0.1:${(carrier.address() as { port: number }).port}` });
});

afterAll(async () => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  delete process.env.HOST_TESTS_CARRIER_URL;
  await new Promise((resolve) => (carrier ? carrier.close(resolve) : resolve(undefined)));
  await deleteKeys(TEST_REDIS_URL, `${QUEUE_PREFIX}:*`);
  rmSync(GENERATED, { recursive: true, force: true });
}, 30_000);

for (const run of [1, 2]) {
  describe(`docs/embedding.md's host tests, run ${run} of 2 on one database`, () => {
    // The doc's describe blocks, registered here, as Jest would find them in the host's test/.
    for (const file of writeRun(run)) require(file);
  });
}

it('no order was shipped twice: each test paid an order of its own, and the carrier saw it at most once', () => {
  // Declared last, run last: the doc's tests shipped their orders before.
  expect(shipments.size).toBeGreaterThan(0);
  expect([...shipments.values()].filter((n) => n !== 1)).toEqual([]);
  expect(shipments.size).toBeLessThanOrEqual(PROVIDERS.length * 2);
});
