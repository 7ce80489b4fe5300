import request from 'supertest';
import { signedHeaders } from '../../src/testing/sign';
import { createTestApp, PLATFORMS, secretOf, TestApp, truncateAll } from '../support/app';

/**
 * Issue 12, finding 5: event ids that are not well-formed UTF-16 (an unpaired surrogate, sent as a
 * JSON escape) would be stored as U+FFFD, so two ids differing only in their lone surrogate would
 * collide (the second answered `duplicate` of the first). Such an id is malformed: 400, nothing
 * recorded. An astral-plane character (a surrogate pair, such as an emoji) is a valid id.
 */

/** A Paymos delivery whose body is written by hand, so `\uD800` stays an escape on the wire. */
function paymos(eventIdJson: string): { body: string; headers: Record<string, string> } {
  const body = `{"event_id":"${eventIdJson}","type":"invoice.updated","data":{"object":"invoice","id":"inv_ids"}}`;
  return { body, headers: signedHeaders('paymos', secretOf('paymos-a'), body) };
}

describe.each(PLATFORMS)('%s: event ids must be well-formed UTF-16 (issue 12 finding 5)', (platform) => {
  let t: TestApp;
  const send = ({ body, headers }: { body: string; headers: Record<string, string> }, endpoint = 'paymos-a') =>
    request(t.app.getHttpServer()).post(`/webhooks/${endpoint}`).set(headers).send(body);
  const rows = async () => (await t.dataSource.query(`SELECT event_id FROM webhook_inbox ORDER BY event_id`)) as Array<{ event_id: string }>;

  beforeAll(async () => {
    t = await createTestApp({}, { platform });
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  it('two ids differing only by a lone surrogate: both 400 malformed_payload, nothing recorded', async () => {
    for (const id of ['evt_lone_\\ud800', 'evt_lone_\\udbff', 'evt_lone_\\udc00x', 'evt_\\udfff']) {
      const res = await send(paymos(id));
      expect({ id, status: res.status, body: res.body }).toEqual({
        id,
        status: 400,
        body: { error: 'malformed_payload', detail: 'event_id is not a printable string of at most 255 characters' },
      });
    }
    expect(await rows()).toEqual([]);
  });

  it('a lone surrogate in a stored id the body gives (Standard Webhooks data.payment_id) is refused too', async () => {
    const body = `{"type":"payment.succeeded","data":{"payment_id":"pay_\\ud800","account_id":"acc_1"}}`;
    const res = await send({ body, headers: signedHeaders('standard', secretOf('standard-main'), body, { eventId: 'msg_ids_1' }) }, 'standard-main');
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('malformed_payload');
    expect(await rows()).toEqual([]);
  });

  it('astral-plane ids (emoji, as a surrogate pair, escaped or raw) are accepted, each its own event', async () => {
    const a = await send(paymos('evt_\\ud83d\\ude00'));
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ status: 'accepted', eventId: 'evt_😀' });
    const b = await send(paymos('evt_😁'));
    expect(b.status).toBe(200);
    expect(b.body).toEqual({ status: 'accepted', eventId: 'evt_😁' });
    const again = await send(paymos('evt_😀'));
    expect(again.body).toEqual({ status: 'duplicate', eventId: 'evt_😀' });
    expect((await rows()).map((r) => r.event_id).sort()).toEqual(['evt_😀', 'evt_😁'].sort());
  });
});
