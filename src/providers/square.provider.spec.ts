import { createHmac } from 'node:crypto';
import { ConfigurationError, validateEndpoints } from '../config/validate';
import { signedHeaders } from '../testing/sign';
import { receiveWith } from '../testing/receive';
import { BUILT_IN_PROVIDER_NAMES, BUILT_IN_PROVIDERS, PROVIDERS } from './index';
import type { ProviderAdapter } from './provider';
import { MANY_ACCOUNTS_NONE_DECLARED } from './receive';
import { createSquareProvider, SquarePackage, squareProvider } from './square.provider';
import {
  apiPayment,
  COMPUTED_VECTORS,
  disputeNotification,
  PUBLISHED,
  published,
  publishedText,
  paymentNotification,
  SDK_VECTORS,
  SignatureVector,
} from '../../test/fixtures/square';

const KEY = 'sq-signature-key-0001';
const OTHER_KEY = 'sq-signature-key-0002';
const URL = 'https://shop.example/webhooks/square-main';
const MERCHANT = '6SSW7HV8K2ST5';

/** `x-square-hmacsha256-signature` of `body` for `url`, as Square computes it (independently of the signer). */
const squareSignature = (body: string | Buffer, key = KEY, url = URL) => createHmac('sha256', key).update(url).update(body).digest('base64');

const receive = (
  body: string | Buffer,
  headers: Record<string, string> | undefined,
  endpoint: Record<string, unknown> = {},
  adapter: ProviderAdapter = squareProvider,
) =>
  // An adapter made here (with a package of the test's) is run as a host's own: a built-in name is the built-in's.
  receiveWith(adapter === squareProvider ? adapter : { ...adapter, name: 'square-under-test' }, { headers: { 'content-type': 'application/json', ...headers }, body }, {
    endpoint: { secrets: [KEY], notificationUrl: URL, ...('merchantAccountIds' in endpoint ? {} : { merchantAccountId: MERCHANT }), ...endpoint },
  });
/** A delivery signed as Square signs it, to the endpoint under test. */
const signed = (body: string | Buffer, endpoint: Record<string, unknown> = {}, key = KEY) =>
  receive(body, { 'x-square-hmacsha256-signature': squareSignature(body, key) }, endpoint);

/** The published payment.updated example, its exact bytes. */
const PAYMENT_UPDATED = publishedText('payment.updated.COMPLETED');

/** The official package as installed, with its helper's calls recorded (and its answer replaceable). */
function recordedPackage(answer?: (args: Parameters<SquarePackage['WebhooksHelper']['verifySignature']>[0]) => Promise<boolean>) {
  const real = jest.requireActual('square') as SquarePackage;
  const calls: Array<Parameters<SquarePackage['WebhooksHelper']['verifySignature']>[0]> = [];
  const answers: unknown[] = [];
  const pkg: SquarePackage = {
    WebhooksHelper: {
      async verifySignature(args) {
        calls.push(args);
        const result = await (answer ?? ((a) => real.WebhooksHelper.verifySignature(a)))(args);
        answers.push(result);
        return result;
      },
    },
  };
  return { pkg, calls, answers, adapter: createSquareProvider({ loadPackage: () => pkg }) };
}

describe('square: registered as a built-in provider, not of the HMAC scheme', () => {
  it('is among the built-in providers; PROVIDERS stays the four HMAC ones', () => {
    expect(BUILT_IN_PROVIDER_NAMES).toContain('square');
    expect(BUILT_IN_PROVIDERS.square).toBe(squareProvider);
    expect(Object.keys(PROVIDERS).sort()).toEqual(['factuarea', 'paymos', 'standard', 'stripe']);
    expect(squareProvider).toMatchObject({ secrets: 'required', declaresAccount: true, signatureHeaders: ['x-square-hmacsha256-signature'], endpointFields: ['notificationUrl'] });
  });
});

