import { BUILT_IN_PROVIDERS, MalformedPayloadError, type ProviderAdapter, type ReceivedEvent } from '../../src/providers';
import { receiveWith, signedHeaders } from '../../src/testing';
import { acmeEvent, acmeHeaders, acmeProvider } from '../support/acme-provider';

/**
 * `nestjs-payment-webhooks/testing`'s receiveWith (docs/providers.md#testing-an-adapter): a provider
 * adapter run through the module's receive path, for a built-in provider signed with signedHeaders
 * and for a host's own adapter.
 */
const NOW_S = 1_790_590_561;
const NOW_MS = NOW_S * 1000;
const ACME_SECRET = 'acme_sk_0123456789abcdef';
const acmeEndpoint = { secrets: [ACME_SECRET], merchantAccountId: 'm_1' };

describe('receiveWith, a built-in provider signed with signedHeaders', () => {
  const stripe = BUILT_IN_PROVIDERS.stripe;
  const secret = 'whsec_test_receive_with';
  const body = JSON.stringify({ id: 'evt_rw_1', object: 'event', type: 'payment_intent.succeeded', api_version: '2026-10-28', data: { object: { id: 'pi_rw_1', object: 'payment_intent' } } });
  const endpoint = { secrets: [secret], merchantAccountId: 'acct_1' };

  it('a signed delivery: its event, keyed on the endpoint account, with the secret that verified it', async () => {
    const outcome = await receiveWith(stripe, { headers: signedHeaders('stripe', secret, body, { timestamp: NOW_S }), body }, { endpoint, nowMs: NOW_MS });
    expect(outcome).toEqual({
      ok: true,
      secretIndex: 0,
      events: [
        {
          eventId: 'evt_rw_1',
          eventType: 'payment_intent.succeeded',
          resourceId: 'pi_rw_1',
          deliveryId: null,
          account: null,
          apiVersion: '2026-10-28',
          body,
          merchantAccountId: 'acct_1',
          served: true,
        },
      ],
    });
  });

  it('the second secret of a rotation verifies as index 1', async () => {
    const outcome = await receiveWith(stripe, { headers: signedHeaders('stripe', secret, body, { timestamp: NOW_S }), body }, {
      endpoint: { ...endpoint, secrets: ['whsec_the_new_one', secret] },
      nowMs: NOW_MS,
    });
    expect(outcome).toMatchObject({ ok: true, secretIndex: 1 });
  });

  it.each<[string, () => { headers: Record<string, string>; body: string }, unknown]>([
    ['no signature header', () => ({ headers: {}, body }), { ok: false, error: 'missing_signature' }],
    ['another secret', () => ({ headers: signedHeaders('stripe', 'whsec_someone_else', body, { timestamp: NOW_S }), body }), { ok: false, error: 'invalid_signature' }],
    ['the body changed after signing', () => ({ headers: signedHeaders('stripe', secret, body, { timestamp: NOW_S }), body: body.replace('pi_rw_1', 'pi_rw_2') }), { ok: false, error: 'invalid_signature' }],
    ['signed 301 s ago', () => ({ headers: signedHeaders('stripe', secret, body, { timestamp: NOW_S - 301 }), body }), { ok: false, error: 'timestamp_out_of_tolerance' }],
    ['authentic but not JSON', () => ({ headers: signedHeaders('stripe', secret, 'not json', { timestamp: NOW_S }), body: 'not json' }), { ok: false, error: 'malformed_payload', detail: 'the body is not JSON' }],
  ])('%s: refused as the route refuses it', async (_what, make, expected) => {
    expect(await receiveWith(stripe, make(), { endpoint, nowMs: NOW_MS })).toEqual(expected);
  });

  it('header names in any case, as a client writes them', async () => {
    const headers = Object.fromEntries(Object.entries(signedHeaders('stripe', secret, body, { timestamp: NOW_S })).map(([k, v]) => [k.toUpperCase(), v]));
    expect(await receiveWith(stripe, { headers, body }, { endpoint, nowMs: NOW_MS })).toMatchObject({ ok: true });
  });
});

