import request from 'supertest';
import { CanActivate, ExecutionContext } from '@nestjs/common';
import { signedHeaders } from '../../src/testing/sign';
import { ADMIN_TOKEN, AUTH, createTestApp, PLATFORMS, secretOf, TestApp, truncateAll } from '../support/app';

/**
 * CONTRACT §3 and §4: the admin token on every route but webhooks and health, /docs and
 * /docs-json included (bearer; basic auth on the docs only); 503 admin_disabled when no token is configured;
 * a host-provided guard in place of the token.
 */

/** A well-formed UUID that no row has. */
const MISSING_ID = '00000000-0000-4000-8000-000000000000';

const ORDER_BODY = {
  amount: '49.90',
  currency: 'EUR',
  shipTo: { name: 'Ada Lovelace', line1: '12 Analytical Row', city: 'London', postalCode: 'N1 9GU', country: 'GB' },
  items: [{ sku: 'SKU-1', quantity: 1 }],
};

interface Route {
  method: 'get' | 'post';
  path: string;
  body?: object;
  /** What the route answers once authorised (a valid request, unknown ids where it takes one). */
  authorised: number;
}

/** Every route of CONTRACT §3 and §4 but webhooks, health and the docs. */
const API_ROUTES: Route[] = [
  { method: 'post', path: '/orders', body: ORDER_BODY, authorised: 201 },
  { method: 'get', path: '/orders', authorised: 200 },
  { method: 'get', path: `/orders/${MISSING_ID}`, authorised: 404 },
  { method: 'post', path: `/orders/${MISSING_ID}/payments`, body: { provider: 'stripe', providerPaymentId: 'pi_auth' }, authorised: 404 },
  { method: 'post', path: `/orders/${MISSING_ID}/mark-paid`, body: { reason: 'auth test' }, authorised: 404 },
  { method: 'post', path: `/orders/${MISSING_ID}/cancel`, authorised: 404 },
  { method: 'get', path: `/orders/${MISSING_ID}/history`, authorised: 404 },
  { method: 'get', path: '/payments', authorised: 200 },
  { method: 'get', path: `/payments/${MISSING_ID}`, authorised: 404 },
  { method: 'get', path: '/admin/webhook-deliveries', authorised: 200 },
  { method: 'get', path: `/admin/webhook-deliveries/${MISSING_ID}`, authorised: 404 },
  { method: 'post', path: `/admin/webhook-deliveries/${MISSING_ID}/reprocess`, authorised: 404 },
  { method: 'get', path: '/admin/outbox', authorised: 200 },
  { method: 'post', path: `/admin/outbox/${MISSING_ID}/retry`, authorised: 404 },
  { method: 'post', path: '/admin/reconciliation', body: { provider: 'paymos', merchantAccountId: 'acc_1' }, authorised: 200 },
  { method: 'post', path: '/admin/retention/purge', authorised: 200 },
  { method: 'get', path: '/metrics', authorised: 200 },
];

const DOCS_ROUTES: Route[] = [
  { method: 'get', path: '/docs', authorised: 200 },
  { method: 'get', path: '/docs-json', authorised: 200 },
];

const ALL_ROUTES = [...API_ROUTES, ...DOCS_ROUTES];

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

function call(t: TestApp, route: Route, headers: Record<string, string>) {
  const req = request(t.app.getHttpServer())[route.method](route.path).set(headers);
  return route.body ? req.send(route.body) : req;
}

function signedDelivery(eventId: string): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({ event_id: eventId, type: 'invoice.updated', data: { object: 'invoice', id: 'inv_auth' } });
  return { body, headers: signedHeaders('paymos', secretOf('paymos-a'), body, { eventId }) };
}

