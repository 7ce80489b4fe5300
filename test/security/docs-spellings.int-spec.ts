import { CanActivate, ExecutionContext, INestApplication, UnauthorizedException } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import express from 'express';
import { configurePaymentWebhooksApp } from '../../src/configure-app';
import { fastifyAdapter } from '../../src/standalone';
import { createLogger } from '../../src/observability/logger';
import { PaymentWebhooksModule } from '../../src/payment-webhooks.module';
import { signedHeaders } from '../../src/testing/sign';
import { ADMIN_TOKEN, AUTH, createTestApp, deleteQueueKeys, Platform, PLATFORMS, secretOf, TEST_ENDPOINTS } from '../support/app';
import { bodies, uniqueId } from '../support/domain';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';

/**
 * The Swagger UI and the OpenAPI document need the admin token (or the host's guard) under every
 * spelling a router serves them by: another case, a trailing slash, a query string, percent
 * escapes, dot segments, an absolute-form request target. Requests go out with node:http exactly as
 * written (a client library may normalise the path). The token check that runs before any body
 * parser sees the path as the router does, percent escapes included.
 */

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function send(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: false,
        headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * What the UI page, its script and styles and the document carry (a 404 may quote the path, so the
 * name of an asset is not enough).
 */
const carriesDocs = (a: Answer) => /"openapi"\s*:|SwaggerUIBundle|<title>Swagger UI|\.swagger-ui/.test(a.body);
const UNAUTHORIZED = JSON.stringify({ error: 'unauthorized' });
/**
 * The frame rule of an answer: `X-Frame-Options` and whether a `Content-Security-Policy` (any of
 * them, Node joins repeated ones with ", ") has `frame-ancestors 'none'`.
 */
const frameRule = (a: Answer) => ({
  xFrameOptions: a.headers['x-frame-options'],
  frameAncestorsNone: /(?:^|[;,]\s*)frame-ancestors 'none'(?:\s*[;,]|$)/.test([a.headers['content-security-policy'] ?? ''].flat().join(', ')),
});
const NOT_FRAMED = { xFrameOptions: 'DENY', frameAncestorsNone: true };

/** `'refused'` when the status is one of the expected refusals, else the status itself (for the failure message). */
const refusal = (status: number, expected: number[]) => (expected.includes(status) ? 'refused' : status);

/** Spellings of the docs paths, after the module's base path. */
const SUFFIXES = [
  '/docs',
  '/docs/',
  '/DOCS',
  '/Docs/',
  '/docs/index.html',
  '/DOCS/INDEX.HTML',
  '/docs/swagger-ui-init.js',
  '/Docs/swagger-ui-init.js',
  '/docs/docs/swagger-ui-init.js',
  '/docs/swagger-ui.css',
  '/docs/swagger-ui-bundle.js',
  '/docs/index.html?x=1',
  '/docs-json',
  '/Docs-Json',
  '/DOCS-JSON',
  '/docs-json/',
  '/DOCS-JSON/',
  '/docs-json?x=1',
  '/docs-json/?',
  '/docs-json?',
  '/docs-json%2F',
  '/docs-json%2f',
  '/%64ocs-json',
  '/docs-%6Ason',
  '/%64ocs',
  '/%64ocs/',
  '/d%6Fcs/swagger-ui-init.js',
  '/docs/%73wagger-ui-init.js',
  '/docs//',
  '/docs-json//',
  '/docs-json;x',
  '/docs;x',
  '/docs/;x',
  '/docs/./',
  '/docs/.',
  '/docs/./index.html',
  '/docs/../docs-json',
  '/docs/%2e%2e/docs-json',
  '/docs-yaml',
  '/docs/login-token',
  '/Docs/Login-Token',
  '/docs/%6Cogin-token',
];

function spellings(base: string): string[] {
  const out = SUFFIXES.map((s) => `${base}${s}`);
  out.push(`//${base.slice(1)}${base ? '/' : ''}docs-json`.replace(/^\/\/\/+/, '//'));
  out.push(`http://127.0.0.1${base}/docs-json`, `http://localhost${base}/docs`, `http://127.0.0.1${base}/Docs-Json/`);
  if (base) {
    out.push(`${base.toUpperCase()}/docs-json`, `${base}/`.replace(/\/$/, '//docs-json'), `/%${base.charCodeAt(1).toString(16)}${base.slice(2)}/docs-json`);
  }
  return [...new Set(out)];
}

/**
 * Router settings a host may choose: Fastify ignoring case, trailing and duplicate slashes and what
 * follows a semicolon; Express matching case and the trailing slash exactly.
 */
const FASTIFY_LENIENT = { caseSensitive: false, ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, useSemicolonDelimiter: true };

/** The module in a host-composed app: the host's global prefix, set after configurePaymentWebhooksApp. */
async function hostApp(
  platform: Platform,
  options: { globalPrefix: string; routePrefix: string; adminGuard?: CanActivate; routerSettings?: boolean },
): Promise<{ app: INestApplication; close(): Promise<void> }> {
  const queuePrefix = `pwtest-${randomUUID().slice(0, 8)}`;
  const moduleRef = await Test.createTestingModule({
    imports: [
      PaymentWebhooksModule.forRoot({
        databaseUrl: TEST_DATABASE_URL,
        redisUrl: TEST_REDIS_URL,
        queuePrefix,
        endpoints: TEST_ENDPOINTS,
        carriers: [{ name: 'default', url: 'http://127.0.0.1:9' }],
        adminToken: ADMIN_TOKEN,
        logger: createLogger({ level: 'silent' }),
        migrationsRun: false,
        runWorkers: false,
        routePrefix: options.routePrefix,
        ...(options.adminGuard ? { adminGuard: options.adminGuard } : {}),
        tuning: { sweepIntervalMs: 60_000 },
      }),
    ],
  }).compile();
  // Nest's own body parser stays on, as in a host.
  const app =
    platform === 'fastify'
      ? moduleRef.createNestApplication(options.routerSettings ? new FastifyAdapter({ routerOptions: FASTIFY_LENIENT }) : await fastifyAdapter(), {
          logger: ['error'],
        })
      : options.routerSettings
        ? // Express reads these when it creates its router, at the first middleware: set on the app before Nest has it.
          moduleRef.createNestApplication(new ExpressAdapter(express().set('case sensitive routing', true).set('strict routing', true)), {
            logger: ['error'],
          })
        : moduleRef.createNestApplication({ logger: ['error'] });
  configurePaymentWebhooksApp(app);
  app.setGlobalPrefix(options.globalPrefix);
  await app.init();
  if (platform === 'fastify') await app.getHttpAdapter().getInstance().ready();
  return {
    app,
    close: async () => {
      await app.close();
      await deleteQueueKeys(queuePrefix);
    },
  };
}

/** Host guard: no `x-host-user` header is 401, `ops` passes, anyone else 403; it counts its calls. */
function countingGuard(): CanActivate & { calls: number } {
  const guard = {
    calls: 0,
    canActivate(ctx: ExecutionContext): boolean {
      guard.calls++;
      const user = ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-host-user'];
      if (user === undefined) throw new UnauthorizedException();
      return user === 'ops';
    },
  };
  return guard;
}

type Setup = { name: string; base: string; hostGuard: boolean; start(platform: Platform, guard: CanActivate): Promise<{ app: INestApplication; close(): Promise<void> }> };

const SETUPS: Setup[] = [
  { name: 'standalone', base: '', hostGuard: false, start: (platform) => createTestApp({}, { platform }) },
  { name: 'standalone, routePrefix pay', base: '/pay', hostGuard: false, start: (platform) => createTestApp({ routePrefix: 'pay' }, { platform }) },
  {
    name: 'host, global prefix api + routePrefix pay',
    base: '/api/pay',
    hostGuard: false,
    start: (platform) => hostApp(platform, { globalPrefix: 'api', routePrefix: 'pay' }),
  },
  {
    name: 'host, routePrefix pay, router settings of its own',
    base: '/pay',
    hostGuard: false,
    start: (platform) => hostApp(platform, { globalPrefix: '', routePrefix: 'pay', routerSettings: true }),
  },
  { name: 'host adminGuard', base: '', hostGuard: true, start: (platform, guard) => createTestApp({ adminGuard: guard }, { platform }) },
  {
    name: 'host adminGuard, global prefix api + routePrefix pay',
    base: '/api/pay',
    hostGuard: true,
    start: (platform, guard) => hostApp(platform, { globalPrefix: 'api', routePrefix: 'pay', adminGuard: guard }),
  },
  {
    name: 'host adminGuard, routePrefix pay, router settings of its own',
    base: '/pay',
    hostGuard: true,
    start: (platform, guard) => hostApp(platform, { globalPrefix: '', routePrefix: 'pay', adminGuard: guard, routerSettings: true }),
  },
];

describe.each(PLATFORMS)('%s: the docs need the token under every spelling', (platform) => {
  describe.each(SETUPS)('$name', (setup) => {
    const guard = countingGuard();
    let app: { app: INestApplication; close(): Promise<void> };
    let port: number;
    beforeAll(async () => {
      app = await setup.start(platform, guard);
      await app.app.listen(0, '127.0.0.1');
      port = (app.app.getHttpServer().address() as AddressInfo).port;
    });
    afterAll(() => app?.close());

    /** What lets a request in: the admin token, or what the host's guard wants. */
    const allowed: Record<string, string> = setup.hostGuard ? { 'x-host-user': 'ops' } : AUTH;

    it('the canonical paths serve the UI and the document once allowed (the cases below are meaningful)', async () => {
      const ui = await send(port, 'GET', `${setup.base}/docs`, allowed);
      expect(ui.status).toBe(200);
      expect(ui.body).toContain('<title>Swagger UI</title>');
      const doc = await send(port, 'GET', `${setup.base}/docs-json`, allowed);
      expect(doc.status).toBe(200);
      expect(JSON.parse(doc.body).openapi).toMatch(/^3\./);
    });

    if (platform === 'express' && setup.name.includes('router settings')) {
      it("Express's router settings are in force: another case or a trailing slash is routed nowhere", async () => {
        for (const path of [`${setup.base}/DOCS-JSON`, `${setup.base}/docs-json/`, `${setup.base.toUpperCase()}/docs`]) {
          expect({ path, status: (await send(port, 'GET', path, allowed)).status }).toEqual({ path, status: 404 });
        }
      });
    }
    if (platform === 'fastify' && setup.name.includes('router settings')) {
      it("Fastify's router settings serve the document under other spellings too (the cases below are meaningful)", async () => {
        for (const path of [`${setup.base.toUpperCase()}/Docs-Json/`, `${setup.base}//docs-json;x`, `/${setup.base}/%64ocs-json`]) {
          expect({ path, status: (await send(port, 'GET', path, allowed)).status }).toEqual({ path, status: 200 });
        }
      });
    }

    describe.each(['GET', 'HEAD'])('%s', (method) => {
      it.each(spellings(setup.base))('%s: no docs without the token; 401 wherever the allowed request is served', async (path) => {
        guard.calls = 0;
        const withAuth = await send(port, method, path, allowed);
        const callsWhenAllowed = guard.calls;
        const without = await send(port, method, path);
        // With the admin token but not what the host's guard wants: the host's guard still decides.
        const tokenOnly = setup.hostGuard ? await send(port, method, path, AUTH) : without;

        for (const refused of [without, tokenOnly]) {
          expect({ path, status: refusal(refused.status, [401, 404]), docs: carriesDocs(refused) }).toEqual({ path, status: 'refused', docs: false });
        }
        // Never in a frame: what the docs' check answers or lets through (the UI, its files, the
        // document, the login token) and its refusals (401, a host guard's 403) alike.
        for (const [which, answer] of [['allowed', withAuth], ['without', without], ['token only', tokenOnly]] as const) {
          if (answer.status === 404) continue;
          expect({ path, which, status: answer.status, ...frameRule(answer) }).toEqual({ path, which, status: answer.status, ...NOT_FRAMED });
        }
        if (withAuth.status < 400) {
          expect({ path, served: withAuth.status, without: without.status, tokenOnly: tokenOnly.status }).toEqual({
            path,
            served: withAuth.status,
            without: 401,
            tokenOnly: 401,
          });
          if (method === 'GET') expect(without.body).toBe(UNAUTHORIZED);
          if (setup.hostGuard) {
            // The host's guard decided on the served spelling; it is no basic-auth check.
            expect({ path, calls: callsWhenAllowed }).toEqual({ path, calls: 1 });
            expect(without.headers['www-authenticate'] ?? '').not.toMatch(/^Basic/);
          } else {
            expect(without.headers['www-authenticate']).toMatch(/^Basic/);
          }
        }
      });
    });
  });
});

const MISSING_ID = '00000000-0000-4000-8000-000000000000';

describe.each(PLATFORMS)('%s: the token is checked before the body is parsed, on the path the router routes', (platform) => {
  describe.each([
    { name: 'standalone', base: '', start: (p: Platform) => createTestApp({}, { platform: p }) },
    { name: 'standalone, routePrefix pay', base: '/pay', start: (p: Platform) => createTestApp({ routePrefix: 'pay' }, { platform: p }) },
    { name: 'host, global prefix api + routePrefix pay', base: '/api/pay', start: (p: Platform) => hostApp(p, { globalPrefix: 'api', routePrefix: 'pay' }) },
    {
      name: 'host, routePrefix pay, router settings of its own',
      base: '/pay',
      lenient: true,
      start: (p: Platform) => hostApp(p, { globalPrefix: '', routePrefix: 'pay', routerSettings: true }),
    },
  ])('$name', ({ base, start, lenient }) => {
    let app: { app: INestApplication; close(): Promise<void> };
    let port: number;
    beforeAll(async () => {
      app = await start(platform);
      await app.app.listen(0, '127.0.0.1');
      port = (app.app.getHttpServer().address() as AddressInfo).port;
    });
    afterAll(() => app?.close());

    /** Each spelling with the routers that route it to a guarded route of the module. */
    const spellingsOfOrders: Array<[string, Platform[]]> = [
      [`${base}/orders`, ['express', 'fastify']],
      [`${base}/orders/${MISSING_ID}/mark-paid`, ['express', 'fastify']],
      [`http://127.0.0.1${base}/orders`, ['express', 'fastify']],
      // Fastify's router decodes percent escapes; Express's matches the path as written.
      [`${base}/%6frders`, ['fastify']],
      [`${base}/%6Frders`, ['fastify']],
      [`${base}/o%72ders/${MISSING_ID}/mark-paid`, ['fastify']],
      [`${base}/orders/${MISSING_ID}/%6dark-paid`, ['fastify']],
      [`http://127.0.0.1${base}/%6frders`, ['fastify']],
    ];
    if (base) spellingsOfOrders.push([`/%${base.charCodeAt(1).toString(16)}${base.slice(2)}/orders`, ['fastify']]);
    // By default Express ignores case and a trailing slash, and Fastify routes neither: its answer to
    // a path it routes nowhere is its own (a 404, or its parser's 400 first). With the host's router
    // settings, the other way round.
    if (lenient) {
      if (platform === 'fastify') {
        spellingsOfOrders.push(
          [`${base}/orders/`, ['fastify']],
          [`${base}/ORDERS`, ['fastify']],
          [`${base.toUpperCase()}/%4Frders`, ['fastify']],
          [`/${base}//orders`, ['fastify']],
          [`${base}/orders;x`, ['fastify']],
        );
      }
    } else if (platform === 'express') {
      spellingsOfOrders.push([`${base}/orders/`, ['express']], [`${base}/ORDERS`, ['express']]);
    }

    it.each(spellingsOfOrders)("POST %s, a malformed JSON body, no token: 401 where routed, never the parser's 400", async (path, routedBy) => {
      const res = await send(port, 'POST', path, { 'content-type': 'application/json' }, '{"amount": ');
      // Express's body parser runs before its router: a spelling it routes nowhere still never gets
      // the parser's answer, though it may get a 404.
      const expected = routedBy.includes(platform) ? [401] : [401, 404];
      expect({ path, status: refusal(res.status, expected) }).toEqual({ path, status: 'refused' });
      if (res.status === 401) {
        expect(res.body).toBe(UNAUTHORIZED);
        expect(res.headers['www-authenticate']).toBe('Bearer');
      }
    });
  });
});

describe.each(PLATFORMS)('%s: the webhook route under every spelling its router serves: the raw bytes reach the signature check', (platform) => {
  let t: Awaited<ReturnType<typeof createTestApp>>;
  let port: number;
  beforeAll(async () => {
    t = await createTestApp({}, { platform });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
  });
  afterAll(() => t?.close());

  // A spelling the router routes to the webhook route must not have its body parsed first (the
  // signature would have nothing to check, and the answer would be a 500); one it routes nowhere is
  // a 404. Never a 5xx either way.
  it.each([
    ['/webhooks/standard-main', ['express', 'fastify']],
    ['/webhooks/standard%2Dmain', ['express', 'fastify']],
    ['http://127.0.0.1/webhooks/standard-main', ['express', 'fastify']],
    ['/%77ebhooks/standard-main', ['fastify']],
    ['/WEBHOOKS/standard-main', ['express']],
  ])('POST %s: accepted where routed, else 404', async (path, routedBy) => {
    const { eventId, body } = bodies.standard('payment.succeeded', uniqueId('pay'));
    const text = JSON.stringify(body);
    const res = await send(port, 'POST', path, { ...signedHeaders('standard', secretOf('standard-main'), text, { eventId }), 'content-type': 'application/json' }, text);
    if (routedBy.includes(platform)) {
      expect({ path, status: res.status, body: JSON.parse(res.body) }).toEqual({ path, status: 200, body: { status: 'accepted', eventId } });
    } else {
      expect({ path, status: res.status }).toEqual({ path, status: 404 });
    }
  });
});