describe("square: Square's published signature vectors (its SDK's tests), through the adapter", () => {
  const test = (v: SignatureVector) => ({ secrets: [v.signatureKey], notificationUrl: v.notificationUrl, merchantAccountIds: ['*'] });
  const asSent = (v: SignatureVector) => ({ 'x-square-hmacsha256-signature': v.signatureHeader });
  const valid = SDK_VECTORS.filter((v) => v.expected === true);
  const invalid = SDK_VECTORS.filter((v) => v.expected === false);

  it('holds 3 that verify, 5 that do not and 2 the helper refuses outright', () => {
    expect([valid.length, invalid.length, SDK_VECTORS.filter((v) => v.expectedThrows).length]).toEqual([3, 5, 2]);
  });

  it('the test notification verifies, confirmed by the official helper, and is recorded as Square names it', async () => {
    const [vector] = valid.filter((v) => v.name === 'sdk-valid-test-notification');
    const recorded = recordedPackage();
    const outcome = await receive(vector.requestBody, asSent(vector), test(vector), recorded.adapter);
    expect(outcome).toEqual({
      ok: true,
      secretIndex: 0,
      events: [
        {
          eventId: 'ac3ac95b-f97d-458c-a6e6-18981597e05f',
          eventType: 'webhooks.test_notification',
          resourceId: 'bc368e64-01aa-407e-b46e-3231809b1129',
          deliveryId: null,
          account: 'MLEFBHHSJGVHD',
          apiVersion: null,
          body: vector.requestBody,
          merchantAccountId: 'MLEFBHHSJGVHD',
          served: true,
        },
      ],
    });
    // The official helper was asked once, with exactly what Square signed, and said yes.
    expect(recorded.calls).toEqual([
      { requestBody: vector.requestBody, signatureHeader: vector.signatureHeader, signatureKey: vector.signatureKey, notificationUrl: vector.notificationUrl },
    ]);
    expect(recorded.answers).toEqual([true]);
    // A test notification is recorded and ignored.
    expect(squareProvider.normalize(JSON.parse(vector.requestBody), 'webhooks.test_notification')).toBeNull();
  });

  it.each(valid.filter((v) => v.name !== 'sdk-valid-test-notification').map((v) => [v.name, v] as const))(
    '%s verifies (its body names no event: then 400 malformed_payload, past the signature)',
    async (_name, vector) => {
      const recorded = recordedPackage();
      expect(await receive(vector.requestBody, asSent(vector), test(vector), recorded.adapter)).toEqual({ ok: false, error: 'malformed_payload', detail: 'type is missing' });
      expect(recorded.answers).toEqual([true]);
    },
  );

  it.each(invalid.map((v) => [v.name, v] as const))('%s: invalid_signature', async (_name, vector) => {
    const recorded = recordedPackage();
    expect(await receive(vector.requestBody, asSent(vector), test(vector), recorded.adapter)).toEqual({ ok: false, error: 'invalid_signature' });
    // Refused by the constant-time comparison: the helper (which compares with ===) is never asked.
    expect(recorded.calls).toEqual([]);
  });

  it('the inputs the helper refuses (an empty key, an empty URL) cannot be configured: the start stops first', () => {
    const [emptyKey] = SDK_VECTORS.filter((v) => v.name === 'sdk-throws-empty-key');
    const [emptyUrl] = SDK_VECTORS.filter((v) => v.name === 'sdk-throws-empty-url');
    expect([emptyKey.expectedThrows, emptyUrl.expectedThrows]).toEqual(['signatureKey is null or empty', 'notificationUrl is null or empty']);
    const start = (endpoint: Record<string, unknown>) =>
      validateEndpoints('WEBHOOK_ENDPOINTS', [{ id: 'square-main', provider: 'square', merchantAccountId: MERCHANT, ...endpoint }]);
    expect(() => start({ secrets: [emptyKey.signatureKey], notificationUrl: emptyKey.notificationUrl })).toThrow(
      'WEBHOOK_ENDPOINTS: endpoint "square-main": "secrets" must be a non-empty array of non-empty strings',
    );
    expect(() => start({ secrets: [emptyUrl.signatureKey], notificationUrl: emptyUrl.notificationUrl })).toThrow(
      'WEBHOOK_ENDPOINTS: endpoint "square-main": "notificationUrl" must be an https URL, exactly as registered on the Square webhook subscription',
    );
  });

  it.each(COMPUTED_VECTORS.map((v) => [v.name, v] as const))('%s (computed over the published example\'s bytes) verifies', async (_name, vector) => {
    const outcome = await receive(vector.requestBody, asSent(vector), test(vector));
    expect(outcome).toMatchObject({ ok: true, secretIndex: 0, events: [{ body: vector.requestBody }] });
  });

  it('fails once any byte of the body, the key, the URL or the header changes', async () => {
    const [vector] = valid.filter((v) => v.name === 'sdk-valid-test-notification');
    const refusals: string[] = [];
    const refused = async (what: string, body: string | Buffer, header: string, endpoint: Record<string, unknown>) => {
      const outcome = await receive(body, { 'x-square-hmacsha256-signature': header }, endpoint);
      if (!outcome.ok && outcome.error === 'invalid_signature') refusals.push(what);
    };
    const bytes = Buffer.from(vector.requestBody);
    for (let i = 0; i < bytes.length; i++) {
      const changed = Buffer.from(bytes);
      changed[i] ^= 0x01;
      await refused(`byte ${i}`, changed, vector.signatureHeader, test(vector));
    }
    const keys = [`${vector.signatureKey}x`, vector.signatureKey.slice(1), vector.signatureKey.toLowerCase()];
    for (const key of keys) await refused(`key ${key}`, vector.requestBody, vector.signatureHeader, { ...test(vector), secrets: [key] });
    const urls = [`${vector.notificationUrl}/`, vector.notificationUrl.replace('webhook.site', 'WEBHOOK.site'), vector.notificationUrl.replace('webhook.site', 'webhook.site:443'), `${vector.notificationUrl}?a=1`];
    for (const url of urls) await refused(`url ${url}`, vector.requestBody, vector.signatureHeader, { ...test(vector), notificationUrl: url });
    const header = vector.signatureHeader;
    const headers = [header.replace(/^G/, 'H'), header.replace(/=$/, ''), `${header.slice(0, 10)}${header[10] === 'A' ? 'B' : 'A'}${header.slice(11)}`];
    for (const h of headers) await refused(`header ${h}`, vector.requestBody, h, test(vector));
    expect(refusals).toHaveLength(bytes.length + keys.length + urls.length + headers.length);
  });
});

