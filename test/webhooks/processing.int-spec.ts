import request from 'supertest';
import { DeliveryProcessingService } from '../../src/webhooks/delivery-processing.service';
import { signedHeaders } from '../../src/testing/sign';
import { createTestApp, eventually, secretOf, TestApp, truncateAll } from '../support/app';

async function receive(t: TestApp, eventId: string): Promise<string> {
  const body = JSON.stringify({ event_id: eventId, type: 'invoice.updated', data: { id: 'inv_1' } });
  const res = await request(t.app.getHttpServer())
    .post('/webhooks/paymos-a')
    .set(signedHeaders('paymos', secretOf('paymos-a'), body))
    .send(body);
  expect(res.body.status).toBe('accepted');
  return (await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [eventId]))[0].id;
}

const rowOf = async (t: TestApp, id: string) =>
  (
    await t.dataSource.query(
      `SELECT status, outcome, attempts, last_error AS "lastError", processed_at IS NOT NULL AS processed
         FROM webhook_inbox WHERE id = $1`,
      [id],
    )
  )[0];

describe('the inbox processor (workers on)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ runWorkers: true });
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  it('processes an accepted delivery off the request: a type with no handler ends ignored', async () => {
    const id = await receive(t, 'evt_worker_1');
    await eventually(async () => (await rowOf(t, id)).status !== 'received', 10_000, 'processing');
    expect(await rowOf(t, id)).toEqual({
      status: 'ignored',
      outcome: 'no_handler',
      attempts: 1,
      lastError: null,
      processed: true,
    });
  });
});

describe('the processing transaction (workers off, driven directly)', () => {
  let t: TestApp;
  let processing: DeliveryProcessingService;
  beforeAll(async () => {
    t = await createTestApp({ runWorkers: false });
    processing = t.get(DeliveryProcessingService);
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));
  afterEach(() => jest.restoreAllMocks());

  it('a second run of a finished delivery does nothing', async () => {
    const id = await receive(t, 'evt_twice');
    expect(await processing.process(id, false)).toEqual({ status: 'ignored', outcome: 'no_handler' });
    const after = await t.dataSource.query(`SELECT xmin::text, * FROM webhook_inbox`);
    expect(await processing.process(id, false)).toBeNull();
    expect(await t.dataSource.query(`SELECT xmin::text, * FROM webhook_inbox`)).toEqual(after);
  });

  it('two workers processing the same delivery at once: the row lock lets exactly one act', async () => {
    const id = await receive(t, 'evt_race');
    const results = await Promise.all(Array.from({ length: 5 }, () => processing.process(id, false)));
    expect(results.filter((r) => r !== null).length).toBe(1);
    expect((await rowOf(t, id)).attempts).toBe(1);
  });

  it('a failure rolls back, records the attempt and the error apart, and the last attempt marks it failed', async () => {
    const id = await receive(t, 'evt_fails');
    const boom = Object.assign(new Error('boom'), { code: 'TEST.BOOM' });
    jest.spyOn(processing as unknown as { decide: () => Promise<never> }, 'decide').mockRejectedValue(boom);

    await expect(processing.process(id, false)).rejects.toBe(boom);
    expect(await rowOf(t, id)).toEqual({
      status: 'received',
      outcome: null,
      attempts: 1,
      lastError: 'TEST.BOOM: boom',
      processed: false,
    });

    await expect(processing.process(id, true)).rejects.toBe(boom);
    expect(await rowOf(t, id)).toEqual({
      status: 'failed',
      outcome: 'TEST.BOOM',
      attempts: 2,
      lastError: 'TEST.BOOM: boom',
      processed: false,
    });
  });

  it('a retry after a failure applies the change', async () => {
    const id = await receive(t, 'evt_retry');
    jest
      .spyOn(processing as unknown as { decide: () => Promise<never> }, 'decide')
      .mockRejectedValueOnce(new Error('transient'));
    await expect(processing.process(id, false)).rejects.toThrow('transient');
    expect(await processing.process(id, false)).toEqual({ status: 'ignored', outcome: 'no_handler' });
    expect(await rowOf(t, id)).toEqual({
      status: 'ignored',
      outcome: 'no_handler',
      attempts: 2,
      lastError: null,
      processed: true,
    });
  });
});
