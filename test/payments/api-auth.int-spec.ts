import { signedHeaders } from '../../src/testing/sign';
import { ADMIN_TOKEN, AUTH, createTestApp, PLATFORMS, secretOf, TestApp, truncateAll } from '../support/app';
import { countRows, createOrder, http, MISSING_ID, orderBody } from './api-helpers';

/** Every route of CONTRACT §3, with a body that would be valid: the guard must answer first. */
const ROUTES: Array<{ method: 'get' | 'post'; path: string; body?: object }> = [
  { method: 'post', path: '/orders', body: orderBody() },
  { method: 'get', path: '/orders' },
  { method: 'get', path: `/orders/${MISSING_ID}` },
  { method: 'post', path: `/orders/${MISSING_ID}/payments`, body: { provider: 'stripe', providerPaymentId: 'pi_auth' } },
  { method: 'post', path: `/orders/${MISSING_ID}/mark-paid`, body: { reason: 'auth test' } },
  { method: 'post', path: `/orders/${MISSING_ID}/cancel` },
  { method: 'get', path: '/payments' },
  { method: 'get', path: `/payments/${MISSING_ID}` },
];

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

function standardWebhook(eventId: string): { body: string; headers: Record<string, string> } {
  const body = JSON.stringify({
    type: 'payment.succeeded',
    timestamp: new Date().toISOString(),
    data: { payment_id: `pay_${eventId}`, amount: 4990, currency: 'EUR', account_id: 'acc_1' },
  });
  return { body, headers: signedHeaders('standard', secretOf('standard-main'), body, { eventId }) };
}

describe.each(PLATFORMS)('%s: API auth: the admin token on every orders/payments route (CONTRACT §3)', (platform) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({}, { platform });
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  describe.each(ROUTES)('$method $path', ({ method, path, body }) => {
    const send = (headers: Record<string, string>) => {
      const req = http(t)[method](path).set(headers);
      return body ? req.send(body) : req;
    };

    it('no token: 401 unauthorized, nothing written', async () => {
      const res = await send({});
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'unauthorized' });
      expect(await countRows(t, 'orders')).toBe(0);
      expect(await countRows(t, 'idempotency_keys')).toBe(0);
    });

    it('wrong bearer token: 401 unauthorized', async () => {
      const res = await send({ Authorization: `Bearer ${ADMIN_TOKEN}x` });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'unauthorized' });
    });

    it('basic auth with a wrong password: 401 unauthorized', async () => {
      const res = await send({ Authorization: basic('admin', 'not-the-token') });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'unauthorized' });
    });
  });

  it.each([
    ['a bearer scheme with no token', 'Bearer'],
    ['an empty bearer token', 'Bearer '],
    ['the token without a scheme', ADMIN_TOKEN],
    ['the token as the basic user name, not the password', basic(ADMIN_TOKEN, '')],
    ['basic auth with no colon', `Basic ${Buffer.from(ADMIN_TOKEN).toString('base64')}`],
  ])('%s: 401 unauthorized', async (_name, authorization) => {
    const res = await http(t).get('/orders').set('Authorization', authorization);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'unauthorized' });
  });

  it('the bearer token is accepted', async () => {
    const res = await http(t).get('/orders').set(AUTH);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [], nextCursor: null });
  });

  // CONTRACT §3, §4: basic auth is for /docs only (issue 12 finding 1): a browser attaches it to cross-site forms.
  it('basic auth with the token as password is refused on reads and writes: 401, nothing written', async () => {
    const list = await http(t).get('/orders').set('Authorization', basic('any-user', ADMIN_TOKEN));
    expect(list.status).toBe(401);
    expect(list.body).toEqual({ error: 'unauthorized' });

    const created = await http(t).post('/orders').set('Authorization', basic('someone', ADMIN_TOKEN)).send(orderBody());
    expect(created.status).toBe(401);
    expect(await countRows(t, 'orders')).toBe(0);
  });

  it('an order is not readable with basic auth', async () => {
    const order = await createOrder(t);
    const res = await http(t).get(`/orders/${order.id}`).set('Authorization', basic('', ADMIN_TOKEN));
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'unauthorized' });
  });

  it('the webhooks route needs no token', async () => {
    const { body, headers } = standardWebhook('msg_auth_1');
    const res = await http(t).post('/webhooks/standard-main').set(headers).send(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId: 'msg_auth_1' });
    expect(await countRows(t, 'webhook_inbox')).toBe(1);
  });
});

describe.each(PLATFORMS)('%s: API auth: no ADMIN_TOKEN configured (CONTRACT §3)', (platform) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ adminToken: null }, { platform });
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  describe.each(ROUTES)('$method $path', ({ method, path, body }) => {
    it.each([
      ['no Authorization header', {}],
      ['the usual bearer token', AUTH],
      ['basic auth with the usual token', { Authorization: basic('admin', ADMIN_TOKEN) }],
    ])('%s: 503 admin_disabled, never open', async (_name, headers) => {
      const req = http(t)[method](path).set(headers);
      const res = await (body ? req.send(body) : req);
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: 'admin_disabled' });
      expect(await countRows(t, 'orders')).toBe(0);
    });
  });

  it('the webhooks route still works without a token', async () => {
    const { body, headers } = standardWebhook('msg_auth_2');
    const res = await http(t).post('/webhooks/standard-main').set(headers).send(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId: 'msg_auth_2' });
    expect(await countRows(t, 'webhook_inbox')).toBe(1);
  });
});
