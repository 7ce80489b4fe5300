import request from 'supertest';

import { generateV1aKeyPair } from '../../src/testing';
import { signedHeaders } from '../../src/testing/sign';
import { createTestApp, PLATFORMS, TEST_ENDPOINTS, TestApp, truncateAll } from '../support/app';

/**
 * Standard Webhooks `v1a` through the real route (docs/webhooks.md#v1a-asymmetric-signatures): an
 * endpoint in the middle of a move from symmetric to asymmetric signing holds a `whsec_` and a
 * `whpk_`; deliveries signed `v1a` with the `whsk_`, `v1` with the `whsec_`, or both at once are
 * recorded once and then duplicates, and a `v1a` that does not verify answers 401.
 */
const WHSEC = `whsec_${Buffer.from('standard-v1a-route-hmac-key-0001').toString('base64')}`;
const PAIR = generateV1aKeyPair();
const STRANGER = generateV1aKeyPair();

function body(paymentId: string): string {
  return JSON.stringify({
    type: 'payment.succeeded',
    timestamp: '2026-11-29T10:00:00Z',
    data: { payment_id: paymentId, order_id: 'ord_v1a', amount: 4990, currency: 'EUR', account_id: 'acc_1' },
  });
}

describe.each(PLATFORMS)('%s: POST /webhooks/:endpointId with v1a signatures (real PostgreSQL and Redis)', (platform) => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp(
      {
        endpoints: [
          ...TEST_ENDPOINTS,
          { id: 'standard-moving', provider: 'standard', secrets: [WHSEC, PAIR.publicKey], merchantAccountId: 'acc_1' },
          { id: 'standard-v1a', provider: 'standard', secrets: [PAIR.publicKey], merchantAccountId: 'acc_1' },
        ],
      },
      { platform },
    );
  });
  afterAll(() => t?.close());
  beforeEach(async () => {
    t.clock.reset();
    await truncateAll(t.dataSource);
  });

  const post = (endpointId: string, payload: string, headers: Record<string, string>) =>
    request(t.app.getHttpServer()).post(`/webhooks/${endpointId}`).set(headers).send(payload);
  const rows = async (eventId: string) =>
    (await t.dataSource.query(`SELECT endpoint_id, provider, merchant_account_id, status FROM webhook_inbox WHERE event_id = $1`, [eventId])) as unknown[];

  it('a v1a-signed delivery is accepted, then the same delivery is a duplicate', async () => {
    const payload = body('pay_v1a_1');
    const headers = signedHeaders('standard', PAIR.secretKey, payload, { eventId: 'msg_v1a_1' });
    expect(headers['webhook-signature']).toMatch(/^v1a,/);
    const first = await post('standard-v1a', payload, headers);
    expect([first.status, first.body]).toEqual([200, { status: 'accepted', eventId: 'msg_v1a_1' }]);
    const again = await post('standard-v1a', payload, headers);
    expect([again.status, again.body]).toEqual([200, { status: 'duplicate', eventId: 'msg_v1a_1' }]);
    expect(await rows('msg_v1a_1')).toEqual([{ endpoint_id: 'standard-v1a', provider: 'standard', merchant_account_id: 'acc_1', status: 'received' }]);
  });

  it('a bad v1a signature answers 401 invalid_signature and records nothing', async () => {
    const payload = body('pay_v1a_2');
    const byStranger = signedHeaders('standard', STRANGER.secretKey, payload, { eventId: 'msg_v1a_2' });
    const res = await post('standard-v1a', payload, byStranger);
    expect([res.status, res.body]).toEqual([401, { error: 'invalid_signature' }]);
    // The right key over other bytes: the body changed after signing.
    const signed = signedHeaders('standard', PAIR.secretKey, payload, { eventId: 'msg_v1a_2' });
    const altered = await post('standard-v1a', payload.replace('4990', '4991'), signed);
    expect([altered.status, altered.body]).toEqual([401, { error: 'invalid_signature' }]);
    // A v1 entry where only a whpk_ is configured.
    const symmetric = await post('standard-v1a', payload, signedHeaders('standard', WHSEC, payload, { eventId: 'msg_v1a_2' }));
    expect([symmetric.status, symmetric.body]).toEqual([401, { error: 'invalid_signature' }]);
    expect(await rows('msg_v1a_2')).toEqual([]);
  });

  it('during a move (whsec_ and whpk_ on one endpoint): v1, v1a, or both in one header; one event, recorded once', async () => {
    const payload = body('pay_v1a_3');
    const v1a = await post('standard-moving', payload, signedHeaders('standard', PAIR.secretKey, payload, { eventId: 'msg_v1a_3' }));
    expect([v1a.status, v1a.body]).toEqual([200, { status: 'accepted', eventId: 'msg_v1a_3' }]);
    const v1 = await post('standard-moving', payload, signedHeaders('standard', WHSEC, payload, { eventId: 'msg_v1a_3' }));
    expect([v1.status, v1.body]).toEqual([200, { status: 'duplicate', eventId: 'msg_v1a_3' }]);
    const both = signedHeaders('standard', WHSEC, payload, { eventId: 'msg_v1a_3', extraSecrets: [PAIR.secretKey] });
    expect(both['webhook-signature'].split(' ').map((e) => e.split(',')[0])).toEqual(['v1', 'v1a']);
    const res = await post('standard-moving', payload, both);
    expect([res.status, res.body]).toEqual([200, { status: 'duplicate', eventId: 'msg_v1a_3' }]);
    expect(await rows('msg_v1a_3')).toHaveLength(1);
  });

  it('a v1a signature out of tolerance answers 401 timestamp_out_of_tolerance', async () => {
    const payload = body('pay_v1a_4');
    const old = Math.floor(Date.now() / 1000) - 3600;
    const res = await post('standard-v1a', payload, signedHeaders('standard', PAIR.secretKey, payload, { eventId: 'msg_v1a_4', timestamp: old }));
    expect([res.status, res.body]).toEqual([401, { error: 'timestamp_out_of_tolerance' }]);
  });
});