describe.each(PLATFORMS)('%s: admin token on every route but webhooks and health (CONTRACT §3, §4)', (platform) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({}, { platform });
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  describe.each(ALL_ROUTES)('$method $path', (route) => {
    it('no token: 401 {"error":"unauthorized"}', async () => {
      const res = await call(t, route, {});
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'unauthorized' });
    });

    it('wrong bearer token: 401 {"error":"unauthorized"}', async () => {
      const res = await call(t, route, { Authorization: `Bearer ${ADMIN_TOKEN}-wrong` });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'unauthorized' });
    });

    it('wrong basic password: 401 {"error":"unauthorized"}', async () => {
      const res = await call(t, route, { Authorization: basic('admin', 'not-the-token') });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'unauthorized' });
    });

    it(`the bearer token passes: the route's own answer`, async () => {
      const res = await call(t, route, AUTH);
      expect(res.status).toBe(route.authorised);
      if (route.authorised === 404) expect(res.body).toEqual({ error: 'not_found' });
    });
  });

  describe.each(DOCS_ROUTES)('$path asks a browser for credentials', ({ path }) => {
    it.each([
      ['no Authorization header', {}],
      ['a wrong bearer token', { Authorization: 'Bearer nope' }],
      ['a wrong basic password', { Authorization: basic('ops', 'nope') }],
    ])('%s: 401 with WWW-Authenticate: Basic', async (_name, headers) => {
      const res = await request(t.app.getHttpServer()).get(path).set(headers);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'unauthorized' });
      expect(res.headers['www-authenticate']).toMatch(/^Basic/);
    });
  });

  it.each([
    ['bearer', AUTH],
    ['basic auth, any user name', { Authorization: basic('whoever', ADMIN_TOKEN) }],
    ['basic auth, empty user name', { Authorization: basic('', ADMIN_TOKEN) }],
  ])('/docs with %s: 200, the Swagger UI page', async (_name, headers) => {
    const res = await request(t.app.getHttpServer()).get('/docs').set(headers);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain('<title>Swagger UI</title>');
    expect(res.text).toContain('swagger-ui');
  });

  it.each([
    ['bearer', AUTH],
    ['basic auth, any user name', { Authorization: basic('whoever', ADMIN_TOKEN) }],
  ])('/docs-json with %s: 200, the OpenAPI 3 document', async (_name, headers) => {
    const res = await request(t.app.getHttpServer()).get('/docs-json').set(headers);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body.openapi).toMatch(/^3\./);
    expect(Object.keys(res.body.paths)).toContain('/webhooks/{endpointId}');
  });

  it('the Swagger UI assets under /docs need the token too', async () => {
    for (const asset of ['/docs/', '/docs/swagger-ui-init.js', '/docs/swagger-ui.css']) {
      const res = await request(t.app.getHttpServer()).get(asset);
      expect({ asset, status: res.status, body: res.body }).toEqual({ asset, status: 401, body: { error: 'unauthorized' } });
    }
    const init = await request(t.app.getHttpServer()).get('/docs/swagger-ui-init.js').set(AUTH);
    expect(init.status).toBe(200);
  });

  it('no other form of the OpenAPI document is served without the token (/docs-yaml)', async () => {
    const res = await request(t.app.getHttpServer()).get('/docs-yaml');
    expect(res.text).not.toContain('openapi:');
    expect([401, 404]).toContain(res.status);
  });

  it('the webhook route needs no token', async () => {
    const { body, headers } = signedDelivery('evt_auth_docs_1');
    const res = await request(t.app.getHttpServer()).post('/webhooks/paymos-a').set(headers).send(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId: 'evt_auth_docs_1' });
  });

  it('/health and /health/ready need no token', async () => {
    const live = await request(t.app.getHttpServer()).get('/health');
    expect(live.status).toBe(200);
    expect(live.body.status).toBe('ok');
    const ready = await request(t.app.getHttpServer()).get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ok');
  });
});