describe('square: the order of the checks', () => {
  it('no signature header, or one that is not base64 text: missing_signature, before the body is read', async () => {
    const sig = squareSignature(PAYMENT_UPDATED);
    for (const header of [undefined, '', ' ', `${sig}, ${sig}`, `${sig} `, 'sha256=abc', 'not base64!']) {
      expect(await receive(PAYMENT_UPDATED, header === undefined ? {} : { 'x-square-hmacsha256-signature': header })).toEqual({ ok: false, error: 'missing_signature' });
    }
    // The legacy HMAC-SHA1 header of Square's v1 webhooks is not read.
    expect(await receive(PAYMENT_UPDATED, { 'x-square-signature': createHmac('sha1', KEY).update(URL).update(PAYMENT_UPDATED).digest('base64') })).toEqual({
      ok: false,
      error: 'missing_signature',
    });
    expect(await receive('not json', {})).toEqual({ ok: false, error: 'missing_signature' });
  });

  it('base64 that no live key gives: invalid_signature, whatever the body (a body that is not JSON included)', async () => {
    expect(await signed(PAYMENT_UPDATED, {}, OTHER_KEY)).toEqual({ ok: false, error: 'invalid_signature' });
    expect(await receive('not json', { 'x-square-hmacsha256-signature': squareSignature('other') })).toEqual({ ok: false, error: 'invalid_signature' });
    // The right HMAC in another encoding (hex), or of 20 bytes: never what Square sends.
    const hex = createHmac('sha256', KEY).update(URL).update(PAYMENT_UPDATED).digest('hex');
    expect(await receive(PAYMENT_UPDATED, { 'x-square-hmacsha256-signature': hex })).toEqual({ ok: false, error: 'invalid_signature' });
    // The body parsed and serialised again does not verify.
    const reserialised = JSON.stringify(JSON.parse(PAYMENT_UPDATED));
    expect(await receive(reserialised, { 'x-square-hmacsha256-signature': squareSignature(PAYMENT_UPDATED) })).toEqual({ ok: false, error: 'invalid_signature' });
    // Signed for another URL than the endpoint's (a proxy's, the service's own address).
    expect(await receive(PAYMENT_UPDATED, { 'x-square-hmacsha256-signature': squareSignature(PAYMENT_UPDATED, KEY, 'http://10.0.0.5:3000/webhooks/square-main') })).toEqual({
      ok: false,
      error: 'invalid_signature',
    });
  });

  it('no timestamp is signed: a notification of 2020 verifies whatever toleranceSeconds says', async () => {
    expect(await signed(PAYMENT_UPDATED, { toleranceSeconds: 1 })).toMatchObject({ ok: true, secretIndex: 0 });
  });

  it('every live key verifies (a rotation), and an expired one none', async () => {
    expect(await signed(PAYMENT_UPDATED, { secrets: [OTHER_KEY, KEY] })).toMatchObject({ ok: true, secretIndex: 1 });
    expect(await signed(PAYMENT_UPDATED, { secrets: [OTHER_KEY, KEY] }, OTHER_KEY)).toMatchObject({ ok: true, secretIndex: 0 });
    expect(await signed(PAYMENT_UPDATED, { secrets: [OTHER_KEY, { secret: KEY, expiresAt: '2026-01-01T00:00:00Z' }] })).toEqual({ ok: false, error: 'invalid_signature' });
  });

  it('the official helper decides: when it says anything but true, the delivery is invalid_signature; when it throws, the route answers 503', async () => {
    const no = recordedPackage(async () => false);
    expect(await receive(PAYMENT_UPDATED, { 'x-square-hmacsha256-signature': squareSignature(PAYMENT_UPDATED) }, {}, no.adapter)).toEqual({ ok: false, error: 'invalid_signature' });
    expect(no.calls).toHaveLength(1);
    // A truthy answer that is not `true` (a promise the README's example forgets to await) is no.
    const truthy = createSquareProvider({ loadPackage: () => ({ WebhooksHelper: { verifySignature: async () => Promise.resolve('yes' as never) } }) });
    expect(await receive(PAYMENT_UPDATED, { 'x-square-hmacsha256-signature': squareSignature(PAYMENT_UPDATED) }, {}, truthy)).toEqual({ ok: false, error: 'invalid_signature' });
    const broken = recordedPackage(async () => {
      throw new Error('Failed to validate webhook signature');
    });
    await expect(receive(PAYMENT_UPDATED, { 'x-square-hmacsha256-signature': squareSignature(PAYMENT_UPDATED) }, {}, broken.adapter)).rejects.toThrow(
      'Failed to validate webhook signature',
    );
  });

  describe('then the body: authentic but unusable is 400 malformed_payload, with a detail', () => {
    const malformed = async (body: string | Buffer, detail: string | RegExp) => {
      const outcome = await signed(body);
      expect(outcome).toMatchObject({ ok: false, error: 'malformed_payload' });
      expect(outcome.ok ? '' : outcome.detail).toMatch(detail);
    };
    const envelope = (fields: Record<string, unknown>) => JSON.stringify({ ...published('payment.updated.COMPLETED'), ...fields });

    it.each<[string, string | Buffer, string | RegExp]>([
      ['not JSON', 'this is not json', 'the body is not JSON'],
      ['not UTF-8 (signed over its bytes)', Buffer.from([0x7b, 0xff, 0x7d]), 'the body is not valid UTF-8'],
      ['an array', '[]', 'the body is not a JSON object'],
      ['no event_id', envelope({ event_id: undefined }), 'event_id is missing'],
      ['an empty event_id', envelope({ event_id: '' }), 'event_id is missing'],
      ['an event_id that is a number', envelope({ event_id: 42 }), 'event_id is missing'],
      ['an event_id with a zero-width space', envelope({ event_id: 'a\u200bb' }), 'event_id is not a printable string of at most 255 characters'],
      ['an event_id of 256 characters', envelope({ event_id: 'e'.repeat(256) }), 'event_id is not a printable string of at most 255 characters'],
      ['no type', envelope({ type: undefined }), 'type is missing'],
      ['a type with a C1 control', envelope({ type: 'payment.\u0085updated' }), 'type is not a printable'],
      ['a merchant_id with a bidi override', envelope({ merchant_id: 'M\u202eX' }), 'merchant_id is not a printable'],
    ])('%s', async (_what, body, detail) => {
      await malformed(body, detail);
    });

    it('an unprintable payment id, or disputed payment id', async () => {
      const payment = { ...published('payment.updated.COMPLETED').data.object.payment, id: 'pay\u0000' };
      await malformed(JSON.stringify(paymentNotification('payment.updated', payment)), 'data.object.payment.id is not a printable');
      await malformed(JSON.stringify(disputeNotification('dispute.created', 'pay\u2028', 'EVIDENCE_REQUIRED')), 'data.object.dispute.disputed_payment.payment_id is not a printable');
    });

    it('a body nested deeper than the bound', async () => {
      let deep: unknown = 1;
      for (let i = 0; i < 200; i++) deep = { d: deep };
      await malformed(envelope({ extra: deep }), /deep/);
    });
  });
});

