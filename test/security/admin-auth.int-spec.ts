import request from 'supertest';
import { signedHeaders } from '../../src/testing/sign';
import { ADMIN_TOKEN, AUTH, createTestApp, PLATFORMS, secretOf, TestApp, truncateAll } from '../support/app';
import { countRows, createOrder, MISSING_ID } from '../payments/api-helpers';

/**
 * Issue 12, findings 1 and 7. Basic auth only on /docs and /docs-json (CONTRACT §4: the browser's
 * prompt); every other admin/API route takes `Authorization: Bearer <token>` only, so a browser
 * that logged into /docs attaches nothing a cross-site form could use. No state-changing route
 * takes a body a form can send (415 unsupported_media_type). And the token is checked before
 * anything reads the request: an unauthenticated request answers 401 whatever its body or query.
 */

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe.each(PLATFORMS)('%s: Basic auth only on the docs; no form-reachable state change; auth first', (platform) => {
  let t: TestApp;
  const http = () => request(t.app.getHttpServer());
  beforeAll(async () => {
    t = await createTestApp({}, { platform });
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  /** One delivery, processed long ago: what a purge would delete. */
  async function purgeableDelivery(): Promise<void> {
    const eventId = `evt_sec_${Math.random().toString(36).slice(2)}`;
    const body = JSON.stringify({ event_id: eventId, type: 'invoice.updated', data: { object: 'invoice', id: 'inv_sec' } });
    const res = await http().post('/webhooks/paymos-a').set(signedHeaders('paymos', secretOf('paymos-a'), body, { eventId })).send(body);
    expect(res.status).toBe(200);
    await t.dataSource.query(
      `UPDATE webhook_inbox SET status = 'ignored', outcome = 'no_handler', received_at = now() - interval '400 days', processed_at = now() - interval '400 days'`,
    );
  }

  const orderStatus = async (id: string) =>
    (await t.dataSource.query(`SELECT status FROM orders WHERE id = $1`, [id]))[0].status as string;

  describe('Basic credentials (the right token as password) on an API route: 401, nothing changed', () => {
    it('POST /orders/{id}/mark-paid', async () => {
      const order = await createOrder(t);
      const res = await http()
        .post(`/orders/${order.id}/mark-paid`)
        .set('Authorization', basic('admin', ADMIN_TOKEN))
        .send({ reason: 'csrf' });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'unauthorized' });
      expect(await orderStatus(order.id)).toBe('awaiting_payment');
      expect(await countRows(t, 'outbox_message')).toBe(0);
    });

    it('POST /admin/retention/purge', async () => {
      await purgeableDelivery();
      const res = await http().post('/admin/retention/purge').set('Authorization', basic('', ADMIN_TOKEN));
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'unauthorized' });
      expect(await countRows(t, 'webhook_inbox')).toBe(1);
    });

    it.each([
      ['get', '/orders'],
      ['get', '/admin/webhook-deliveries'],
      ['get', '/metrics'],
      ['post', '/orders'],
    ] as const)('%s %s', async (method, path) => {
      const res = await http()[method](path).set('Authorization', basic('ops', ADMIN_TOKEN));
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'unauthorized' });
    });

    it('the same credentials still open /docs and /docs-json', async () => {
      expect((await http().get('/docs').set('Authorization', basic('ops', ADMIN_TOKEN))).status).toBe(200);
      expect((await http().get('/docs-json').set('Authorization', basic('ops', ADMIN_TOKEN))).status).toBe(200);
    });
  });

  describe('a body a cross-site form can send, with the bearer token: 415, nothing changed', () => {
    it.each([
      ['text/plain', '{"reason":"csrf"}'],
      ['text/plain; charset=utf-8', 'reason=csrf'],
      ['application/x-www-form-urlencoded', 'reason=csrf'],
      ['multipart/form-data; boundary=xyz', '--xyz\r\nContent-Disposition: form-data; name="reason"\r\n\r\ncsrf\r\n--xyz--\r\n'],
    ])('POST /orders/{id}/mark-paid with %s', async (type, body) => {
      const order = await createOrder(t);
      const res = await http().post(`/orders/${order.id}/mark-paid`).set(AUTH).set('Content-Type', type).send(body);
      expect(res.status).toBe(415);
      expect(res.body).toEqual({ error: 'unsupported_media_type' });
      expect(await orderStatus(order.id)).toBe('awaiting_payment');
    });

    it.each(['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=xyz'])(
      'POST /admin/retention/purge with %s',
      async (type) => {
        await purgeableDelivery();
        const res = await http().post('/admin/retention/purge').set(AUTH).set('Content-Type', type).send('');
        expect(res.status).toBe(415);
        expect(res.body).toEqual({ error: 'unsupported_media_type' });
        expect(await countRows(t, 'webhook_inbox')).toBe(1);
      },
    );

    it('POST /orders with a urlencoded body', async () => {
      const res = await http().post('/orders').set(AUTH).set('Content-Type', 'application/x-www-form-urlencoded').send('amount=1&currency=EUR');
      expect(res.status).toBe(415);
      expect(await countRows(t, 'orders')).toBe(0);
    });

    it('JSON (with a charset) and no body at all still work', async () => {
      const order = await createOrder(t);
      const paid = await http()
        .post(`/orders/${order.id}/mark-paid`)
        .set(AUTH)
        .set('Content-Type', 'application/json; charset=utf-8')
        .send(JSON.stringify({ reason: 'support' }));
      expect(paid.status).toBe(200);
      expect(paid.body.status).toBe('paid');
      await purgeableDelivery();
      const purged = await http().post('/admin/retention/purge').set(AUTH);
      expect(purged.status).toBe(200);
      expect(purged.body).toEqual({ deleted: 1 });
    });
  });

  describe('auth before validation: no token, whatever the body or query: 401', () => {
    it.each([
      ['a NUL in the query', 'get', '/orders?status=a%00b', undefined, undefined],
      ['a NUL in the query of the archive', 'get', '/admin/webhook-deliveries?eventId=%00', undefined, undefined],
      ['an escaped NUL in a JSON body', 'post', '/orders', 'application/json', '{"reference":"a\\u0000b"}'],
      ['a raw NUL byte in a JSON body', 'post', `/orders/${MISSING_ID}/mark-paid`, 'application/json', '{"reason":"a\u0000b"}'],
      ['a body that is not JSON', 'post', '/admin/reconciliation', 'application/json', '{"provider":'],
      ['a urlencoded body', 'post', '/admin/retention/purge', 'application/x-www-form-urlencoded', 'a=1'],
      ['a multipart body', 'post', `/orders/${MISSING_ID}/cancel`, 'multipart/form-data; boundary=xyz', '--xyz--\r\n'],
      ['a text/plain body', 'post', '/admin/backfill', 'text/plain', 'hello\u0000'],
    ] as const)('%s: 401 unauthorized', async (_name, method, path, type, body) => {
      let req = http()[method](path);
      if (type) req = req.set('Content-Type', type);
      const res = await (body === undefined ? req : req.send(body));
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'unauthorized' });
      expect(await countRows(t, 'orders')).toBe(0);
    });

    it('with the token, the NUL is refused by validation (400)', async () => {
      const res = await http().get('/orders?status=a%00b').set(AUTH);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('validation_failed');
    });
  });

  it('the OpenAPI document says so: bearer only on the API, 415 on every state-changing route but the webhook', async () => {
    const doc = (await http().get('/docs-json').set(AUTH)).body as {
      paths: Record<string, Record<string, { security?: Array<Record<string, string[]>>; responses: Record<string, { content?: Record<string, { example?: unknown }> }> }>>;
    };
    const posts = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })));
    for (const { path, method, op } of posts) {
      for (const requirement of op.security ?? []) expect({ path, schemes: Object.keys(requirement) }).toEqual({ path, schemes: ['admin'] });
      if (method !== 'post') continue;
      const example = op.responses['415']?.content?.['application/json']?.example;
      expect({ path, example }).toEqual({ path, example: path === '/webhooks/{endpointId}' ? undefined : { error: 'unsupported_media_type' } });
    }
  });
});
