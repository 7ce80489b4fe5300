import request from 'supertest';
import { Client } from 'pg';
import { InboxSweeper } from '../../src/webhooks/inbox-sweeper.service';
import { signedHeaders } from '../../src/testing/sign';
import { createTestApp, eventually, secretOf, TestApp, truncateAll } from '../support/app';
import { AdvisoryLock, advisoryLockArgs } from '../../src/database/advisory-locks';
import { TEST_DATABASE_URL, TEST_REDIS_URL, TEST_SCHEMA, testPgConnection } from '../support/env';
import { TcpProxy } from '../support/tcp-proxy';

function delivery(eventId: string) {
  const body = JSON.stringify({ event_id: eventId, type: 'invoice.updated', data: { id: 'inv_1' } });
  return { body, headers: signedHeaders('paymos', secretOf('paymos-a'), body, { eventId }) };
}

const statusOf = async (t: TestApp, eventId: string): Promise<string | undefined> =>
  (await t.dataSource.query(`SELECT status FROM webhook_inbox WHERE event_id = $1`, [eventId]))[0]?.status;

describe('PostgreSQL away: 503, never 2xx or 4xx', () => {
  const proxy = new TcpProxy('127.0.0.1', Number(new URL(TEST_DATABASE_URL).port || 5432));
  let t: TestApp;

  beforeAll(async () => {
    await proxy.up();
    t = await createTestApp({ databaseUrl: proxy.urlFor(TEST_DATABASE_URL), tuning: { ingestTimeoutMs: 500 } });
  });
  afterAll(async () => {
    await proxy.up();
    await t?.close();
    await proxy.down();
  });
  beforeEach(() => truncateAll(t.dataSource));

  it('answers 503 unavailable while the database refuses connections, then records the retry', async () => {
    const { body, headers } = delivery('evt_db_down');
    await proxy.down();
    const down = await request(t.app.getHttpServer()).post('/webhooks/paymos-a').set(headers).send(body);
    expect(down.status).toBe(503);
    expect(down.body).toEqual({ error: 'unavailable' });

    await proxy.up();
    const retried = await request(t.app.getHttpServer()).post('/webhooks/paymos-a').set(headers).send(body);
    expect(retried.status).toBe(200);
    expect(retried.body).toEqual({ status: 'accepted', eventId: 'evt_db_down' });
  });

  it('answers 503 within the bound while the database hangs', async () => {
    const { body, headers } = delivery('evt_db_hang');
    proxy.hang();
    const started = Date.now();
    const res = await request(t.app.getHttpServer()).post('/webhooks/paymos-a').set(headers).send(body);
    const elapsed = Date.now() - started;
    await proxy.down();
    await proxy.up();
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: 'unavailable' });
    expect(elapsed).toBeLessThan(2_000);
    expect(await statusOf(t, 'evt_db_hang')).toBeUndefined();
  });
});

describe('Redis away: the row is committed, answered 200, and swept later', () => {
  const proxy = new TcpProxy('127.0.0.1', Number(new URL(TEST_REDIS_URL).port || 6379));
  let t: TestApp;

  beforeAll(async () => {
    await proxy.up();
    t = await createTestApp({
      redisUrl: proxy.urlFor(TEST_REDIS_URL),
      runWorkers: true,
      tuning: { sweepAfterMs: 1, enqueueTimeoutMs: 300 },
    });
  });
  afterAll(async () => {
    await proxy.up();
    await t?.close();
    await proxy.down();
  });
  beforeEach(() => truncateAll(t.dataSource));

  it('answers accepted while Redis is down; the sweeper enqueues once Redis is back; the worker processes it', async () => {
    const { body, headers } = delivery('evt_redis_down');
    await proxy.down();
    const res = await request(t.app.getHttpServer()).post('/webhooks/paymos-a').set(headers).send(body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId: 'evt_redis_down' });
    expect(await statusOf(t, 'evt_redis_down')).toBe('received');

    await proxy.up();
    const sweeper = t.get<InboxSweeper>(InboxSweeper);
    await eventually(async () => (await sweeper.runOnce().catch(() => 0)) === 1, 15_000, 'the sweeper to enqueue');
    await eventually(async () => (await statusOf(t, 'evt_redis_down')) === 'ignored', 15_000, 'the worker');
    const [row] = await t.dataSource.query(
      `SELECT outcome, attempts, processed_at IS NOT NULL AS processed FROM webhook_inbox`,
    );
    expect(row).toEqual({ outcome: 'no_handler', attempts: 1, processed: true });
  });

  it('only one process sweeps at a time: a sweeper that cannot take the lock does nothing', async () => {
    await t.dataSource.query(
      `INSERT INTO webhook_inbox (endpoint_id, provider, merchant_account_id, event_id, event_type, headers, body)
       VALUES ('paymos-a', 'paymos', 'acc_1', 'evt_swept', 'invoice.paid', '{}', '{}')`,
    );
    const other = new Client(testPgConnection());
    await other.connect();
    try {
      await other.query(`SELECT pg_advisory_lock(${advisoryLockArgs(AdvisoryLock.InboxSweeper)})`, [TEST_SCHEMA]);
      const sweeper = t.get<InboxSweeper>(InboxSweeper);
      expect(await sweeper.runOnce()).toBe(0);
      await other.query(`SELECT pg_advisory_unlock(${advisoryLockArgs(AdvisoryLock.InboxSweeper)})`, [TEST_SCHEMA]);
      expect(await sweeper.runOnce()).toBe(1);
      await eventually(async () => (await statusOf(t, 'evt_swept')) === 'ignored', 10_000, 'the worker');
    } finally {
      await other.end();
    }
  });
});