describe('square: what a notification is recorded as', () => {
  const identityOf = async (body: Record<string, unknown>, endpoint: Record<string, unknown> = {}) => {
    const outcome = await signed(JSON.stringify(body), endpoint);
    if (!outcome.ok) throw new Error(`refused: ${outcome.error} ${outcome.detail ?? ''}`);
    const [{ eventId, eventType, resourceId, deliveryId, account, apiVersion, merchantAccountId, served }] = outcome.events;
    return { eventId, eventType, resourceId, deliveryId, account, apiVersion, merchantAccountId, served };
  };

  it('each published example: event_id, type, the payment it is about, merchant_id; no delivery id, no API version', async () => {
    const expected: Record<(typeof PUBLISHED)[number], [string, string, string]> = {
      // data.id is not the payment's id in this example: the payment object is read.
      'payment.created.APPROVED': ['13b867cf-db3d-4b1c-90b6-2f32a9d78124', 'payment.created', 'hYy9pRFVxpDsO1FB05SunFWUe9JZY'],
      'payment.updated.COMPLETED': ['6a8f5f28-54a1-4eb0-a98a-3111513fd4fc', 'payment.updated', 'hYy9pRFVxpDsO1FB05SunFWUe9JZY'],
      // A refund is another object: its own id.
      'refund.created.PENDING': ['bc316346-6691-4243-88ed-6d651a0d0c47', 'refund.created', 'KkAkhdMsgzn59SM8A89WgKwekxLZY'],
      'refund.updated.COMPLETED': ['bc316346-6691-4243-88ed-6d651a0d0c47', 'refund.updated', 'KkAkhdMsgzn59SM8A89WgKwekxLZY'],
      'dispute.created.EVIDENCE_REQUIRED': ['ce8464b5-6628-4ac2-9264-e06c34df3e82', 'dispute.created', 'fbmsaEOpoARDKxiSGH1fqPuqoqFZY'],
      'dispute.state.changed.WON': ['e89ff114-1972-4be0-9481-a621f2385fff', 'dispute.state.changed', 'fbmsaEOpoARDKxiSGH1fqPuqoqFZY'],
      'dispute.state.updated.WON': ['e89ff114-1972-4be0-9481-a621f2385fff', 'dispute.state.updated', 'fbmsaEOpoARDKxiSGH1fqPuqoqFZY'],
    };
    for (const name of PUBLISHED) {
      const body = published(name);
      const [eventId, eventType, resourceId] = expected[name];
      expect({ name, ...(await identityOf(body, { merchantAccountId: body.merchant_id })) }).toEqual({
        name,
        eventId,
        eventType,
        resourceId,
        deliveryId: null,
        account: body.merchant_id,
        apiVersion: null,
        merchantAccountId: body.merchant_id,
        served: true,
      });
    }
  });

  it('the stored body is the bytes as signed', async () => {
    const outcome = await signed(PAYMENT_UPDATED);
    expect(outcome.ok && outcome.events[0].body).toBe(PAYMENT_UPDATED);
  });

  it('merchant_id: another merchant than the endpoint\'s is recorded unserved (it ends account_mismatch); none declared is the endpoint\'s', async () => {
    expect(await identityOf(published('payment.updated.COMPLETED'), { merchantAccountId: 'MLEFBHHSJGVHD' })).toMatchObject({ account: MERCHANT, merchantAccountId: 'MLEFBHHSJGVHD', served: false });
    const { merchant_id: _m, ...none } = published('payment.updated.COMPLETED');
    expect(await identityOf(none)).toMatchObject({ account: null, merchantAccountId: MERCHANT, served: true });
    expect(squareProvider.normalize(none, 'payment.updated')?.declaredAccount).toBeNull();
  });

  it('an endpoint of many sellers (merchantAccountIds) keys each notification on its merchant_id; one that names none is 400', async () => {
    const many = { merchantAccountIds: [MERCHANT, '0HPGX5JYE6EE1'] };
    expect(await identityOf(published('payment.updated.COMPLETED'), many)).toMatchObject({ merchantAccountId: MERCHANT, served: true });
    expect(await identityOf(published('dispute.created.EVIDENCE_REQUIRED'), many)).toMatchObject({ merchantAccountId: '0HPGX5JYE6EE1', served: true });
    expect(await identityOf(published('payment.updated.COMPLETED'), { merchantAccountIds: ['0HPGX5JYE6EE1'] })).toMatchObject({ merchantAccountId: MERCHANT, served: false });
    const { merchant_id: _m, ...none } = published('payment.updated.COMPLETED');
    expect(await signed(JSON.stringify(none), many)).toEqual({ ok: false, error: 'malformed_payload', detail: MANY_ACCOUNTS_NONE_DECLARED });
  });
});

