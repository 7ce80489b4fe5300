import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from 'pg';
import type { signedHeaders as SignedHeaders } from '../../src/testing';
import { freePort } from '../support/process';
import { cleanUp, closeServer, createDatabase, deleteKeys, dropDatabase, killAll, ProjectProcess, runIn as run, withDatabase } from '../support/npm-project';

/**
 * The README's "Use it in your NestJS app", done as a reader does it: a project made by `nest new`
 * (the Nest CLI 12 of the repository's devDependencies, its default: ES modules, `nodenext`,
 * `isolatedModules`, `emitDecoratorMetadata`), the README's install commands run as they are
 * written (the package name pointing at this repository's `npm pack`), the README's files copied
 * into it verbatim (every ```ts block whose first line names a path under src/), compiled with the
 * project's own TypeScript and built with `nest build`, then started on Express and on Fastify
 * beside a host `GET /health` of its own. Its `Licences` subscriber must grant one licence per paid
 * order, however often the payment's webhook comes.
 */
const REPO = join(__dirname, '..', '..');
const README = readFileSync(join(REPO, 'README.md'), 'utf8');
const RUN = `${process.pid}_${randomBytes(4).toString('hex')}`;
const STRIPE_SECRET = `whsec_nest_new_${randomBytes(8).toString('hex')}`;
const ADMIN_TOKEN = `nest-new-admin-${randomBytes(8).toString('hex')}`;
/** A Redis database of this run's own: the README's `queuePrefix` is a constant. */
const REDIS_URL = (() => {
  const url = new URL(process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379');
  url.pathname = `/${randomInt(1, 16)}`;
  return url.toString();
})();
const BASE_DB_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/payments_test';
const ADMIN_DB_URL = process.env.PW_TEST_ADMIN_URL ?? withDatabase(BASE_DB_URL, 'postgres');
const HOST_DB = `payments_nest_new_${RUN}`;
const HOST_DB_URL = withDatabase(ADMIN_DB_URL, HOST_DB);
/** The host's table the README's `Licences.grant` inserts into: no unique key, so a second grant would show. */
const LICENCES_DDL = `CREATE TABLE public.licences (order_id text NOT NULL, event_id text NOT NULL, granted_at timestamptz NOT NULL)`;
/** The host's own route, added to the AppController that `nest new` made. */
const APP_CONTROLLER = `import { Controller, Get } from '@nestjs/common';
import { AppService } from './app.service.js';

@Controller()
export class AppController {
  constructor(private readonly appService: AppService) {}

  @Get()
  getHello(): string {
    return this.appService.getHello();
  }

  @Get('health')
  health(): { host: string } {
    return { host: 'ok' };
  }
}
`;

let work: string | undefined;
let projectDir: string;
let tarball: string;
let signedHeaders: typeof SignedHeaders;
let carrier: Server | undefined;
let carrierUrl: string;
const shipments = new Map<string, number>();
let db: Client | undefined;
const children = new Set<ChildProcess>();
/** The module's orders paid so far, on either platform: each must have exactly one licence. */
const paidOrders: string[] = [];




/** The README's section "Use it in your NestJS app", up to the next `## `. */
function usageSection(): string {
  const start = README.indexOf('\n## Use it in your NestJS app\n');
  expect(start).toBeGreaterThan(0);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end);
}

function blocks(text: string, lang: string): string[] {
  const fence = new RegExp(`^\`\`\`${lang}\\n([\\s\\S]*?)^\`\`\`$`, 'gm');
  return [...text.matchAll(fence)].map((m) => m[1]);
}

/** The README's files: path → text, for Express (`// src/x.ts`) and the Fastify variants (`// src/x.ts, on Fastify`). */
function readmeFiles(): { express: Map<string, string>; fastify: Map<string, string> } {
  const express = new Map<string, string>();
  const fastify = new Map<string, string>();
  for (const code of blocks(README, 'ts')) {
    const named = /^\/\/ (src\/[\w./-]+\.ts)(, on Fastify)?\n/.exec(code);
    if (!named) continue;
    const to = named[2] ? fastify : express;
    expect(to.has(named[1])).toBe(false);
    to.set(named[1], code);
  }
  return { express, fastify };
}

