import request from 'supertest';
import type { TuningOptions } from '../../src/config/options';
import { signedHeaders } from '../../src/testing/sign';
import { createTestApp, secretOf, TestApp } from '../support/app';
import { uniqueId } from '../support/domain';
import { TEST_DATABASE_URL } from '../support/env';
import { TcpProxy } from '../support/tcp-proxy';

/**
 * While PostgreSQL hangs, the receive path's wait is bounded: a delivery queued behind others for
 * the one connection answers 503 within the bound, not after every delivery in front of it.
 */
function whileTheDatabaseHangs(title: string, tuning: Partial<TuningOptions>) {
  describe(title, () => {
    const proxy = new TcpProxy('127.0.0.1', Number(new URL(TEST_DATABASE_URL).port || 5432));
    let t: TestApp;

    beforeAll(async () => {
      await proxy.up();
      t = await createTestApp({ databaseUrl: proxy.urlFor(TEST_DATABASE_URL), tuning });
    });
    afterAll(async () => {
      await proxy.up();
      await t?.close();
      await proxy.down();
    });

    const deliver = (eventId: string) => {
      const body = JSON.stringify({ event_id: eventId, type: 'invoice.paid', data: { id: 'inv_bounds' } });
      return request(t.app.getHttpServer())
        .post('/webhooks/paymos-a')
        .set(signedHeaders('paymos', secretOf('paymos-a'), body, { eventId }))
        .send(body)
        .timeout(15_000);
    };

    it('30 concurrent deliveries all answer 503 unavailable, the slowest within 2 s', async () => {
      // The path works (and its connection is open) before the database hangs.
      const warm = await deliver(uniqueId('evt'));
      expect(warm.status).toBe(200);

      const eventIds = Array.from({ length: 30 }, () => uniqueId('evt'));
      proxy.hang();
      const started = Date.now();
      let answers: Array<{ status: number; body: unknown; ms: number }>;
      try {
        answers = await Promise.all(
          eventIds.map(async (eventId) => {
            const res = await deliver(eventId);
            return { status: res.status, body: res.body, ms: Date.now() - started };
          }),
        );
      } finally {
        await proxy.down();
        await proxy.up();
      }

      expect(answers.map((a) => a.status)).toEqual(Array(30).fill(503));
      expect(answers.map((a) => a.body)).toEqual(Array(30).fill({ error: 'unavailable' }));
      const slowest = Math.max(...answers.map((a) => a.ms));
      expect(slowest).toBeLessThan(2_000);

      // Nothing was recorded: a 503 means "send it again".
      const [{ n }] = await t.dataSource.query(`SELECT count(*)::int AS n FROM webhook_inbox WHERE event_id = ANY($1)`, [eventIds]);
      expect(n).toBe(0);
    });
  });
}

whileTheDatabaseHangs('receive path bounds while PostgreSQL hangs', { ingestTimeoutMs: 500, ingestPoolSize: 1 });

// One delivery per statement: without the wait bound, the 30th would answer after 30 × 500 ms.
whileTheDatabaseHangs('receive path bounds while PostgreSQL hangs, one delivery per batch', {
  ingestTimeoutMs: 500,
  ingestPoolSize: 1,
  ingestBatchSize: 1,
});