describe('square: each type mapped to the payment lifecycle (normalize)', () => {
  const normalize = (body: Record<string, unknown>) => squareProvider.normalize(body, body.type as string);
  const payment = () => published('payment.updated.COMPLETED').data.object.payment;
  const common = { orderId: null, orderReference: null, declaredAccount: MERCHANT, refundedAmount: null };

  it('payment.created APPROVED (published): authorized, the payment object\'s id, amount_money in minor units', () => {
    expect(normalize(published('payment.created.APPROVED'))).toEqual({
      ...common,
      kind: 'authorized',
      resourceId: 'hYy9pRFVxpDsO1FB05SunFWUe9JZY',
      amount: { form: 'minor', value: 100 },
      currency: 'USD',
      occurredAt: new Date('2020-02-06T21:27:30.792Z'),
    });
  });

  it('payment.updated COMPLETED (published): succeeded', () => {
    expect(normalize(published('payment.updated.COMPLETED'))).toEqual({
      ...common,
      kind: 'succeeded',
      resourceId: 'hYy9pRFVxpDsO1FB05SunFWUe9JZY',
      amount: { form: 'minor', value: 100 },
      currency: 'USD',
      occurredAt: new Date('2020-02-06T21:27:34.308Z'),
    });
  });

  it.each<[string, string | null]>([
    ['APPROVED', 'authorized'],
    ['PENDING', 'processing'],
    ['COMPLETED', 'succeeded'],
    ['CANCELED', 'canceled'],
    ['FAILED', 'failed'],
    ['VOIDED', null],
    ['completed', null],
  ])('payment.created and payment.updated with status %s: %s', (status, kind) => {
    for (const type of ['payment.created', 'payment.updated'] as const) {
      expect(normalize(paymentNotification(type, { ...payment(), status }))?.kind ?? null).toBe(kind);
    }
  });

  it('a canceled payment of Square\'s API examples (CancelPaymentResponse): canceled, amount_money without the tip', () => {
    expect(normalize(paymentNotification('payment.updated', apiPayment('CancelPaymentResponse')))).toMatchObject({
      kind: 'canceled',
      resourceId: '1QjqpBVyrI9S4H9sTGDWU9JeiWdZY',
      amount: { form: 'minor', value: 1000 },
      currency: 'USD',
    });
  });

  it('the order: reference_id (CreatePaymentResponse), an order\'s reference or id', () => {
    expect(normalize(paymentNotification('payment.updated', apiPayment('CreatePaymentResponse')))).toMatchObject({
      kind: 'succeeded',
      resourceId: 'R2B3Z8WMVt3EAmzYWLZvz7Y69EbZY',
      orderId: null,
      orderReference: '123456',
    });
  });

  it('COMPLETED with refunded_money above zero: refunded by that cumulative amount', () => {
    const refunded = (refunded_money: unknown) => normalize(paymentNotification('payment.updated', { ...payment(), refunded_money, refund_ids: ['r1'] }));
    expect(refunded({ amount: 40, currency: 'USD' })).toEqual({
      ...common,
      kind: 'refunded',
      resourceId: 'hYy9pRFVxpDsO1FB05SunFWUe9JZY',
      amount: { form: 'minor', value: 100 },
      currency: 'USD',
      refundedAmount: { form: 'minor', value: 40 },
      occurredAt: new Date('2020-02-06T21:27:34.308Z'),
    });
    expect(refunded({ amount: 100, currency: 'USD' })).toMatchObject({ kind: 'refunded', refundedAmount: { form: 'minor', value: 100 } });
    // Zero, or no amount at all: no refund yet.
    for (const none of [{ amount: 0, currency: 'USD' }, {}, null, 'x', { amount: -5, currency: 'USD' }, { amount: '0', currency: 'USD' }]) {
      expect(refunded(none)).toMatchObject({ kind: 'succeeded', refundedAmount: null });
    }
    // A refund stated in another currency than the payment's: no currency to read both in (currency_mismatch).
    expect(refunded({ amount: 40, currency: 'EUR' })).toMatchObject({ kind: 'refunded', currency: null });
    // Only a completed payment is refunded.
    expect(normalize(paymentNotification('payment.updated', { ...payment(), status: 'APPROVED', refunded_money: { amount: 40, currency: 'USD' } }))).toMatchObject({ kind: 'authorized', refundedAmount: null });
  });

  it('dispute.created (published): disputed, about the disputed payment; its amount never checked', () => {
    expect(normalize(published('dispute.created.EVIDENCE_REQUIRED'))).toEqual({
      kind: 'disputed',
      resourceId: 'fbmsaEOpoARDKxiSGH1fqPuqoqFZY',
      orderId: null,
      orderReference: null,
      amount: null,
      currency: 'USD',
      refundedAmount: null,
      declaredAccount: '0HPGX5JYE6EE1',
      occurredAt: new Date('2020-02-19T21:24:53.258Z'),
    });
  });

  it('dispute.state.changed and its replacement dispute.state.updated (published, WON): dispute_won; LOST: dispute_lost; any other state: nothing', () => {
    expect(normalize(published('dispute.state.changed.WON'))).toMatchObject({ kind: 'dispute_won', resourceId: 'fbmsaEOpoARDKxiSGH1fqPuqoqFZY', amount: null });
    expect(normalize(published('dispute.state.updated.WON'))).toMatchObject({ kind: 'dispute_won', resourceId: 'fbmsaEOpoARDKxiSGH1fqPuqoqFZY', amount: null });
    for (const type of ['dispute.state.changed', 'dispute.state.updated'] as const) {
      expect(normalize(disputeNotification(type, 'pay_1', 'LOST'))).toMatchObject({ kind: 'dispute_lost', resourceId: 'pay_1' });
      for (const state of ['ACCEPTED', 'EVIDENCE_REQUIRED', 'PROCESSING', 'INQUIRY_CLOSED', 'won']) {
        expect(normalize(disputeNotification(type, 'pay_1', state))).toBeNull();
      }
    }
    // dispute.created is disputed whatever its state says.
    expect(normalize(disputeNotification('dispute.created', 'pay_1', 'INQUIRY_EVIDENCE_REQUIRED'))).toMatchObject({ kind: 'disputed', resourceId: 'pay_1' });
  });

  it('(v4) a refund with an outcome confirms or fails that refund by its id, and changes no amount (the payment.updated that follows carries the total)', () => {
    expect(normalize(published('refund.updated.COMPLETED'))).toEqual({
      kind: 'refund_outcome',
      resourceId: 'KkAkhdMsgzn59SM8A89WgKwekxLZY',
      orderId: null,
      orderReference: null,
      amount: null,
      currency: null,
      refundedAmount: null,
      refundOutcomes: [{ id: 'KkAkhdMsgzn59SM8A89WgKwekxLZY_ptNBVqHYxt5gAdfcobBe4u1AZsXhoz06KTtuq9Ls24P', status: 'succeeded' }],
      declaredAccount: '6SSW7HV8K2ST5',
      occurredAt: new Date('2020-02-06T22:14:16.421Z'),
    });
    for (const status of ['REJECTED', 'FAILED']) {
      const body = published('refund.updated.COMPLETED');
      body.data.object.refund.status = status;
      expect(normalize(body)).toMatchObject({
        kind: 'refund_outcome',
        refundOutcomes: [{ id: 'KkAkhdMsgzn59SM8A89WgKwekxLZY_ptNBVqHYxt5gAdfcobBe4u1AZsXhoz06KTtuq9Ls24P', status: 'failed', reason: `refund ${status} by Square` }],
      });
    }
    // refund.created reads the same (a refund may be created already COMPLETED).
    const created = published('refund.updated.COMPLETED');
    created.type = 'refund.created';
    expect(normalize(created)).toMatchObject({ kind: 'refund_outcome', refundOutcomes: [{ status: 'succeeded' }] });
    // Without its id or its payment there is nothing to apply it to.
    for (const field of ['id', 'payment_id']) {
      const body = published('refund.updated.COMPLETED');
      delete body.data.object.refund[field];
      expect(normalize(body)).toBeNull();
    }
  });

  it('other types are recorded and ignored: a refund still pending, test notifications, the rest', () => {
    expect(normalize(published('refund.created.PENDING'))).toBeNull();
    expect(normalize(JSON.parse(SDK_VECTORS[0].requestBody))).toBeNull();
    // A type the service does not act on, even carrying a payment.
    expect(squareProvider.normalize(published('payment.updated.COMPLETED'), 'payment.deleted')).toBeNull();
    expect(squareProvider.normalize(published('dispute.created.EVIDENCE_REQUIRED'), 'dispute.evidence.added')).toBeNull();
  });

  it('a body of another shape reads as nothing to act on, never a throw', () => {
    const bodies = [
      {},
      { data: null },
      { data: { object: { payment: 'x' } } },
      paymentNotification('payment.updated', { ...payment(), id: undefined }),
      paymentNotification('payment.updated', { ...payment(), status: 7 }),
      { ...published('dispute.created.EVIDENCE_REQUIRED'), data: { object: { dispute: { state: 'WON' } } } },
    ];
    for (const body of bodies) {
      for (const type of ['payment.updated', 'dispute.created', 'dispute.state.updated']) expect(squareProvider.normalize(body, type)).toBeNull();
    }
    // Amounts and currency of another type read as absent (the payment domain then says mismatch).
    expect(normalize(paymentNotification('payment.updated', { ...payment(), amount_money: { amount: true, currency: 3 } }))).toMatchObject({ amount: null, currency: null });
  });
});