describe.each(PLATFORMS)('%s: no ADMIN_TOKEN configured: 503 admin_disabled, never open (CONTRACT §1, §3)', (platform) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ adminToken: null }, { platform });
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  describe.each(ALL_ROUTES)('$method $path', (route) => {
    it.each([
      ['no Authorization header', {}],
      ['the usual bearer token', AUTH],
      ['basic auth with the usual token', { Authorization: basic('admin', ADMIN_TOKEN) }],
      ['an empty bearer token', { Authorization: 'Bearer ' }],
    ])('%s: 503 {"error":"admin_disabled"}', async (_name, headers) => {
      const res = await call(t, route, headers);
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: 'admin_disabled' });
    });
  });

  it('nothing was written by the refused calls', async () => {
    for (const route of ALL_ROUTES) await call(t, route, AUTH);
    const [{ n }] = await t.dataSource.query(`SELECT count(*)::int AS n FROM orders`);
    expect(n).toBe(0);
  });

  it('/docs-yaml is not served either', async () => {
    const res = await request(t.app.getHttpServer()).get('/docs-yaml');
    expect(res.text).not.toContain('openapi:');
    expect(res.status).not.toBe(200);
  });

  it('webhooks and health still answer without a token', async () => {
    const { body, headers } = signedDelivery('evt_auth_docs_2');
    const res = await request(t.app.getHttpServer()).post('/webhooks/paymos-a').set(headers).send(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId: 'evt_auth_docs_2' });
    expect((await request(t.app.getHttpServer()).get('/health')).status).toBe(200);
    expect((await request(t.app.getHttpServer()).get('/health/ready')).status).toBe(200);
  });
});

describe.each(PLATFORMS)('%s: a host-provided guard replaces the token check (adminGuard option)', (platform) => {
  const hostGuard: CanActivate = {
    canActivate: (ctx: ExecutionContext) => ctx.switchToHttp().getRequest().headers['x-host-user'] === 'ops',
  };
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ adminGuard: hostGuard }, { platform });
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  describe.each(API_ROUTES)('$method $path', (route) => {
    it('x-host-user: ops, no token: the route answers', async () => {
      const res = await call(t, route, { 'x-host-user': 'ops' });
      expect(res.status).toBe(route.authorised);
      if (route.authorised === 404) expect(res.body).toEqual({ error: 'not_found' });
    });

    it('without the host header: 403, even with the admin token', async () => {
      const none = await call(t, route, {});
      expect(none.status).toBe(403);
      expect(none.body).toEqual({ error: expect.stringMatching(/^[a-z_]+$/) });
      const withToken = await call(t, route, { ...AUTH, 'x-host-user': 'someone-else' });
      expect(withToken.status).toBe(403);
    });
  });

  it('nothing is written by a refused call', async () => {
    await call(t, API_ROUTES[0], {});
    const [{ n }] = await t.dataSource.query(`SELECT count(*)::int AS n FROM orders`);
    expect(n).toBe(0);
  });

  // Issue 12 finding 9a: the host's guard decides on the docs as on every other route.
  it('/docs and /docs-json are guarded by the host guard: x-host-user ops 200; without it 403, even with the token', async () => {
    for (const path of ['/docs', '/docs-json']) {
      const hostOnly = await request(t.app.getHttpServer()).get(path).set('x-host-user', 'ops');
      expect(hostOnly.status).toBe(200);
      const token = await request(t.app.getHttpServer()).get(path).set(AUTH);
      expect(token.status).toBe(403);
      expect(token.body).toEqual({ error: 'forbidden' });
    }
  });

  it('webhooks and health need neither', async () => {
    const { body, headers } = signedDelivery('evt_auth_docs_3');
    const res = await request(t.app.getHttpServer()).post('/webhooks/paymos-a').set(headers).send(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId: 'evt_auth_docs_3' });
    expect((await request(t.app.getHttpServer()).get('/health')).status).toBe(200);
    expect((await request(t.app.getHttpServer()).get('/health/ready')).status).toBe(200);
  });
});