/** Runs one of the README's shell lines in the project as written, with the package's name pointing at the tarball. */
async function shell(line: string): Promise<void> {
  const command = line.replace(/#.*$/, '').trim().replace(/(?<=^npm install .*)(?<=\s)nestjs-payment-webhooks(?=\s|$)/, tarball);
  await run('bash', ['-c', command], projectDir, 150_000);
}

async function build(main: string): Promise<void> {
  writeFileSync(join(projectDir, 'src', 'main.ts'), main);
  // The whole project as the editor sees it (tsconfig.json), then the build as `npm run build` makes it.
  await run('npx', ['tsc', '-p', 'tsconfig.json', '--noEmit'], projectDir, 90_000);
  await run('npm', ['run', 'build'], projectDir, 90_000);
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'pw-nest-new-'));
  // 1. The package as it is published: dist/ is built before Jest runs.
  const [packed] = JSON.parse(await run('npm', ['pack', '--json', '--pack-destination', work], REPO, 60_000)) as Array<{ filename: string }>;
  tarball = join(work, packed.filename);

  // 2. `nest new`, as the Nest CLI 12 makes a project by default, without installing yet.
  const cliManifest = require.resolve('@nestjs/cli/package.json', { paths: [REPO] });
  const cli = JSON.parse(readFileSync(cliManifest, 'utf8')) as { version: string; bin: Record<string, string> };
  expect(cli.version).toMatch(/^12\./);
  await run(process.execPath, [join(dirname(cliManifest), cli.bin.nest), 'new', 'shop', '--skip-install', '--skip-git', '--package-manager', 'npm', '--no-observe'], work, 60_000);
  projectDir = join(work, 'shop');
  const manifest = JSON.parse(readFileSync(join(projectDir, 'package.json'), 'utf8'));
  expect(manifest.type).toBe('module');
  const { compilerOptions } = JSON.parse(readFileSync(join(projectDir, 'tsconfig.json'), 'utf8'));
  expect(compilerOptions).toMatchObject({ module: 'nodenext', moduleResolution: 'nodenext', isolatedModules: true, emitDecoratorMetadata: true, experimentalDecorators: true });

  // 3. The README's install commands, line by line as written (Express's, then Fastify's).
  const commands = blocks(usageSection(), 'bash');
  expect(commands.length).toBe(2);
  for (const line of commands.join('\n').split('\n').filter((l) => l.trim() !== '')) await shell(line);
  const installed = JSON.parse(readFileSync(join(projectDir, 'package.json'), 'utf8'));
  expect(installed.overrides).toEqual({ typeorm: { ioredis: '$ioredis' } });
  expect(installed.dependencies['nestjs-payment-webhooks']).toMatch(/^file:/);
  // Every package the README's files import is a dependency of the project's own.
  const { express, fastify } = readmeFiles();
  const imported = new Set(
    [...express.values(), ...fastify.values()].flatMap((code) =>
      [...code.matchAll(/^import .* from '([^.'][^']*)';$/gm)].map((m) => (m[1].startsWith('@') ? m[1].split('/').slice(0, 2) : m[1].split('/').slice(0, 1)).join('/')),
    ),
  );
  expect([...imported].filter((name) => !name.startsWith('node:') && installed.dependencies[name] === undefined)).toEqual([]);

  // 4. The README's files verbatim, and the host's own /health.
  expect([...express.keys()].sort()).toEqual(['src/app.module.ts', 'src/licences.ts', 'src/main.ts']);
  expect([...fastify.keys()]).toEqual(['src/main.ts']);
  for (const [path, code] of express) writeFileSync(join(projectDir, path), code);
  writeFileSync(join(projectDir, 'src', 'app.controller.ts'), APP_CONTROLLER);

  const projectRequire = createRequire(join(projectDir, 'package.json'));
  signedHeaders = (projectRequire('nestjs-payment-webhooks/testing') as { signedHeaders: typeof SignedHeaders }).signedHeaders;

  carrier = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const orderId = (JSON.parse(text) as { orderId: string }).orderId;
      shipments.set(orderId, (shipments.get(orderId) ?? 0) + 1);
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: `shp_${randomBytes(4).toString('hex')}` }));
    });
  });
  await new Promise<void>((resolve) => carrier!.listen(0, '127.0.0.1', resolve));
  carrierUrl = `http://127.0.0.1:${(carrier.address() as { port: number }).port}`;

  await createDatabase(ADMIN_DB_URL, HOST_DB);
  db = new Client({ connectionString: HOST_DB_URL });
  await db.connect();
  await db.query(LICENCES_DDL);
}, 300_000);

afterAll(() =>
  cleanUp([
    () => killAll(children),
    () => db?.end(),
    () => closeServer(carrier),
    () => dropDatabase(ADMIN_DB_URL, HOST_DB),
    () => deleteKeys(REDIS_URL, 'shop-payments:*'),
    () => work && rmSync(work, { recursive: true, force: true }),
  ]), 30_000);

it("the README's app.module.ts names the module's own routePrefix and queuePrefix", () => {
  const appModule = readmeFiles().express.get('src/app.module.ts')!;
  expect(appModule).toMatch(/^\s+routePrefix: 'payments',/m);
  expect(appModule).toMatch(/^\s+queuePrefix: 'shop-payments',/m);
});