describe('square: endpoints at start', () => {
  const start = (endpoint: Record<string, unknown>, table?: Map<string, ProviderAdapter>) =>
    validateEndpoints('WEBHOOK_ENDPOINTS', [{ id: 'square-main', provider: 'square', secrets: [KEY], merchantAccountId: MERCHANT, notificationUrl: URL, ...endpoint }], Date.now(), table);
  const refusal = (problem: string) => new ConfigurationError('WEBHOOK_ENDPOINTS', `endpoint "square-main": ${problem}`);

  it('notificationUrl is required, an https URL kept exactly as written', () => {
    const kept = 'https://Shop.example:443/webhooks/square-main/';
    expect(start({ notificationUrl: kept })).toEqual([
      { id: 'square-main', provider: 'square', secrets: [KEY], merchantAccountId: MERCHANT, toleranceSeconds: 300, notificationUrl: kept },
    ]);
    expect(() => start({ notificationUrl: undefined })).toThrow(
      refusal('"notificationUrl" is required: the URL exactly as registered on the Square webhook subscription (Square signs it with the body)'),
    );
    // Square registers HTTPS URLs only.
    for (const notificationUrl of ['', 'shop.example/webhooks', 'http://shop.example/webhooks/square-main', 'ftp://shop.example/x', 42, ['https://shop.example/x']]) {
      expect(() => start({ notificationUrl })).toThrow(refusal('"notificationUrl" must be an https URL, exactly as registered on the Square webhook subscription'));
    }
    expect(() => start({ notificationUrl: ` ${URL}` })).toThrow(
      refusal('"notificationUrl" has spaces around it: give the URL exactly as registered on the Square webhook subscription'),
    );
  });

  it('apiKey (the access token) and apiBaseUrl are accepted, default https://connect.squareup.com; never required', () => {
    expect(start({ apiKey: 'EAAAl_sandbox_token_0123' })[0]).toMatchObject({ apiKey: 'EAAAl_sandbox_token_0123', apiBaseUrl: 'https://connect.squareup.com' });
    expect(start({ apiKey: 'EAAAl_sandbox_token_0123', apiBaseUrl: 'https://connect.squareupsandbox.com/' })[0]).toMatchObject({ apiBaseUrl: 'https://connect.squareupsandbox.com' });
    expect(start({})[0]).not.toHaveProperty('apiKey');
    expect(() => start({ apiKey: 'EAAAl_sandbox_token_0123', apiBaseUrl: 'not a url' })).toThrow(refusal('"apiBaseUrl" must be an http(s) URL'));
  });

  it('the access token never appears in what a refusal says', () => {
    const token = 'EAAAl_secret_token_9876';
    try {
      start({ apiKey: token, notificationUrl: 'nope' });
      throw new Error('not refused');
    } catch (err) {
      expect((err as Error).message).toMatch(/notificationUrl/);
      expect((err as Error).message).not.toContain(token);
    }
  });

  it('merchantAccountIds is allowed (every notification names its merchant_id)', () => {
    expect(start({ merchantAccountId: undefined, merchantAccountIds: ['*'] })[0]).toMatchObject({ merchantAccountIds: ['*'] });
  });

  it('a signature key is checked as any secret (8 characters at least), never echoed', () => {
    expect(() => start({ secrets: ['short'] })).toThrow(refusal('secret #1 is shorter than 8 characters'));
  });
});

