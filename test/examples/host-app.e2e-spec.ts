import { ChildProcess, execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { Client } from 'pg';
import type * as TestingKit from '../../src/testing';
import type { signedHeaders as SignedHeaders } from '../../src/testing';
import { freePort, until } from '../support/process';
import { OtlpReceiver, ReceivedSpan } from '../support/otlp-receiver';
import { cleanUp, closeServer, createDatabase, deleteKeys, dropDatabase, killAll, ProjectProcess, runIn as run, withDatabase } from '../support/npm-project';

/**
 * examples/host-app as a user gets it: the repository packed with `npm pack`, the example copied
 * out of the repository and installed with a plain `npm install` against the tarball, built with
 * its own TypeScript, then started as its own process on Express and on Fastify. What the packed
 * package must give a host: a tree with one copy of every framework package, type declarations and
 * an `exports` map a TypeScript host compiles against, and a module that lives beside the host's
 * own routes, body parsing and tables without touching them.
 */
const REPO = join(__dirname, '..', '..');
const EXAMPLE = join(REPO, 'examples', 'host-app');
const RUN = `${process.pid}_${randomBytes(4).toString('hex')}`;
const QUEUE_PREFIX = `pw-host-app-${RUN}`;
const STRIPE_SECRET = `whsec_host_app_${randomBytes(8).toString('hex')}`;
const ADMIN_TOKEN = `host-admin-${randomBytes(8).toString('hex')}`;
/** The secret of the example's `acme-main` endpoint (its own provider, src/acme/). */
const ACME_SECRET = `acme_sk_host_app_${randomBytes(8).toString('hex')}`;
/** The example's default `ACME_MERCHANT_ID`. */
const ACME_ACCOUNT = 'acme_host_app';
/** The example's default `STRIPE_ACCOUNT_ID`. */
const ACCOUNT = 'acct_host_app';
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const BASE_DB_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/payments_test';
/** The server's maintenance database, where the host's own database is created and dropped. */
const ADMIN_DB_URL = process.env.PW_TEST_ADMIN_URL ?? withDatabase(BASE_DB_URL, 'postgres');
const HOST_DB = `payments_host_${RUN}`;
const HOST_DB_URL = withDatabase(ADMIN_DB_URL, HOST_DB);
/** The host's own table, as examples/host-app/src/orders/order.entity.ts creates it. */
const HOST_ORDERS_DDL = `CREATE TABLE IF NOT EXISTS public.orders (id serial PRIMARY KEY, label text NOT NULL)`;
const SEED = { id: 1, label: 'host order (seeded)' };
/** Every package a second copy of which would split the host's and the module's worlds. */
const SINGLETONS = [
  '@nestjs/common',
  '@nestjs/core',
  '@nestjs/bullmq',
  '@nestjs/swagger',
  '@nestjs/terminus',
  '@nestjs/typeorm',
  '@nestjs/config',
  '@nestjs/platform-express',
  '@nestjs/platform-fastify',
  '@fastify/static',
  'typeorm',
  'bullmq',
  'ioredis',
  'pg',
  'class-validator',
  'class-transformer',
  'reflect-metadata',
  'rxjs',
  'nestjs-payment-webhooks',
  // The module's spans and the host's SDK meet in the API's global registry: one copy of the API.
  '@opentelemetry/api',
];

let work: string | undefined;
let hostDir: string;
let signedHeaders: typeof SignedHeaders;
/** The example's own signer of Acme deliveries, from its build. */
let acmeSignatureHeader: (secret: string, body: string, timestamp?: number) => string;
/** The carrier at CARRIER_URL: answers every shipment with an id, and counts the calls per order. */
let carrier: Server | undefined;
let carrierUrl: string;
/** The `traceparent` header of each carrier call, per order. */
const carrierTraceparents = new Map<string, Array<string | undefined>>();
/** An OTLP/HTTP receiver both platforms' hosts export their traces to. */
let collector: OtlpReceiver | undefined;
/** Every span the hosts exported so far. */
const exported = (): ReceivedSpan[] => collector?.spans() ?? [];
let stripeApi: Server | undefined;
let stripeApiUrl: string;
const STRIPE_THIN_SECRET = `whsec_host_thin_${randomBytes(8).toString('hex')}`;
const STRIPE_API_KEY = `sk_test_host_${randomBytes(8).toString('hex')}`;
/** What the stand-in API serves, and how many times each PaymentIntent was read. */
const paymentIntents = new Map<string, Record<string, unknown>>();
const objectFetches = new Map<string, number>();
const shipments = new Map<string, number>();
let db: Client | undefined;
const children = new Set<ChildProcess>();
/** The host's orders the suites POST, on either platform: with the seeded row, all there is in public.orders. */
const posted: Array<{ id: number; label: string }> = [];
/** The module's orders the suites place and pay, oldest first: each has the one licence in public.licences. */
const licensed: string[] = [];
/** Paid orders refunded since: their licence is revoked. */
const refunded = new Set<string>();
/** Every order of the module's the suites placed, oldest first. */
const placed: string[] = [];
/** The installed package's testing kit (`nestjs-payment-webhooks/testing`), as a host's tests load it. */
let kit: typeof TestingKit;
/** The kit's PayPal certificate server, which the hosts' paypal-main endpoint trusts. */
let paypalCerts: TestingKit.PaypalCertServer | undefined;
let paypalCaFile: string;
/** Secrets and ids of the hosts' paypal-main, checkout-main, square-main and paddle-main endpoints. */
const PAYPAL_WEBHOOK_ID = `WH${randomBytes(8).toString('hex').toUpperCase()}`;
const CHECKOUT_SIGNATURE_KEY = `cko-host-app-${randomBytes(16).toString('hex')}`;
const SQUARE_SIGNATURE_KEY = randomBytes(16).toString('base64url');
const SQUARE_NOTIFICATION_URL = 'https://shop.example/api/payments/webhooks/square-main';
const SQUARE_MERCHANT_ID = 'ML_HOST_APP';
const PADDLE_SECRET_KEY = `pdl_ntfset_${randomBytes(16).toString('hex')}`;




beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'pw-host-app-'));
  // 1. The package as it is published: dist/ is built before Jest runs (scripts/test.sh).
  const packOutput = await run('npm', ['pack', '--json', '--pack-destination', work], REPO, 60_000);
  const [packed] = JSON.parse(packOutput) as Array<{ filename: string }>;
  const tarball = join(work, packed.filename);

  // 2. The example out of the repository (no node_modules or build of a developer's), depending on the tarball.
  hostDir = join(work, 'host-app');
  cpSync(EXAMPLE, hostDir, {
    recursive: true,
    filter: (src) => !/^(node_modules|dist)(\/|$)/.test(relative(EXAMPLE, src)),
  });
  const manifest = JSON.parse(readFileSync(join(hostDir, 'package.json'), 'utf8'));
  expect(manifest.dependencies['nestjs-payment-webhooks']).toBe('^0.2.0');
  manifest.dependencies['nestjs-payment-webhooks'] = `file:${tarball}`;
  writeFileSync(join(hostDir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  // A plain install: no --force, no --legacy-peer-deps. Any peer conflict fails it.
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline'], hostDir, 150_000);

  // 3. The host's own build against the installed package's declarations and exports map.
  await run('npx', ['tsc', '-p', 'tsconfig.json'], hostDir, 60_000);

  // The sender's signature, from the installed package's public `testing` entry point.
  const hostRequire = createRequire(join(hostDir, 'package.json'));
  kit = hostRequire('nestjs-payment-webhooks/testing') as typeof TestingKit;
  signedHeaders = kit.signedHeaders;
  // PayPal's part of the kit: its certificate server, whose CA the hosts' paypal-main trusts (a file, as caFile reads it).
  paypalCerts = await kit.startPaypalCertServer();
  paypalCaFile = join(work, 'paypal-test-ca.pem');
  writeFileSync(paypalCaFile, kit.PAYPAL_TEST_CA_PEM);
  // The host is an ES module project (as `nest new` makes one): its own signer runs in a node of its own.
  acmeSignatureHeader = (secret, body, timestamp) =>
    execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "import { acmeSignatureHeader } from './dist/acme/acme.provider.js'; const [s, b, t] = process.argv.slice(1); process.stdout.write(acmeSignatureHeader(s, b, t ? Number(t) : undefined));",
        secret,
        body,
        timestamp === undefined ? '' : String(timestamp),
      ],
      { cwd: hostDir, encoding: 'utf8' },
    );

  // The carrier both platforms' hosts ship through.
  carrier = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const orderId = (JSON.parse(text) as { orderId: string }).orderId;
      shipments.set(orderId, (shipments.get(orderId) ?? 0) + 1);
      const traceparent = req.headers.traceparent;
      carrierTraceparents.set(orderId, [...(carrierTraceparents.get(orderId) ?? []), typeof traceparent === 'string' ? traceparent : undefined]);
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: `shp_${randomBytes(4).toString('hex')}` }));
    });
  });
  await new Promise<void>((resolve) => carrier!.listen(0, '127.0.0.1', resolve));
  carrierUrl = `http://127.0.0.1:${(carrier.address() as { port: number }).port}`;

  // A stand-in for Stripe's API: the PaymentIntents the thin notifications name, by id.
  stripeApi = createServer((req, res) => {
    const id = /^\/v1\/payment_intents\/([A-Za-z0-9_]+)$/.exec(req.url ?? '')?.[1];
    const object = id !== undefined && req.headers.authorization === `Bearer ${STRIPE_API_KEY}` ? paymentIntents.get(id) : undefined;
    if (id !== undefined) objectFetches.set(id, (objectFetches.get(id) ?? 0) + 1);
    res.writeHead(object ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(object ?? { error: { type: 'invalid_request_error', code: 'resource_missing', message: `No such payment_intent: '${id}'` } }));
  });
  await new Promise<void>((resolve) => stripeApi!.listen(0, '127.0.0.1', resolve));
  stripeApiUrl = `http://127.0.0.1:${(stripeApi.address() as { port: number }).port}`;

  // The hosts' OpenTelemetry collector: OTLP/HTTP (the hosts export http/json).
  collector = await OtlpReceiver.start();

  // 4. A database of the host's own, with a row of its own in its own table.
  await createDatabase(ADMIN_DB_URL, HOST_DB);
  db = new Client({ connectionString: HOST_DB_URL });
  await db.connect();
  await db.query(HOST_ORDERS_DDL);
  await db.query(`INSERT INTO public.orders (id, label) VALUES ($1, $2)`, [SEED.id, SEED.label]);
  await db.query(`SELECT setval('public.orders_id_seq', 1)`);
}, 240_000);

