import { getQueueToken } from '@nestjs/bullmq';
import { QueueName } from '../../src/jobs/queues';
import type { Queue } from 'bullmq';
import request from 'supertest';

import { signedHeaders } from '../../src/testing/sign';
import { createTestApp, PLATFORMS, secretOf, TestApp, truncateAll } from '../support/app';
import { signatureVectors } from '../support/fixtures';

function paymosBody(eventId: string, invoiceId = 'inv_51ab77c0'): string {
  return JSON.stringify({
    event_id: eventId,
    type: 'invoice.paid',
    created: 1790590561,
    data: { object: 'invoice', id: invoiceId, status: 'paid', price_amount: '49.90', price_currency: 'EUR' },
  });
}

describe.each(PLATFORMS)('%s: POST /webhooks/:endpointId (real PostgreSQL and Redis)', (platform) => {
  let t: TestApp;
  let queue: Queue;

  beforeAll(async () => {
    t = await createTestApp({}, { platform });
    queue = t.get<Queue>(getQueueToken(QueueName.Inbox));
  });
  afterAll(() => t?.close());
  beforeEach(async () => {
    t.clock.reset();
    await truncateAll(t.dataSource);
    await queue.obliterate({ force: true });
  });

  const rows = async () =>
    (await t.dataSource.query(`SELECT count(*)::int AS n FROM webhook_inbox`))[0].n as number;
  const jobs = async () => {
    const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'completed', 'failed', 'prioritized');
    return Object.values(counts).reduce((a, b) => a + b, 0);
  };
  const post = (endpointId: string, body: string, headers: Record<string, string>) =>
    request(t.app.getHttpServer()).post(`/webhooks/${endpointId}`).set(headers).send(body);

  it('records a new delivery once, answers accepted, and enqueues one job keyed by the inbox id', async () => {
    const body = paymosBody('evt_new_1');
    const res = await post('paymos-a', body, signedHeaders('paymos', secretOf('paymos-a'), body, { eventId: 'evt_new_1' }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId: 'evt_new_1' });
    const [row] = await t.dataSource.query(`SELECT * FROM webhook_inbox`);
    expect(row).toMatchObject({
      endpoint_id: 'paymos-a',
      provider: 'paymos',
      merchant_account_id: 'acc_1',
      event_id: 'evt_new_1',
      event_type: 'invoice.paid',
      resource_id: 'inv_51ab77c0',
      delivery_id: null,
      status: 'received',
      outcome: null,
      attempts: 0,
      body,
    });
    expect(row.headers['x-webhook-id']).toBe('evt_new_1');
    expect(await jobs()).toBe(1);
    expect(await queue.getJob(row.id)).toBeDefined();
  });

  it('20 identical deliveries in parallel: one row, one accepted, 19 duplicates, one job', async () => {
    const body = paymosBody('evt_parallel');
    const headers = signedHeaders('paymos', secretOf('paymos-a'), body, { eventId: 'evt_parallel' });
    const answers = await Promise.all(Array.from({ length: 20 }, () => post('paymos-a', body, headers)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const statuses = answers.map((a) => a.body.status);
    expect(statuses.filter((s) => s === 'accepted').length).toBe(1);
    expect(statuses.filter((s) => s === 'duplicate').length).toBe(19);
    expect(await rows()).toBe(1);
    expect(await jobs()).toBe(1);
  });

  it('a duplicate arriving later writes nothing and is not enqueued again', async () => {
    const body = paymosBody('evt_later');
    const headers = signedHeaders('paymos', secretOf('paymos-a'), body, { eventId: 'evt_later' });
    expect((await post('paymos-a', body, headers)).body.status).toBe('accepted');
    const before = await t.dataSource.query(`SELECT xmin::text, * FROM webhook_inbox`);
    const res = await post('paymos-a', body, headers);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'duplicate', eventId: 'evt_later' });
    expect(await t.dataSource.query(`SELECT xmin::text, * FROM webhook_inbox`)).toEqual(before);
    expect(await jobs()).toBe(1);
  });

  it('the Factuarea vector event at a company endpoint and an account endpoint of one merchant is one row', async () => {
    const vector = signatureVectors().find((v) => v.provider === 'factuarea' && v.case === 'single secret')!;
    t.clock.setSeconds(vector.now);
    const company = await post('factuarea-company', vector.body, vector.headers);
    expect(company.status).toBe(200);
    expect(company.body).toEqual({ status: 'accepted', eventId: '01a0e783-aae8-7c2d-9f15-2b7d4e6a8c31' });

    // The account endpoint has its own secret and its own delivery id for the same event.
    const accountHeaders = {
      ...signedHeaders('factuarea', secretOf('factuarea-account'), vector.body, {
        timestamp: vector.now,
        eventId: vector.headers['Factuarea-Event-Id'],
        deliveryId: '01a0e783-ffff-7e19-a2c4-3d8f5b7a9e99',
      }),
      'factuarea-account-relationship': 'managed',
    };
    const account = await post('factuarea-account', vector.body, accountHeaders);
    expect(account.status).toBe(200);
    expect(account.body).toEqual({ status: 'duplicate', eventId: '01a0e783-aae8-7c2d-9f15-2b7d4e6a8c31' });

    const stored = await t.dataSource.query(`SELECT endpoint_id, delivery_id, resource_id FROM webhook_inbox`);
    expect(stored).toEqual([
      {
        endpoint_id: 'factuarea-company',
        delivery_id: '01a0e783-abb0-7e19-a2c4-3d8f5b7a9e12',
        resource_id: '01931b3e-7c4a-7f2e-9a8b-3c5d6e7f8a42',
      },
    ]);
  });

  it('two Paymos endpoints with two event ids for one invoice are two rows', async () => {
    const a = paymosBody('evt_endpoint_a', 'inv_same');
    const b = paymosBody('evt_endpoint_b', 'inv_same');
    const ra = await post('paymos-a', a, signedHeaders('paymos', secretOf('paymos-a'), a));
    const rb = await post('paymos-b', b, signedHeaders('paymos', secretOf('paymos-b'), b));
    expect([ra.body.status, rb.body.status]).toEqual(['accepted', 'accepted']);
    const stored = await t.dataSource.query(`SELECT endpoint_id, event_id, resource_id FROM webhook_inbox ORDER BY endpoint_id`);
    expect(stored).toEqual([
      { endpoint_id: 'paymos-a', event_id: 'evt_endpoint_a', resource_id: 'inv_same' },
      { endpoint_id: 'paymos-b', event_id: 'evt_endpoint_b', resource_id: 'inv_same' },
    ]);
  });

  it('a Stripe header made by rotating secrets (two v1) passes with only the new secret configured', async () => {
    const vector = signatureVectors().find((v) => v.provider === 'stripe' && v.case.startsWith('rotation'))!;
    t.clock.setSeconds(vector.now);
    const res = await post('stripe-main', vector.body, vector.headers);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId: 'evt_1QxAbcDEF' });
    const [row] = await t.dataSource.query(`SELECT event_type, resource_id FROM webhook_inbox`);
    expect(row).toEqual({ event_type: 'payment_intent.succeeded', resource_id: 'pi_3QxAbc' });
  });

  it('a Standard Webhooks delivery is keyed by webhook-id', async () => {
    const vector = signatureVectors().find((v) => v.provider === 'standard' && v.case.startsWith('single'))!;
    t.clock.setSeconds(vector.now);
    const res = await post('standard-main', vector.body, vector.headers);
    expect(res.body).toEqual({ status: 'accepted', eventId: 'msg_2Kx9Qa7LmN' });
    const [row] = await t.dataSource.query(`SELECT event_id, resource_id FROM webhook_inbox`);
    expect(row).toEqual({ event_id: 'msg_2Kx9Qa7LmN', resource_id: 'pay_7Hc2' });
  });

  it('reads the body as raw bytes whatever the content type', async () => {
    const body = paymosBody('evt_text_plain');
    const headers = { ...signedHeaders('paymos', secretOf('paymos-a'), body), 'content-type': 'text/plain' };
    const res = await post('paymos-a', body, headers);
    expect(res.body).toEqual({ status: 'accepted', eventId: 'evt_text_plain' });
  });

  it('the same event id at two merchants is two events', async () => {
    const other = await createTestApp({
      endpoints: [
        { id: 'paymos-a', provider: 'paymos', secrets: ['paymos-secret-old'], merchantAccountId: 'acc_1' },
        { id: 'paymos-x', provider: 'paymos', secrets: ['paymos-secret-x'], merchantAccountId: 'acc_2' },
      ],
    }, { platform });
    try {
      const body = paymosBody('evt_shared_id');
      const http = request(other.app.getHttpServer());
      const ra = await http.post('/webhooks/paymos-a').set(signedHeaders('paymos', 'paymos-secret-old', body)).send(body);
      const rx = await http.post('/webhooks/paymos-x').set(signedHeaders('paymos', 'paymos-secret-x', body)).send(body);
      expect([ra.body.status, rx.body.status]).toEqual(['accepted', 'accepted']);
      expect(await rows()).toBe(2);
    } finally {
      await other.close();
    }
  });
});