describe("receiveWith, a host's own adapter", () => {
  const deliver = (body: string, headers = acmeHeaders(ACME_SECRET, body, NOW_S)) => ({ headers, body });

  it('an accepted event: identity, body as signed, account of the endpoint', async () => {
    const { eventId, body } = acmeEvent('charge.paid', 'ch_1', { orderId: 'o-1' });
    const outcome = await receiveWith(acmeProvider, deliver(body), { endpoint: acmeEndpoint, nowMs: NOW_MS });
    expect(outcome).toEqual({
      ok: true,
      secretIndex: 0,
      events: [{ eventId, eventType: 'charge.paid', resourceId: 'ch_1', deliveryId: null, account: null, apiVersion: null, body, merchantAccountId: 'm_1', served: true }],
    });
    // What processing makes of it, through the same adapter.
    expect(acmeProvider.normalize(JSON.parse(body), 'charge.paid')).toMatchObject({ kind: 'succeeded', resourceId: 'ch_1', orderId: 'o-1', amount: { form: 'decimal', value: '49.90' } });
  });

  it('the default endpoint: one secret test-secret-0001 (which acme\'s checkSecret refuses) and the account acc_test', async () => {
    const { body } = acmeEvent('charge.paid', 'ch_1');
    await expect(receiveWith(acmeProvider, deliver(body))).rejects.toThrow('endpoint: endpoint "test-endpoint": secret #1 must start with "acme_sk_"');
    const lenient = { ...acmeProvider, name: 'lenient', checkSecret: undefined };
    const outcome = await receiveWith(lenient, { headers: acmeHeaders('test-secret-0001', body), body });
    expect(outcome).toMatchObject({ ok: true, events: [{ merchantAccountId: 'acc_test' }] });
  });

  it("on a single-account endpoint, an event that declares another account is keyed on the endpoint's, not served", async () => {
    const own = acmeEvent('charge.paid', 'ch_1', { merchant: 'm_1' });
    expect(await receiveWith(acmeProvider, deliver(own.body), { endpoint: acmeEndpoint, nowMs: NOW_MS })).toMatchObject({
      ok: true,
      events: [{ account: 'm_1', merchantAccountId: 'm_1', served: true }],
    });
    const other = acmeEvent('charge.paid', 'ch_1', { merchant: 'm_other' });
    expect(await receiveWith(acmeProvider, deliver(other.body), { endpoint: acmeEndpoint, nowMs: NOW_MS })).toMatchObject({
      ok: true,
      events: [{ account: 'm_other', merchantAccountId: 'm_1', served: false }],
    });
  });

  it('on an endpoint of many accounts, the account each event declares; an account not served is recorded but not served', async () => {
    const endpoint = { secrets: [ACME_SECRET], merchantAccountIds: ['m_1', 'm_2'] };
    const served = acmeEvent('charge.paid', 'ch_1', { merchant: 'm_2' });
    expect(await receiveWith(acmeProvider, deliver(served.body), { endpoint, nowMs: NOW_MS })).toMatchObject({
      ok: true,
      events: [{ account: 'm_2', merchantAccountId: 'm_2', served: true }],
    });
    const other = acmeEvent('charge.paid', 'ch_1', { merchant: 'm_9' });
    expect(await receiveWith(acmeProvider, deliver(other.body), { endpoint, nowMs: NOW_MS })).toMatchObject({
      ok: true,
      events: [{ account: 'm_9', merchantAccountId: 'm_9', served: false }],
    });
    const none = acmeEvent('charge.paid', 'ch_1');
    expect(await receiveWith(acmeProvider, deliver(none.body), { endpoint, nowMs: NOW_MS })).toEqual({
      ok: false,
      error: 'malformed_payload',
      detail: 'the endpoint serves many merchant accounts and the body declares none',
    });
  });

  it.each<[string, () => { headers: Record<string, string>; body: string }, unknown]>([
    ['no Acme-Signature', () => ({ headers: {}, body: acmeEvent('charge.paid', 'ch_1').body }), { ok: false, error: 'missing_signature' }],
    ['Acme-Signature without t=', () => ({ headers: { 'acme-signature': 's=00' }, body: '{}' }), { ok: false, error: 'missing_signature' }],
    ['no s= entry that matches', () => { const { body } = acmeEvent('charge.paid', 'ch_1'); return { headers: acmeHeaders('acme_sk_someone_else_1', body, NOW_S), body }; }, { ok: false, error: 'invalid_signature' }],
    ['signed an hour ago', () => { const { body } = acmeEvent('charge.paid', 'ch_1'); return { headers: acmeHeaders(ACME_SECRET, body, NOW_S - 3600), body }; }, { ok: false, error: 'timestamp_out_of_tolerance' }],
    ['no event id', () => deliver(JSON.stringify({ event: { type: 'charge.paid' }, charge: { id: 'ch_1' } })), { ok: false, error: 'malformed_payload', detail: 'event.id is missing' }],
    ['an unprintable event id', () => deliver(JSON.stringify({ event: { id: 'ae_1\u202e', type: 'charge.paid' }, charge: { id: 'ch_1' } })), { ok: false, error: 'malformed_payload', detail: 'event.id is not a printable string of at most 255 characters' }],
  ])('refused: %s', async (_what, make, expected) => {
    expect(await receiveWith(acmeProvider, make(), { endpoint: acmeEndpoint, nowMs: NOW_MS })).toEqual(expected);
  });

  it('a longer tolerance from the endpoint, 0 turns the check off', async () => {
    const { body } = acmeEvent('charge.paid', 'ch_1');
    const old = { headers: acmeHeaders(ACME_SECRET, body, NOW_S - 3600), body };
    expect(await receiveWith(acmeProvider, old, { endpoint: { ...acmeEndpoint, toleranceSeconds: 3600 }, nowMs: NOW_MS })).toMatchObject({ ok: true });
    expect(await receiveWith(acmeProvider, old, { endpoint: { ...acmeEndpoint, toleranceSeconds: 0 }, nowMs: NOW_MS })).toMatchObject({ ok: true });
  });

  it('an expired secret no longer verifies', async () => {
    const { body } = acmeEvent('charge.paid', 'ch_1');
    const endpoint = { ...acmeEndpoint, secrets: [{ secret: ACME_SECRET, expiresAt: new Date(NOW_MS - 1000).toISOString() }, 'acme_sk_the_new_secret_1'] };
    expect(await receiveWith(acmeProvider, deliver(body), { endpoint, nowMs: NOW_MS })).toEqual({ ok: false, error: 'invalid_signature' });
  });

  describe('what the receive path holds any adapter to', () => {
    /** An adapter whose receive answers what the test says, around acme's checks. */
    const lying = (events: (verified: ReceivedEvent) => unknown): ProviderAdapter => ({
      ...acmeProvider,
      name: 'liar',
      async receive(delivery, context) {
        const result = await acmeProvider.receive(delivery, context);
        if (!result.ok) return result;
        return { ...result, events: events(result.events[0]) as ReceivedEvent[] };
      },
    });
    const { body } = acmeEvent('charge.paid', 'ch_1');

    it.each<[string, (e: ReceivedEvent) => unknown, string]>([
      ['no event at all', () => [], 'the delivery carries no event'],
      ['an unprintable event id', (e) => [{ ...e, eventId: 'ae_\u0000' }], 'the event id is not a printable string of at most 255 characters'],
      ['an empty event type', (e) => [{ ...e, eventType: null }], 'the event type is missing'],
      ['a resource id with a line separator', (e) => [{ ...e, resourceId: 'ch_1\u2028' }], 'the resource id is not a printable string of at most 255 characters'],
      ['an account with a zero-width space', (e) => [{ ...e, account: 'm_1\u200b' }], 'the account is not a printable string of at most 255 characters'],
      ['a lone surrogate in a delivery id', (e) => [{ ...e, deliveryId: 'd_\ud800' }], 'the delivery id is not a printable string of at most 255 characters'],
      ['a second event with an unprintable id', (e) => [e, { ...e, eventId: 'ae_\u0085' }], 'the event id is not a printable string of at most 255 characters'],
    ])('%s: 400 malformed_payload', async (_what, events, detail) => {
      expect(await receiveWith(lying(events), deliver(body), { endpoint: acmeEndpoint, nowMs: NOW_MS })).toEqual({ ok: false, error: 'malformed_payload', detail });
    });

    it('an unprintable API version is dropped, not refused (it is only informative)', async () => {
      const outcome = await receiveWith(lying((e) => [{ ...e, apiVersion: 'v\u0000' }]), deliver(body), { endpoint: acmeEndpoint, nowMs: NOW_MS });
      expect(outcome).toMatchObject({ ok: true, events: [{ apiVersion: null }] });
    });

    it('a thrown MalformedPayloadError is a refusal with its detail; any other throw is left to the route (503)', async () => {
      const malformed = { ...acmeProvider, name: 'picky', receive: () => Promise.reject(new MalformedPayloadError('the envelope is upside down')) };
      expect(await receiveWith(malformed, deliver(body), { endpoint: acmeEndpoint })).toEqual({ ok: false, error: 'malformed_payload', detail: 'the envelope is upside down' });
      const broken = { ...acmeProvider, name: 'broken', receive: () => { throw new Error('acme API down'); } };
      await expect(receiveWith(broken, deliver(body), { endpoint: acmeEndpoint })).rejects.toThrow('acme API down');
    });

    it('what the interface cannot take is the adapter\'s bug: a rejection (the route answers 503), never an acceptance', async () => {
      const answering = (result: unknown): ProviderAdapter => ({ ...acmeProvider, name: 'garbage', receive: () => result as never });
      const event = { eventId: 'ae_1', eventType: 'charge.paid', resourceId: null, deliveryId: null, account: null, apiVersion: null, body: '{}' };
      const cases: Array<[unknown, RegExp]> = [
        [null, /no result object/],
        [42, /no result object/],
        [{ ok: 'yes', secretIndex: null, events: [event] }, /"ok" is neither true nor false/],
        [{ ok: 1, secretIndex: null, events: [event] }, /"ok" is neither true nor false/],
        [{ ok: true, secretIndex: null, events: 'x' }, /events that are not an array/],
        [{ ok: true, secretIndex: null, events: [null] }, /an event that is not an object/],
        [{ ok: true, secretIndex: null, events: [{ ...event, body: 5 }] }, /an event without its body text/],
        [{ ok: true, secretIndex: 3, events: [event] }, /secretIndex that is not one of the endpoint's live keys/],
        [{ ok: true, events: [event] }, /secretIndex that is not one of the endpoint's live keys/],
      ];
      for (const [result, message] of cases) {
        await expect(receiveWith(answering(result), deliver(body), { endpoint: acmeEndpoint, nowMs: NOW_MS })).rejects.toMatchObject({ code: 'provider_adapter_invalid', message: expect.stringMatching(message) });
      }
      // A refusal's detail is kept only when it is text.
      expect(await receiveWith(answering({ ok: false, error: 'malformed_payload', detail: { x: 1 } }), deliver(body), { endpoint: acmeEndpoint })).toEqual({ ok: false, error: 'malformed_payload' });
    });

    it('an adapter that never answers: rejected at the deadline (timeoutMs), as the route answers 503', async () => {
      const hanging = { ...acmeProvider, name: 'hanging', receive: () => new Promise<never>(() => undefined) };
      await expect(receiveWith(hanging, deliver(body), { endpoint: acmeEndpoint, timeoutMs: 50 })).rejects.toMatchObject({
        code: 'provider_adapter_timeout',
        message: 'provider "hanging" receive did not answer within 50 ms',
      });
    });

    it('several events: each keyed and checked', async () => {
      const outcome = await receiveWith(lying((e) => [e, { ...e, eventId: 'ae_second' }]), deliver(body), { endpoint: acmeEndpoint, nowMs: NOW_MS });
      expect(outcome).toMatchObject({ ok: true, events: [{ merchantAccountId: 'm_1' }, { eventId: 'ae_second', merchantAccountId: 'm_1' }] });
    });
  });

  describe('a bad endpoint definition throws the start message', () => {
    const { body } = acmeEvent('charge.paid', 'ch_1');
    it.each<[string, Record<string, unknown>, string]>([
      ['a secret checkSecret refuses', { secrets: ['whsec_nope_nope_nope'] }, 'endpoint: endpoint "test-endpoint": secret #1 must start with "acme_sk_"'],
      ['a weak secret', { secrets: ['acme_sk_x'] }, 'endpoint: endpoint "test-endpoint": secret #1 is shorter than 16 characters'],
      ['a field checkEndpoint refuses', { ...acmeEndpoint, region: 'moon' }, 'endpoint: endpoint "test-endpoint": "region" must be "eu" or "us"'],
      ['both account forms', { ...acmeEndpoint, merchantAccountIds: ['m_2'] }, 'endpoint: endpoint "test-endpoint": set "merchantAccountId" or "merchantAccountIds", not both'],
      ['every secret expired', { secrets: [{ secret: ACME_SECRET, expiresAt: '2020-01-01T00:00:00Z' }] }, 'endpoint: endpoint "test-endpoint": every secret has already expired ("expiresAt" is in the past)'],
      ['a bad id', { ...acmeEndpoint, id: 'Not An Id' }, 'endpoint: endpoint #1: "id" must match [a-z0-9-]{1,64}'],
    ])('%s', async (_what, endpoint, message) => {
      await expect(receiveWith(acmeProvider, deliver(body), { endpoint, nowMs: NOW_MS })).rejects.toThrow(message);
    });

    it("a host adapter that takes a built-in name is refused as the start refuses it", async () => {
      await expect(receiveWith({ ...acmeProvider, name: 'stripe' }, deliver(body), { endpoint: acmeEndpoint })).rejects.toThrow(
        `provider "stripe" is a built-in provider's name`,
      );
    });
  });
});