afterAll(() =>
  cleanUp([
    () => killAll(children),
    () => db?.end(),
    () => closeServer(carrier),
    () => closeServer(stripeApi),
    () => paypalCerts?.close(),
    () => collector?.close(),
    () => dropDatabase(ADMIN_DB_URL, HOST_DB),
    () => deleteKeys(REDIS_URL, `${QUEUE_PREFIX}:*`),
    () => work && rmSync(work, { recursive: true, force: true }),
  ]), 30_000);

it('the host installs with a plain npm install and one copy of each framework package', async () => {
  const nodes = JSON.parse(await run('npm', ['query', '*'], hostDir, 30_000)) as Array<{ name: string; location: string }>;
  const locations = (name: string) => [...new Set(nodes.filter((n) => n.name === name).map((n) => n.location))];
  for (const name of SINGLETONS) expect({ name, copies: locations(name) }).toEqual({ name, copies: [`node_modules/${name}`] });
  // `npm ls` exits non-zero on a missing or invalid dependency anywhere in the tree.
  await run('npm', ['ls', '--all'], hostDir, 30_000);
  // The host's one override is the only one.
  const manifest = JSON.parse(readFileSync(join(hostDir, 'package.json'), 'utf8'));
  expect(manifest.overrides).toEqual({ typeorm: { ioredis: '$ioredis' } });
  // A project as `nest new` (v12) makes one: ES modules, nodenext, isolatedModules, decorator metadata.
  expect(manifest.type).toBe('module');
  const compiler = JSON.parse(readFileSync(join(hostDir, 'tsconfig.json'), 'utf8')).compilerOptions;
  expect([compiler.module, compiler.moduleResolution, compiler.isolatedModules, compiler.emitDecoratorMetadata]).toEqual(['nodenext', 'nodenext', true, true]);
  // An optional peer of a provider the host has no endpoint of is not installed: the module starts without it.
  expect({ name: '@adyen/api-library', copies: locations('@adyen/api-library') }).toEqual({ name: '@adyen/api-library', copies: [] });
}, 60_000);


