import request from 'supertest';
import { AUTH, createTestApp, TestApp, truncateAll } from '../support/app';

const base = { amount: '49.90', currency: 'EUR', shipTo: { name: 'A', line1: 'L', city: 'C', postalCode: 'P', country: 'GB' }, items: [{ sku: 'S', quantity: 1 }] };
describe('probe', () => {
  let t: TestApp;
  beforeAll(async () => { t = await createTestApp(); });
  afterAll(() => t.close());
  beforeEach(() => truncateAll(t.dataSource));
  it('dumps', async () => {
    const s = () => request(t.app.getHttpServer());
    const cases: Array<[string, unknown]> = [
      ['num', { ...base, amount: 49.9 }],
      ['3dec', { ...base, amount: '49.901' }],
      ['jpy', { ...base, amount: '1.5', currency: 'JPY' }],
      ['eux', { ...base, currency: 'EUX' }],
      ['lower', { ...base, currency: 'eur' }],
      ['noship', { ...base, shipTo: undefined }],
      ['xx', { ...base, shipTo: { ...base.shipTo, country: 'XX' } }],
      ['empty', { ...base, items: [] }],
      ['q0', { ...base, items: [{ sku: 'S', quantity: 0 }] }],
      ['q15', { ...base, items: [{ sku: 'S', quantity: 1.5 }] }],
      ['carrier', { ...base, carrier: 'nope' }],
      ['extra', { ...base, foo: 1 }],
      ['extranested', { ...base, shipTo: { ...base.shipTo, foo: 1 } }],
      ['noitems', { ...base, items: undefined }],
      ['itemsnull', { ...base, items: [null] }],
      ['shipstr', { ...base, shipTo: 'x' }],
      ['neg', { ...base, amount: '-1' }],
    ];
    for (const [n, b] of cases) {
      const r = await s().post('/orders').set(AUTH).send(b as object);
      console.log(n, r.status, JSON.stringify(r.body));
    }
    let r = await s().post('/orders').set(AUTH).set('content-type', 'application/json').send('{bad');
    console.log('badjson', r.status, JSON.stringify(r.body));
    r = await s().post('/orders').set(AUTH).send(base);
    console.log('ok', r.status, JSON.stringify(r.body));
    const id = r.body.id;
    for (const p of [{ provider: 'stripe', providerPaymentId: 'pi_1' }, { provider: 'paypal', providerPaymentId: 'x' }, { provider: 'stripe', providerPaymentId: 'x', merchantAccountId: 'acc_9' }, { provider: 'factuarea', providerPaymentId: 'x' }]) {
      r = await s().post(`/orders/${id}/payments`).set(AUTH).send(p);
      console.log('pay', r.status, JSON.stringify(r.body));
    }
    r = await s().post(`/orders/${id}/mark-paid`).set(AUTH).send({});
    console.log('mp', r.status, JSON.stringify(r.body));
    r = await s().post(`/orders/${id}/mark-paid`).set(AUTH).send({ reason: 'x' });
    console.log('mp', r.status, JSON.stringify(r.body));
    r = await s().post(`/orders/${id}/cancel`).set(AUTH);
    console.log('cancel', r.status, JSON.stringify(r.body));
    r = await s().post(`/orders/nope/cancel`).set(AUTH);
    console.log('cancel', r.status, JSON.stringify(r.body));
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'cursor=!!', 'cursor=YWJj', 'status=zzz', 'limit=1.5', 'foo=1']) {
      r = await s().get(`/orders?${q}`).set(AUTH);
      console.log('list', q, r.status, JSON.stringify(r.body));
    }
    for (const q of ['orderId=abc', 'provider=x', 'providerPaymentId=']) {
      r = await s().get(`/payments?${q}`).set(AUTH);
      console.log('plist', q, r.status, JSON.stringify(r.body));
    }
    r = await s().post('/orders').set(AUTH).set('Idempotency-Key', 'k'.repeat(256)).send(base);
    console.log('longkey', r.status, JSON.stringify(r.body));
    r = await s().get('/orders').set('Authorization', 'Basic ' + Buffer.from('u:test-admin-token').toString('base64'));
    console.log('basic', r.status, r.headers['www-authenticate']);
    r = await s().get('/orders');
    console.log('noauth', r.status, JSON.stringify(r.body), r.headers['www-authenticate']);
  });
});
