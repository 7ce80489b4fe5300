import request from 'supertest';
import { signedHeaders } from '../../src/testing/sign';
import { AUTH, createTestApp, PLATFORMS, secretOf, TestApp, truncateAll } from '../support/app';

/**
 * Issue 12, finding 6: nesting-depth limits. A JSON value may nest at most 64 levels (the top-level
 * object is level 1). A signed webhook body deeper than that is malformed (400, nothing recorded);
 * a deeper API request body is a validation error (400 validation_failed); and no answer is a 500
 * because of depth, not even the archive detail of a row stored before the limit existed.
 */

const arrays = (levels: number, inner = '0') => '['.repeat(levels) + inner + ']'.repeat(levels);
const objects = (levels: number) => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);

/** A Paymos envelope whose `data.extra` holds `nested` (the envelope and data are 2 levels). */
function paymos(eventId: string, nested: string): { body: string; headers: Record<string, string> } {
  const body = `{"event_id":"${eventId}","type":"invoice.updated","data":{"object":"invoice","id":"inv_deep","extra":${nested}}}`;
  return { body, headers: signedHeaders('paymos', secretOf('paymos-a'), body, { eventId }) };
}

describe.each(PLATFORMS)('%s: nesting-depth limits (issue 12 finding 6)', (platform) => {
  let t: TestApp;
  const http = () => request(t.app.getHttpServer());
  const deliver = ({ body, headers }: { body: string; headers: Record<string, string> }) => http().post('/webhooks/paymos-a').set(headers).send(body);
  const inboxRows = async () => (await t.dataSource.query(`SELECT count(*)::int AS n FROM webhook_inbox`))[0].n as number;

  beforeAll(async () => {
    t = await createTestApp({}, { platform });
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  describe('the webhook body', () => {
    it('20,000 nested arrays: 400 malformed_payload with a detail, nothing recorded', async () => {
      const res = await deliver(paymos('evt_deep_1', arrays(20_000)));
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'malformed_payload', detail: 'the body nests deeper than 64 levels' });
      expect(await inboxRows()).toBe(0);
    });

    it('exactly 64 levels is accepted; 65 is refused', async () => {
      // envelope (1) > data (2) > extra: 62 arrays make 64.
      const ok = await deliver(paymos('evt_deep_64', arrays(62)));
      expect(ok.status).toBe(200);
      expect(ok.body).toEqual({ status: 'accepted', eventId: 'evt_deep_64' });
      const deep = await deliver(paymos('evt_deep_65', objects(63)));
      expect(deep.status).toBe(400);
      expect(deep.body.error).toBe('malformed_payload');
      expect(await inboxRows()).toBe(1);
    });
  });

  describe('API request bodies: 400 validation_failed, never 500', () => {
    it.each([
      ['POST /admin/reconciliation, 20,000 nested arrays', '/admin/reconciliation', `{"provider":"paymos","merchantAccountId":"acc_1","eventIds":${arrays(20_000)}}`],
      ['POST /orders, 5,000 nested objects', '/orders', `{"amount":"1.00","currency":"EUR","shipTo":${objects(5_000)}}`],
      ['POST /orders, 65 levels', '/orders', `{"amount":"1.00","currency":"EUR","shipTo":${objects(64)}}`],
      ['POST /admin/backfill, 1,000 nested arrays', '/admin/backfill', `{"endpointId":"x","since":"2026-01-01T00:00:00Z","accounts":${arrays(1_000)}}`],
    ])('%s', async (_name, path, body) => {
      const res = await http().post(path).set(AUTH).set('Content-Type', 'application/json').send(body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'validation_failed', details: [{ field: 'body', message: 'the body nests deeper than 64 levels' }] });
      expect((await t.dataSource.query(`SELECT count(*)::int AS n FROM orders`))[0].n).toBe(0);
    });
  });

  it('the archive detail of a row stored deeper than the limit (before it existed) answers 200, not 500', async () => {
    const res = await deliver(paymos('evt_deep_old', '[]'));
    expect(res.status).toBe(200);
    // As a row recorded before the limit would be: 20,000 nested arrays in its body.
    await t.dataSource.query(`UPDATE webhook_inbox SET body = $1`, [paymos('evt_deep_old', arrays(20_000)).body]);
    const [{ id }] = await t.dataSource.query(`SELECT id FROM webhook_inbox`);
    const detail = await http().get(`/admin/webhook-deliveries/${id}`).set(AUTH);
    expect(detail.status).toBe(200);
    expect(detail.body.eventId).toBe('evt_deep_old');
    expect(detail.body.body.event_id).toBe('evt_deep_old');
    const list = await http().get('/admin/webhook-deliveries').set(AUTH);
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(1);
  });
});