describe.each(['express', 'fastify'] as const)('examples/host-app on %s, started from its build', (platform) => {
  let host: ProjectProcess;
  let base: string;
  const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };
  const eventId = `evt_host_${platform}_${randomBytes(6).toString('hex')}`;
  const paymentIntent = `pi_host_${platform}_${randomBytes(6).toString('hex')}`;
  /** Stripe's `payment_intent.succeeded` for 49.90 EUR, as the endpoint's merchant account receives it. */
  const succeeded = (id: string, intent: string) =>
    JSON.stringify({
      id,
      object: 'event',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      type: 'payment_intent.succeeded',
      account: ACCOUNT,
      data: { object: { id: intent, object: 'payment_intent', amount_received: 4990, currency: 'eur', metadata: {} } },
    });
  const body = succeeded(eventId, paymentIntent);
  const json = async (res: Response): Promise<{ status: number; body: any }> => ({ status: res.status, body: await res.json() });
  /** POSTs to the module's API with the admin token. */
  const send = async (path: string, payload: unknown) =>
    json(await fetch(`${base}/api/payments${path}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(payload) }));
  /** A new order of the module's, for one licence at 49.90 EUR. */
  async function placeOrder() {
    const order = await send('/orders', {
      amount: '49.90',
      currency: 'EUR',
      shipTo: { name: 'Ada Lovelace', line1: '12 St James Sq', city: 'London', postalCode: 'SW1Y 4JH', country: 'GB' },
      items: [{ sku: 'LICENCE-1Y', quantity: 1 }],
    });
    expect(order.status).toBe(201);
    placed.push(order.body.id);
    return { orderId: order.body.id as string, order };
  }
  /** The order's view once its status is one of `statuses` (the workers processed and shipped it), within 20 s. */
  async function orderOnceIn(orderId: string, statuses: string[]) {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const view = (await json(await fetch(`${base}/api/payments/orders/${orderId}`, { headers: auth }))).body;
      if (statuses.includes(view.status)) return view;
      if (Date.now() > deadline) throw new Error(`order ${orderId} is still ${view.status} after 20 s:\n${host.output.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    host = new ProjectProcess(hostDir, {
      DATABASE_URL: HOST_DB_URL,
      REDIS_URL,
      PORT: String(port),
      HTTP_PLATFORM: platform,
      STRIPE_WEBHOOK_SECRET: STRIPE_SECRET,
      ADMIN_TOKEN,
      ACME_WEBHOOK_SECRET: ACME_SECRET,
      QUEUE_PREFIX,
      CARRIER_URL: carrierUrl,
      STRIPE_THIN_WEBHOOK_SECRET: STRIPE_THIN_SECRET,
      STRIPE_API_KEY,
      STRIPE_API_BASE_URL: stripeApiUrl,
      PAYPAL_WEBHOOK_ID,
      PAYPAL_CERT_HOSTS: paypalCerts!.certHost,
      PAYPAL_CA_FILE: paypalCaFile,
      CHECKOUT_SIGNATURE_KEY,
      SQUARE_SIGNATURE_KEY,
      SQUARE_NOTIFICATION_URL,
      SQUARE_MERCHANT_ID,
      PADDLE_SECRET_KEY,
      // The example's src/tracing.ts starts the OpenTelemetry SDK: spans go to the test's collector,
      // in batches sent every 100 ms (not the default 5 s).
      OTEL_EXPORTER_OTLP_ENDPOINT: collector!.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: `host-app-${platform}`,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    // Up once the host's own route answers; a host that died says why.
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (!host.running) throw new Error(`the host exited before listening:\n${host.output}`);
      if (await fetch(`${base}/api/health`).then((r) => r.ok, () => false)) break;
      if (Date.now() > deadline) throw new Error(`the host did not answer within 30 s:\n${host.output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 40_000);

  afterAll(() => {
    if (host?.running) host.child.kill('SIGKILL');
  });

  it("/api/health and /api/orders are the host's own; its JSON POST is parsed by its own body parser", async () => {
    expect(await json(await fetch(`${base}/api/health`))).toEqual({ status: 200, body: { host: 'ok' } });
    const before = await json(await fetch(`${base}/api/orders`));
    expect(before).toEqual({ status: 200, body: [SEED, ...posted] });

    const label = `made on ${platform}`;
    const post = (body: string) => fetch(`${base}/api/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    const created = await json(await post(JSON.stringify({ label })));
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.any(Number), label });
    posted.push(created.body);
    // The host's validation runs on its route.
    expect((await post('{"label":""}')).status).toBe(400);
    expect((await json(await fetch(`${base}/api/orders`))).body).toEqual([SEED, ...posted]);
  });

  it("the module's routes live under /api/payments", async () => {
    const ready = await json(await fetch(`${base}/api/payments/health/ready`));
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ok');
    expect((await fetch(`${base}/api/payments/orders`)).status).toBe(401);
    const orders = await json(await fetch(`${base}/api/payments/orders`, { headers: auth }));
    expect(orders.status).toBe(200);
    // None but the ones an earlier platform's suite placed (newest first) in the shared database.
    expect(orders.body.items.map((o: { id: string }) => o.id)).toEqual([...placed].reverse());
  });

  it('a signed Stripe delivery is accepted once, a duplicate is recognised, a tampered body is refused', async () => {
    const url = `${base}/api/payments/webhooks/stripe-main`;
    const headers = signedHeaders('stripe', STRIPE_SECRET, body);
    const deliver = async (raw: string) => json(await fetch(url, { method: 'POST', headers, body: raw }));
    expect(await deliver(body)).toEqual({ status: 200, body: { status: 'accepted', eventId } });
    expect(await deliver(body)).toEqual({ status: 200, body: { status: 'duplicate', eventId } });
    const tampered = body.replace('"amount_received":4990', '"amount_received":1');
    expect(tampered).not.toBe(body);
    expect(await deliver(tampered)).toEqual({ status: 401, body: { error: 'invalid_signature' } });
  });

  it("order.paid grants one licence in the host's table, in the transaction that marks the order paid; a redelivery none", async () => {
    const { orderId, order } = await placeOrder();
    expect(order.body.status).toBe('awaiting_payment');
    const intent = `pi_licence_${platform}_${randomBytes(6).toString('hex')}`;
    expect((await send(`/orders/${orderId}/payments`, { provider: 'stripe', providerPaymentId: intent })).status).toBe(201);
    licensed.push(orderId);

    const paidEventId = `evt_licence_${platform}_${randomBytes(6).toString('hex')}`;
    const paid = succeeded(paidEventId, intent);
    const deliver = async () =>
      json(await fetch(`${base}/api/payments/webhooks/stripe-main`, { method: 'POST', headers: signedHeaders('stripe', STRIPE_SECRET, paid), body: paid }));
    expect(await deliver()).toEqual({ status: 200, body: { status: 'accepted', eventId: paidEventId } });

    // Processed on the workers: paid, then fulfilled once the carrier at CARRIER_URL answers.
    await orderOnceIn(orderId, ['paid', 'fulfilled']);

    // Committed with the order's change, so there as soon as the order is paid: one per paid order.
    const exactlyOne = async () => {
      const licences = await json(await fetch(`${base}/api/licences`));
      expect(licences.status).toBe(200);
      expect(licences.body.map((l: { orderId: string }) => l.orderId)).toEqual(licensed.filter((id) => !refunded.has(id)));
      expect(licences.body.find((l: { orderId: string }) => l.orderId === orderId)).toEqual({
        orderId,
        grantedAt: expect.any(String),
        eventId: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/),
      });
      const rows = await db!.query(`SELECT count(*)::int AS n FROM public.licences WHERE order_id = $1`, [orderId]);
      expect(rows.rows[0].n).toBe(1);
    };
    await exactlyOne();

    expect(await deliver()).toEqual({ status: 200, body: { status: 'duplicate', eventId: paidEventId } });
    await exactlyOne();
  });

  it("a delivery of the host's own provider (acme): accepted once, the order paid and fulfilled once, a duplicate changes nothing", async () => {
    const { orderId } = await placeOrder();
    const chargeId = `ch_${platform}_${randomBytes(6).toString('hex')}`;
    // The REST API knows the host's provider as it knows the built-in ones.
    const registered = await send(`/orders/${orderId}/payments`, { provider: 'acme', providerPaymentId: chargeId });
    expect(registered).toMatchObject({ status: 201, body: { provider: 'acme', providerPaymentId: chargeId, merchantAccountId: ACME_ACCOUNT } });
    expect(await send(`/orders/${orderId}/payments`, { provider: 'acmee', providerPaymentId: chargeId })).toMatchObject({
      status: 400,
      body: { error: 'validation_failed', details: [{ field: 'provider', message: expect.stringMatching(/^provider must be one of .*\bstripe\b.*, acme$/) }] },
    });
    // Paid, it gets its licence like any order (LicenceGrants listens to order.paid, whatever the provider).
    licensed.push(orderId);

    const eventId = `ae_${platform}_${randomBytes(6).toString('hex')}`;
    const paid = JSON.stringify({
      event: { id: eventId, type: 'charge.paid', created: Math.floor(Date.now() / 1000), merchant: ACME_ACCOUNT },
      charge: { id: chargeId, order_id: orderId, amount: '49.90', currency: 'EUR' },
    });
    const url = `${base}/api/payments/webhooks/acme-main`;
    // Signed once, before any request: the signer is a node of its own, run synchronously, and a
    // loaded machine can block this process past the server's keep-alive timeout; the loop then
    // turns once, so that a pooled connection the server closed meanwhile is not reused.
    const acmeSignature = acmeSignatureHeader(ACME_SECRET, paid);
    await new Promise((resolve) => setImmediate(resolve));
    const deliver = async (raw: string, signature = acmeSignature) =>
      json(await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'acme-signature': signature }, body: raw }));
    expect(await deliver(paid)).toEqual({ status: 200, body: { status: 'accepted', eventId } });

    const view = await orderOnceIn(orderId, ['fulfilled']);
    expect(view.payments).toMatchObject([{ provider: 'acme', status: 'succeeded' }]);
    expect(view.fulfillment).toMatchObject({ status: 'dispatched' });
    expect(shipments.get(orderId)).toBe(1);

    expect(await deliver(paid)).toEqual({ status: 200, body: { status: 'duplicate', eventId } });
    expect(await deliver(paid.replace('49.90', '0.01'))).toEqual({ status: 401, body: { error: 'invalid_signature' } });
    expect(await deliver(paid, 's=00')).toEqual({ status: 401, body: { error: 'missing_signature' } });
    const recorded = await db!.query(`SELECT count(*)::int AS n FROM payment_webhooks.webhook_inbox WHERE provider = 'acme' AND event_id = $1`, [eventId]);
    expect(recorded.rows[0].n).toBe(1);
    expect(shipments.get(orderId)).toBe(1);
  });

  it('a Stripe thin notification at /api/payments/webhooks/stripe-thin: its PaymentIntent is read once from the API, the order paid and shipped once', async () => {
    const { orderId } = await placeOrder();
    licensed.push(orderId);
    const intent = `pi_thin_${platform}_${randomBytes(6).toString('hex')}`;
    paymentIntents.set(intent, { id: intent, object: 'payment_intent', amount: 4990, amount_received: 4990, currency: 'eur', status: 'succeeded', metadata: { order_id: orderId } });
    const notificationId = `evt_test_thin_${platform}_${randomBytes(6).toString('hex')}`;
    const notification = JSON.stringify({
      id: notificationId,
      object: 'v2.core.event',
      type: 'v1.payment_intent.succeeded',
      livemode: false,
      created: new Date().toISOString(),
      related_object: { id: intent, type: 'payment_intent', url: `/v1/payment_intents/${intent}` },
    });
    const deliver = async () =>
      json(await fetch(`${base}/api/payments/webhooks/stripe-thin`, { method: 'POST', headers: signedHeaders('stripe', STRIPE_THIN_SECRET, notification), body: notification }));
    expect(await deliver()).toEqual({ status: 200, body: { status: 'accepted', eventId: notificationId } });

    const view = await orderOnceIn(orderId, ['fulfilled']);
    expect(view.payments).toMatchObject([{ provider: 'stripe', providerPaymentId: intent, status: 'succeeded' }]);
    expect(shipments.get(orderId)).toBe(1);
    expect(objectFetches.get(intent)).toBe(1);
    expect(await deliver()).toEqual({ status: 200, body: { status: 'duplicate', eventId: notificationId } });
    expect(objectFetches.get(intent)).toBe(1);
    // The host's output never holds the key the module read Stripe with.
    expect(host.output).not.toContain(STRIPE_API_KEY);
  });

  it('a paid order is one trace: the request, its receipt, the processing linked to it, the dispatch and the carrier call', async () => {
    const { orderId } = await placeOrder();
    const intent = `pi_traced_${platform}_${randomBytes(6).toString('hex')}`;
    expect((await send(`/orders/${orderId}/payments`, { provider: 'stripe', providerPaymentId: intent })).status).toBe(201);
    licensed.push(orderId);
    const tracedEventId = `evt_traced_${platform}_${randomBytes(6).toString('hex')}`;
    const paid = succeeded(tracedEventId, intent);
    const delivered = await fetch(`${base}/api/payments/webhooks/stripe-main`, { method: 'POST', headers: signedHeaders('stripe', STRIPE_SECRET, paid), body: paid });
    expect(await json(delivered)).toEqual({ status: 200, body: { status: 'accepted', eventId: tracedEventId } });
    await orderOnceIn(orderId, ['fulfilled']);
    expect(shipments.get(orderId)).toBe(1);

    // The host exports in batches: wait until the receipt, the processing and the dispatch are all in.
    const ofEvent = (name: string) => exported().filter((s) => s.name === name && s.attributes['messaging.message.id'] === tracedEventId);
    const inTrace = (traceId: string) => exported().filter((s) => s.traceId === traceId);
    const allExported = () => {
      const [receipt] = ofEvent('webhook receive stripe');
      const trace = receipt ? inTrace(receipt.traceId) : [];
      return ofEvent('webhook process stripe').length > 0 && trace.some((s) => s.name === 'outbox dispatch fulfillment.dispatch');
    };
    await until(`the spans of ${tracedEventId}`, allExported, 10_000, 100).catch((err: Error) => {
      const seen = exported().map((s) => `${s.traceId} ${s.name} ${JSON.stringify(s.attributes['messaging.message.id'] ?? null)}`);
      throw new Error(`${err.message}; exported:\n${seen.join('\n')}\n${host.output.slice(-2000)}`);
    });

    const receipts = ofEvent('webhook receive stripe');
    const processing = ofEvent('webhook process stripe');
    expect(receipts).toHaveLength(1);
    expect(processing).toHaveLength(1);
    const [receipt] = receipts;
    const [processed] = processing;
    const { traceId } = receipt;
    const dispatches = inTrace(traceId).filter((s) => s.name.startsWith('outbox dispatch '));
    expect(dispatches.map((s) => s.name)).toEqual(['outbox dispatch fulfillment.dispatch']);
    const [dispatch] = dispatches;
    expect(receipt.attributes).toMatchObject({
      'messaging.system': 'payment_webhooks',
      'messaging.destination.name': 'stripe-main',
      'payment_webhooks.outcome': 'accepted',
    });
    // One trace: the processing is linked to the receipt, the dispatch to the processing that wrote it.
    expect(processed.traceId).toBe(traceId);
    expect(processed.links).toContainEqual({ traceId, spanId: receipt.spanId });
    expect(processed.attributes).toMatchObject({ 'payment_webhooks.status': 'processed' });
    expect(dispatch.links).toContainEqual({ traceId, spanId: processed.spanId });
    // The carrier was called once, inside the dispatch span.
    expect(carrierTraceparents.get(orderId)).toEqual([`00-${traceId}-${dispatch.spanId}-01`]);
    // The host's own instrumentations work in its ES module build: the receipt is a child of the
    // webhook request's server span (http), the processing's statements its children (pg).
    const server = inTrace(traceId).filter((s) => s.scope === '@opentelemetry/instrumentation-http' && s.kind === 2);
    expect(server.map((s) => s.spanId)).toEqual([receipt.parentSpanId]);
    expect(inTrace(traceId).some((s) => s.scope === '@opentelemetry/instrumentation-pg' && s.parentSpanId === processed.spanId)).toBe(true);
  });

  /**
   * A provider's paid and refund deliveries about one order, signed by the installed package's
   * testing kit as a host's own tests sign them: each its body (sent as signed) and headers.
   */
  function deliveriesOf(provider: 'paypal' | 'checkout' | 'square' | 'paddle', orderId: string) {
    const id = () => randomBytes(8).toString('hex');
    const now = new Date().toISOString();
    const signed = (body: string) => {
      switch (provider) {
        case 'paypal':
          return kit.signedHeaders('paypal', PAYPAL_WEBHOOK_ID, body, { certUrl: paypalCerts!.certUrl });
        case 'checkout':
          return kit.signedHeaders('checkout', CHECKOUT_SIGNATURE_KEY, body);
        case 'square':
          return kit.signedHeaders('square', SQUARE_SIGNATURE_KEY, body, { notificationUrl: SQUARE_NOTIFICATION_URL });
        case 'paddle':
          return kit.signedHeaders('paddle', PADDLE_SECRET_KEY, body);
      }
    };
    let paid: Record<string, unknown>;
    let refund: Record<string, unknown>;
    let eventIdOf: (body: Record<string, unknown>) => string;
    if (provider === 'paypal') {
      const captureId = id().toUpperCase();
      const money = { value: '49.90', currency_code: 'EUR' };
      paid = {
        id: `WH-${id().toUpperCase()}`,
        event_type: 'PAYMENT.CAPTURE.COMPLETED',
        create_time: now,
        resource: { id: captureId, status: 'COMPLETED', amount: money, custom_id: orderId, supplementary_data: { related_ids: { order_id: id().toUpperCase() } } },
      };
      refund = {
        id: `WH-${id().toUpperCase()}`,
        event_type: 'PAYMENT.CAPTURE.REFUNDED',
        create_time: now,
        resource: { id: id().toUpperCase(), status: 'COMPLETED', amount: money, links: [{ href: `https://api.paypal.com/v2/payments/captures/${captureId}`, rel: 'up', method: 'GET' }] },
      };
      eventIdOf = (b) => b.id as string;
    } else if (provider === 'checkout') {
      const payment = { id: `pay_${id()}`, amount: 4990, currency: 'EUR', metadata: { order_id: orderId } };
      paid = { id: `evt_${id()}`, type: 'payment_captured', created_on: now, data: payment };
      refund = { id: `evt_${id()}`, type: 'payment_refunded', created_on: now, data: { ...payment, action_id: `act_${id()}` } };
      eventIdOf = (b) => b.id as string;
    } else if (provider === 'square') {
      const payment = { id: id(), status: 'COMPLETED', amount_money: { amount: 4990, currency: 'EUR' }, reference_id: orderId };
      const envelope = (object: Record<string, unknown>) => ({
        merchant_id: SQUARE_MERCHANT_ID,
        type: 'payment.updated',
        event_id: randomUUID(),
        created_at: now,
        data: { type: 'payment', id: payment.id, object: { payment: object } },
      });
      paid = envelope(payment);
      refund = envelope({ ...payment, refunded_money: { amount: 4990, currency: 'EUR' } });
      eventIdOf = (b) => b.event_id as string;
    } else {
      const transactionId = `txn_${id()}`;
      const envelope = (eventType: string, data: Record<string, unknown>) => ({ event_id: `evt_${id()}`, event_type: eventType, occurred_at: now, notification_id: `ntf_${id()}`, data });
      paid = envelope('transaction.completed', {
        id: transactionId,
        status: 'completed',
        currency_code: 'EUR',
        custom_data: { order_id: orderId },
        details: { totals: { grand_total: '4990' } },
      });
      refund = envelope('adjustment.updated', {
        id: `adj_${id()}`,
        transaction_id: transactionId,
        action: 'refund',
        status: 'approved',
        currency_code: 'EUR',
        totals: { total: '4990', currency_code: 'EUR' },
      });
      eventIdOf = (b) => b.event_id as string;
    }
    const delivery = (body: Record<string, unknown>) => {
      const text = JSON.stringify(body);
      return { eventId: eventIdOf(body), body: text, headers: signed(text) };
    };
    return { paid: delivery(paid), refund: delivery(refund) };
  }

  it.each(['paypal', 'checkout', 'square', 'paddle'] as const)(
    '%s: an order paid by a signed delivery, fulfilled once, refunded by a signed refund delivery (its licence revoked)',
    async (provider) => {
      const { orderId } = await placeOrder();
      licensed.push(orderId);
      const { paid, refund } = deliveriesOf(provider, orderId);
      const deliver = async (d: { body: string; headers: Record<string, string> }) =>
        json(await fetch(`${base}/api/payments/webhooks/${provider}-main`, { method: 'POST', headers: d.headers, body: d.body }));

      expect(await deliver(paid)).toEqual({ status: 200, body: { status: 'accepted', eventId: paid.eventId } });
      const fulfilled = await orderOnceIn(orderId, ['fulfilled']);
      expect(fulfilled.payments).toMatchObject([{ provider, status: 'succeeded', amount: '49.90' }]);
      expect(shipments.get(orderId)).toBe(1);
      expect(await deliver(paid)).toEqual({ status: 200, body: { status: 'duplicate', eventId: paid.eventId } });

      expect(await deliver(refund)).toEqual({ status: 200, body: { status: 'accepted', eventId: refund.eventId } });
      const view = await orderOnceIn(orderId, ['refunded']);
      expect(view.payments).toMatchObject([{ provider, status: 'refunded', refundedAmount: '49.90' }]);
      refunded.add(orderId);
      // The host's LicenceGrants revokes the licence on order.refunded, after the commit, on the workers.
      await until(
        `the licence of ${orderId} revoked`,
        async () => !(await json(await fetch(`${base}/api/licences`))).body.some((l: { orderId: string }) => l.orderId === orderId),
        10_000,
        100,
      );
      // Shipped once, whatever the deliveries since.
      expect(shipments.get(orderId)).toBe(1);
    },
  );

  it("the module's Swagger UI is at /api/payments/docs, behind the admin token", async () => {
    const anonymous = await fetch(`${base}/api/payments/docs`);
    expect(anonymous.status).toBe(401);
    const docs = await fetch(`${base}/api/payments/docs`, { headers: auth });
    expect(docs.status).toBe(200);
    expect(docs.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await docs.text()).toMatch(/swagger-ui/i);
  });

  it("the host's table is untouched, the module's tables are all in its own schema, the delivery is recorded once", async () => {
    expect((await db!.query(`SELECT id, label FROM public.orders ORDER BY id`)).rows).toEqual([SEED, ...posted]);
    const columns = await db!.query(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'orders' ORDER BY ordinal_position`,
    );
    expect(columns.rows.map((r) => r.column_name)).toEqual(['id', 'label']);
    // Nothing of the module's in public: the host's `licences` and `orders` are the only tables there.
    const inPublic = await db!.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`);
    expect(inPublic.rows.map((r) => r.tablename)).toEqual(['licences', 'orders']);
    const inModule = await db!.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'payment_webhooks'`);
    expect(inModule.rows.map((r) => r.tablename)).toEqual(
      expect.arrayContaining(['webhook_inbox', 'payments', 'fulfillments', 'outbox_message', 'pw_migrations', 'orders']),
    );
    const recorded = await db!.query(`SELECT count(*)::int AS n FROM payment_webhooks.webhook_inbox WHERE event_id = $1`, [eventId]);
    expect(recorded.rows[0].n).toBe(1);
  });

  it('SIGTERM closes the app through its shutdown hooks and the process ends within 10 s', async () => {
    host.child.kill('SIGTERM');
    const deadline = new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 10_000).unref());
    const exit = await Promise.race([host.exited, deadline]);
    // Nest re-raises the signal once the app is closed.
    expect({ exit, output: exit === 'still running' ? host.output.slice(-2000) : '' }).toEqual({
      exit: { code: null, signal: 'SIGTERM' },
      output: '',
    });
    // Killed by the signal alone, the module would not have said this: its workers and connections were closed.
    expect(host.output).toMatch(/shut down \(SIGTERM\): workers and connections closed/);
  }, 15_000);
});