describe('square: the optional peer (the module without the square package)', () => {
  const notInstalled = () => {
    throw Object.assign(new Error("Cannot find module 'square' from 'src/providers/square.provider.ts'"), { code: 'MODULE_NOT_FOUND' });
  };
  const INSTALL_LINE = 'WEBHOOK_ENDPOINTS: endpoint "square-main": needs the square package: npm install square';
  const definition = { id: 'square-main', provider: 'square', secrets: [KEY], merchantAccountId: MERCHANT, notificationUrl: URL };
  afterEach(() => jest.dontMock('square'));

  it('one line saying how to install it; the package is looked for once', () => {
    const load = jest.fn(notInstalled);
    const provider = createSquareProvider({ loadPackage: load });
    const table = new Map([['square', provider]]);
    expect(() => validateEndpoints('WEBHOOK_ENDPOINTS', [definition], Date.now(), table)).toThrow(new ConfigurationError('WEBHOOK_ENDPOINTS', 'endpoint "square-main": needs the square package: npm install square'));
    expect(provider.checkEndpoint!({ settings: { notificationUrl: URL } })).toBe('needs the square package: npm install square');
    expect(load).toHaveBeenCalledTimes(1);
  });

  it('a package too old for WebhooksHelper.verifySignature (square before 40) is named; another load failure is thrown as it is', () => {
    const old = createSquareProvider({ loadPackage: () => ({ WebhooksHelper: { isValidWebhookEventSignature: () => true } }) as never });
    expect(old.checkEndpoint!({ settings: { notificationUrl: URL } })).toBe('needs the square package 40 or later (WebhooksHelper.verifySignature): npm install square@latest');
    const broken = createSquareProvider({
      loadPackage: () => {
        throw new SyntaxError('Unexpected token');
      },
    });
    expect(() => broken.checkEndpoint!({ settings: { notificationUrl: URL } })).toThrow(SyntaxError);
  });

  it('loads, and validates and resolves endpoints of other providers, without ever requiring it', () => {
    const factory = jest.fn(notInstalled);
    jest.isolateModules(() => {
      jest.doMock('square', factory);
      const { validateEndpoints: validate } = require('../config/validate') as typeof import('../config/validate');
      const { resolveEndpoint } = require('../config/endpoints') as typeof import('../config/endpoints');
      const providers = require('./index') as typeof import('./index');
      require('../index');
      expect(providers.BUILT_IN_PROVIDERS.square.name).toBe('square');
      const [paymos] = validate('WEBHOOK_ENDPOINTS', [{ id: 'paymos-a', provider: 'paymos', secrets: ['paymos-secret-old'], merchantAccountId: 'acc_1' }]);
      expect(resolveEndpoint(paymos).provider.name).toBe('paymos');
    });
    expect(factory).not.toHaveBeenCalled();
  });

  it('a square endpoint without it stops the start: one line naming the endpoint and the install command (the variable, or the option)', () => {
    jest.isolateModules(() => {
      jest.doMock('square', notInstalled);
      const config = require('../config/validate') as typeof import('../config/validate');
      expect(() => config.validateEndpoints('WEBHOOK_ENDPOINTS', [definition])).toThrow(INSTALL_LINE);
      try {
        config.validateEndpoints('WEBHOOK_ENDPOINTS', [definition]);
      } catch (err) {
        expect((err as Error).message.split('\n')).toHaveLength(1);
      }
      const options = { databaseUrl: 'postgres://localhost/x', redisUrl: 'redis://localhost:6379', endpoints: [definition] };
      expect(() => config.resolveOptions(options as never)).toThrow('endpoints: endpoint "square-main": needs the square package: npm install square');
    });
  });

  it('with it: loaded once, for the first square endpoint, and never by a delivery after', async () => {
    const real = jest.requireActual('square') as SquarePackage;
    const load = jest.fn(() => real);
    const provider = createSquareProvider({ loadPackage: load });
    expect(load).not.toHaveBeenCalled();
    const table = new Map([['square', provider]]);
    validateEndpoints('WEBHOOK_ENDPOINTS', [definition, { ...definition, id: 'square-two' }], Date.now(), table);
    expect(load).toHaveBeenCalledTimes(1);
    expect(await receive(PAYMENT_UPDATED, { 'x-square-hmacsha256-signature': squareSignature(PAYMENT_UPDATED) }, {}, provider)).toMatchObject({ ok: true });
    expect(load).toHaveBeenCalledTimes(1);
  });
});

describe('square: signedHeaders (nestjs-payment-webhooks/testing) sends what Square sends', () => {
  it("reproduces Square's published signature", () => {
    const [vector] = SDK_VECTORS.filter((v) => v.name === 'sdk-valid-test-notification');
    expect(signedHeaders('square', vector.signatureKey, vector.requestBody, { notificationUrl: vector.notificationUrl })).toEqual({
      'content-type': 'application/json',
      'x-square-hmacsha256-signature': vector.signatureHeader,
    });
  });

  it('what it signs verifies through the adapter', async () => {
    expect(await receive(PAYMENT_UPDATED, signedHeaders('square', KEY, PAYMENT_UPDATED, { notificationUrl: URL }))).toMatchObject({ ok: true, secretIndex: 0 });
  });

  it('needs the notificationUrl, and signs with one key', () => {
    expect(() => signedHeaders('square', KEY, PAYMENT_UPDATED)).toThrow('signedHeaders("square", …) needs options.notificationUrl');
    expect(() => signedHeaders('square', KEY, PAYMENT_UPDATED, { notificationUrl: URL, extraSecrets: [OTHER_KEY] })).toThrow('Square signs a notification with one signature key');
  });
});