describe.each(['express', 'fastify'] as const)("the README's project on %s", (platform) => {
  let app: ProjectProcess;
  let base: string;
  const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };
  const json = async (res: Response): Promise<{ status: number; body: any }> => ({ status: res.status, body: await res.json() });
  const send = async (path: string, payload: unknown) =>
    json(await fetch(`${base}/payments${path}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(payload) }));
  /** Stripe's `payment_intent.succeeded` for 49.90 EUR to the README's merchant account. */
  const succeeded = (id: string, intent: string) =>
    JSON.stringify({
      id,
      object: 'event',
      created: Math.floor(Date.now() / 1000),
      livemode: false,
      type: 'payment_intent.succeeded',
      account: 'acct_123',
      data: { object: { id: intent, object: 'payment_intent', amount_received: 4990, currency: 'eur', metadata: {} } },
    });
  const deliver = async (body: string) =>
    json(await fetch(`${base}/payments/webhooks/stripe-main`, { method: 'POST', headers: signedHeaders('stripe', STRIPE_SECRET, body), body }));
  async function orderOnceIn(orderId: string, status: string) {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const view = (await json(await fetch(`${base}/payments/orders/${orderId}`, { headers: auth }))).body;
      if (view.status === status) return view;
      if (Date.now() > deadline) throw new Error(`order ${orderId} is still ${view.status} after 20 s:\n${app.output.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  async function licences(): Promise<Array<{ order_id: string; n: number }>> {
    return (await db!.query(`SELECT order_id, count(*)::int AS n FROM public.licences GROUP BY order_id ORDER BY min(granted_at)`)).rows;
  }

  beforeAll(async () => {
    const { express, fastify } = readmeFiles();
    await build((platform === 'fastify' ? fastify : express).get('src/main.ts')!);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    app = new ProjectProcess(projectDir, { DATABASE_URL: HOST_DB_URL, REDIS_URL, ADMIN_TOKEN, STRIPE_WEBHOOK_SECRET: STRIPE_SECRET, CARRIER_URL: carrierUrl, PORT: String(port) });
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (!app.running) throw new Error(`the project exited before listening:\n${app.output}`);
      if (await fetch(`${base}/health`).then((r) => r.ok, () => false)) break;
      if (Date.now() > deadline) throw new Error(`the project did not answer within 30 s:\n${app.output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 240_000);

  afterAll(() => {
    if (app?.running) app.child.kill('SIGKILL');
  });

  it(`runs on ${platform}, with the README's subscribers found`, async () => {
    // Express tags a JSON answer with an ETag of its own; Fastify does not.
    const health = await fetch(`${base}/health`);
    expect({ platform, etag: health.headers.has('etag') }).toEqual({ platform, etag: platform === 'express' });
    expect(app.output).toMatch(/Licences\.grant subscribes to order\.paid \(in the transaction\)/);
    expect(app.output).toMatch(/Licences\.revoke subscribes to order\.refunded/);
  });

  it("GET /health is the host's own; the module's health is at /payments/health", async () => {
    expect(await json(await fetch(`${base}/health`))).toEqual({ status: 200, body: { host: 'ok' } });
    const health = await json(await fetch(`${base}/payments/health`));
    expect(health).toMatchObject({ status: 200, body: { status: 'ok' } });
    const ready = await json(await fetch(`${base}/payments/health/ready`));
    expect(ready).toMatchObject({ status: 200, body: { status: 'ok', info: { database: { status: 'up' }, redis: { status: 'up' } } } });
  });

  it("the README's Licences.grant runs once per paid order: twice the same webhook, a second order", async () => {
    for (let i = 0; i < 2; i++) {
      const order = await send('/orders', {
        amount: '49.90',
        currency: 'EUR',
        shipTo: { name: 'Ada Lovelace', line1: '12 St James Sq', city: 'London', postalCode: 'SW1Y 4JH', country: 'GB' },
        items: [{ sku: 'LICENCE-1Y', quantity: 1 }],
      });
      expect(order.status).toBe(201);
      const orderId = order.body.id as string;
      const intent = `pi_nest_new_${platform}_${i}_${randomBytes(6).toString('hex')}`;
      expect((await send(`/orders/${orderId}/payments`, { provider: 'stripe', providerPaymentId: intent })).status).toBe(201);

      const eventId = `evt_nest_new_${platform}_${i}_${randomBytes(6).toString('hex')}`;
      const body = succeeded(eventId, intent);
      expect(await deliver(body)).toEqual({ status: 200, body: { status: 'accepted', eventId } });
      expect(await deliver(body)).toEqual({ status: 200, body: { status: 'duplicate', eventId } });
      paidOrders.push(orderId);

      // Paid, then shipped once by the carrier at CARRIER_URL: every job of the order has run.
      await orderOnceIn(orderId, 'fulfilled');
      expect(shipments.get(orderId)).toBe(1);
      // One licence per paid order, this one's included, committed with the order's change.
      expect(await licences()).toEqual(paidOrders.map((order_id) => ({ order_id, n: 1 })));
      expect(await deliver(body)).toEqual({ status: 200, body: { status: 'duplicate', eventId } });
    }
    const events = await db!.query(`SELECT DISTINCT event_id FROM public.licences`);
    expect(events.rows).toHaveLength(paidOrders.length);
  });

  it('SIGTERM closes the app through its shutdown hooks', async () => {
    app.child.kill('SIGTERM');
    const deadline = new Promise<'still running'>((resolve) => setTimeout(() => resolve('still running'), 10_000).unref());
    expect(await Promise.race([app.exited, deadline])).toEqual({ code: null, signal: 'SIGTERM' });
    expect(app.output).toMatch(/shut down \(SIGTERM\): workers and connections closed/);
    // Only now, with the workers closed, is "once" final: nothing was granted late.
    expect(await licences()).toEqual(paidOrders.map((order_id) => ({ order_id, n: 1 })));
  }, 15_000);
});
