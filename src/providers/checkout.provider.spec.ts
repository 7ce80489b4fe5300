import { createHmac } from 'node:crypto';
import type { ProviderEvent } from '../common/provider-event';
import { ConfigurationError, validateEndpoints } from '../config/validate';
import type { EndpointDefinition } from '../config/options';
import { signedHeaders } from '../testing/sign';
import { receiveWith } from '../testing/receive';
import { checkoutProvider } from './checkout.provider';
import { BUILT_IN_PROVIDER_NAMES, BUILT_IN_PROVIDERS, PROVIDERS } from './index';
import { body as fixture, BODY_NAMES, bodyText, SIGNATURE_VECTOR } from '../../test/fixtures/checkout';

/** The signature key of the endpoint under test (Checkout.com shows the one the merchant set). */
const KEY = 'cko-signature-key-0001';
const OTHER_KEY = 'cko-signature-key-0002';

const hex = (key: string, bytes: string | Buffer) => createHmac('sha256', key).update(bytes).digest('hex');

/** A delivery of `text` with `Cko-Signature: <signature>` (none when undefined). */
const receive = (text: string | Buffer, signature: string | undefined, endpoint: Partial<EndpointDefinition> = {}, nowMs?: number) =>
  receiveWith(
    checkoutProvider,
    { headers: { 'content-type': 'application/json', ...(signature === undefined ? {} : { 'Cko-Signature': signature }) }, body: text },
    { endpoint: { secrets: [KEY], merchantAccountId: 'ent_shop', ...endpoint }, ...(nowMs === undefined ? {} : { nowMs }) },
  );

/** `text` signed as Checkout.com signs it, with KEY. */
const signed = (text: string, endpoint: Partial<EndpointDefinition> = {}) => receive(text, hex(KEY, text), endpoint);

const event = (overrides: Record<string, unknown> = {}, data: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: 'evt_az5sblvku4ge3dwpztvyizgcau',
    type: 'payment_captured',
    created_on: '2026-12-01T10:00:00Z',
    data: { id: 'pay_waji5li3mqtetnaor77xmow4bq', action_id: 'act_gse7gcrhleuedmzhq25n3mhweq', amount: 4990, currency: 'EUR', reference: 'ORD-1042', ...data },
    ...overrides,
  });

describe('checkout: registered as a built-in provider', () => {
  it('is among the built-in providers, by its name; PROVIDERS stays the four of the original HMAC set', () => {
    expect(BUILT_IN_PROVIDER_NAMES).toContain('checkout');
    expect(BUILT_IN_PROVIDERS.checkout).toBe(checkoutProvider);
    expect(checkoutProvider.name).toBe('checkout');
    expect(Object.keys(PROVIDERS).sort()).toEqual(['factuarea', 'paymos', 'standard', 'stripe']);
  });

  it('keeps Cko-Signature on the row, as a signature header (redacted when shown); declares no account; needs secrets', () => {
    expect(checkoutProvider.storedHeaders).toEqual(['cko-signature']);
    expect(checkoutProvider.signatureHeaders).toEqual(['cko-signature']);
    expect(checkoutProvider.declaresAccount).toBe(false);
    expect(checkoutProvider.secrets).toBe('required');
    expect(checkoutProvider.usesApi).toEqual({ defaultBaseUrl: 'https://api.checkout.com' });
  });
});

describe('checkout: the published signature vector (checkout-sdk-python PR #14)', () => {
  const { key, body, signature } = SIGNATURE_VECTOR;

  it('is the one the fixture says: key_12345678, "body", dc35f39c…', () => {
    expect([key, body, signature]).toEqual(['key_12345678', 'body', 'dc35f39ca2a088e52aa9833fd897a292133dbb2ab644c6076cb7f13540321f79']);
  });

  it('verifies: past the signature, the 4-byte body is then refused as not JSON (check 6, not 4)', async () => {
    expect(await receive(body, signature, { secrets: [key] })).toEqual({ ok: false, error: 'malformed_payload', detail: 'the body is not JSON' });
  });

  it('the signer of nestjs-payment-webhooks/testing computes the published signature', () => {
    expect(signedHeaders('checkout', key, body)).toEqual({ 'content-type': 'application/json', 'cko-signature': signature });
  });

  it.each([
    ['a byte of the body changed', 'bodY', signature, [key]],
    ['a byte added to the body', 'body\n', signature, [key]],
    ['another key', body, signature, ['key_12345679']],
    ['the key and the body swapped (the PR test\'s mistake)', key, signature, [body + '-padding']],
    ['one hex digit of the signature changed', body, `${signature.slice(0, -1)}0`, [key]],
  ])('fails once %s: 401 invalid_signature', async (_label, text, sig, secrets) => {
    expect(await receive(text, sig, { secrets })).toEqual({ ok: false, error: 'invalid_signature' });
  });
});

describe('checkout: signature, the checks in their order', () => {
  const text = event();

  it('a body signed with the key verifies, with the index of the key that did', async () => {
    const outcome = await signed(text);
    expect(outcome).toMatchObject({ ok: true, secretIndex: 0 });
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['63 hex digits', hex(KEY, text).slice(1)],
    ['65 hex digits', `${hex(KEY, text)}0`],
    ['not hex', 'z'.repeat(64)],
    ['prefixed as other providers write theirs', `sha256=${hex(KEY, text)}`],
    ['two signatures in one header', `${hex(KEY, text)}, ${hex(OTHER_KEY, text)}`],
    ['base64 instead of hex', createHmac('sha256', KEY).update(text).digest('base64')],
  ])('a Cko-Signature %s: 401 missing_signature', async (_label, signature) => {
    expect(await receive(text, signature)).toEqual({ ok: false, error: 'missing_signature' });
  });

  it('missing_signature comes before the body: an unsigned body that is not JSON is still missing_signature', async () => {
    expect(await receive('not json', undefined)).toEqual({ ok: false, error: 'missing_signature' });
  });

  it('invalid_signature comes before the body: a body that is not JSON with a wrong signature is invalid_signature', async () => {
    expect(await receive('not json', hex(OTHER_KEY, 'not json'))).toEqual({ ok: false, error: 'invalid_signature' });
  });

  it('signed with a key the endpoint does not have: invalid_signature', async () => {
    expect(await receive(text, hex(OTHER_KEY, text))).toEqual({ ok: false, error: 'invalid_signature' });
  });

  it('a published body parsed and serialised again does not verify: the signature is over the bytes as sent', async () => {
    const original = bodyText('payment_captured');
    const again = JSON.stringify(JSON.parse(original));
    expect(again).not.toBe(original);
    expect(await receive(again, hex(KEY, original))).toEqual({ ok: false, error: 'invalid_signature' });
    expect((await receive(original, hex(KEY, original))).ok).toBe(true);
  });

  it('the same bytes in upper-case hex do not verify (Checkout.com sends lowercase hex)', async () => {
    expect(await receive(text, hex(KEY, text).toUpperCase())).toEqual({ ok: false, error: 'missing_signature' });
  });

  it('every live secret verifies, for rotations; the index reported is the one that matched', async () => {
    const endpoint = { secrets: [OTHER_KEY, KEY] };
    expect(await receive(text, hex(OTHER_KEY, text), endpoint)).toMatchObject({ ok: true, secretIndex: 0 });
    expect(await receive(text, hex(KEY, text), endpoint)).toMatchObject({ ok: true, secretIndex: 1 });
  });

  it('a secret past its expiresAt no longer verifies', async () => {
    const nowMs = Date.parse('2026-12-01T10:00:00Z');
    const endpoint = { secrets: [{ secret: OTHER_KEY, expiresAt: '2026-11-30T00:00:00Z' }, KEY] };
    expect(await receive(text, hex(OTHER_KEY, text), endpoint, nowMs)).toEqual({ ok: false, error: 'invalid_signature' });
    expect(await receive(text, hex(KEY, text), endpoint, nowMs)).toMatchObject({ ok: true, secretIndex: 1 });
  });

  it('no timestamp is signed: toleranceSeconds never refuses (a delivery read a year later still verifies)', async () => {
    const aYearOn = Date.now() + 365 * 24 * 3600 * 1000;
    expect(await receive(text, hex(KEY, text), { toleranceSeconds: 1 }, aYearOn)).toMatchObject({ ok: true });
  });
});

describe('checkout: the body, once authentic (400 malformed_payload with its detail)', () => {
  it.each<[string, string | Buffer, string]>([
    ['not JSON', '{"id": ', 'the body is not JSON'],
    ['not UTF-8', Buffer.from([0x7b, 0xff, 0x7d]), 'the body is not valid UTF-8'],
    ['a JSON array', '[]', 'the body is not a JSON object'],
    ['without id', event({ id: undefined }), 'id is missing'],
    ['with an empty id', event({ id: '' }), 'id is missing'],
    ['with an id that is a number', event({ id: 42 }), 'id is missing'],
    ['without type', event({ type: undefined }), 'type is missing'],
    ['with an id holding a control character', event({ id: 'evt_\u0000x' }), 'id is not a printable string of at most 255 characters'],
    ['with a type holding a bidirectional override', event({ type: 'payment_\u202ecaptured' }), 'type is not a printable string of at most 255 characters'],
    ['with a data.id holding a line separator', event({}, { id: 'pay_\u2028x' }), 'data.id is not a printable string of at most 255 characters'],
    ['with a dispute whose data.payment_id holds a zero-width space', event({ type: 'dispute_lost' }, { id: 'dsp_1', payment_id: 'pay_\u200bx' }), 'data.payment_id is not a printable string of at most 255 characters'],
    ['with an id of 256 characters', event({ id: `evt_${'a'.repeat(252)}` }), 'id is not a printable string of at most 255 characters'],
  ])('%s', async (_label, text, detail) => {
    expect(await receive(text, hex(KEY, text))).toEqual({ ok: false, error: 'malformed_payload', detail });
  });
});

describe('checkout: what is recorded of a delivery', () => {
  it('event id `id`, type `type`, resource `data.id`, no delivery id, the endpoint\'s account, the bytes as sent', async () => {
    const text = bodyText('payment_captured');
    const outcome = await signed(text);
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    expect(outcome.events).toEqual([
      {
        eventId: 'evt_6aznipgxbuaure3qen5qbzyswy',
        eventType: 'payment_captured',
        resourceId: 'pay_waji5li3mqtetnaor77xmow4bq',
        deliveryId: null,
        account: null,
        apiVersion: null,
        body: text,
        merchantAccountId: 'ent_shop',
        served: true,
      },
    ]);
  });

  it('a dispute is recorded under its payment (data.payment_id), not the dispute (data.id)', async () => {
    for (const name of ['dispute_lost', 'dispute_lost.legacy', 'dispute_won', 'dispute_evidence_required.derived', 'dispute_received.derived', 'dispute_canceled.derived']) {
      const outcome = await signed(bodyText(name));
      expect(outcome.ok && outcome.events[0].resourceId).toBe('pay_cnhuomagalglgozxy5zm');
    }
  });

  it('a dispute without data.payment_id keeps its own id; an event without data.id has no resource id', async () => {
    const dispute = event({ type: 'dispute_lost' }, { id: 'dsp_only' });
    expect((await signed(dispute)) as unknown).toMatchObject({ ok: true, events: [{ resourceId: 'dsp_only' }] });
    const bare = JSON.stringify({ id: 'evt_1', type: 'payment_captured', data: {} });
    expect((await signed(bare)) as unknown).toMatchObject({ ok: true, events: [{ resourceId: null }] });
  });

  it('the payment of a non-dispute event is data.id even when the body has a payment_id', async () => {
    const text = event({}, { id: 'pay_1', payment_id: 'pay_2' });
    expect((await signed(text)) as unknown).toMatchObject({ ok: true, events: [{ resourceId: 'pay_1' }] });
  });

  it('an unknown type is recorded all the same (processing ignores it)', async () => {
    const text = event({ type: 'card_verified' });
    expect((await signed(text)) as unknown).toMatchObject({ ok: true, events: [{ eventType: 'card_verified' }] });
    expect(checkoutProvider.normalize(JSON.parse(text), 'card_verified')).toBeNull();
  });
});

/** What `normalize` makes of each published body: every type of the table, and those ignored. */
const PUBLISHED: Record<string, ProviderEvent | null> = {
  payment_pending: {
    kind: 'processing',
    resourceId: 'pay_y3oqhf46pyzuxjbcn2giaqnb44',
    orderId: null,
    orderReference: 'ORD-5023-4E89',
    amount: { form: 'minor', value: 6540 },
    currency: 'USD',
    refundedAmount: null,
    refund: null,
    declaredAccount: null,
    occurredAt: new Date('2018-04-10T08:12:14Z'),
  },
  payment_approved: {
    kind: 'authorized',
    resourceId: 'pay_waji5li3mqtetnaor77xmow4bq',
    orderId: null,
    orderReference: 'ORD-5023-4E89',
    amount: { form: 'minor', value: 10000 },
    currency: 'EUR',
    refundedAmount: null,
    refund: null,
    declaredAccount: null,
    occurredAt: new Date('2019-06-07T08:25:21Z'),
  },
  payment_captured: {
    kind: 'succeeded',
    resourceId: 'pay_waji5li3mqtetnaor77xmow4bq',
    orderId: null,
    orderReference: 'ORD-5023-4E89',
    amount: { form: 'minor', value: 10000 },
    currency: 'EUR',
    refundedAmount: null,
    refund: null,
    declaredAccount: null,
    occurredAt: new Date('2019-06-07T08:25:22Z'),
  },
  payment_declined: {
    kind: 'failed',
    resourceId: 'pay_pfyq4sdkrvoexn737g2e26c3xm',
    orderId: null,
    orderReference: 'ORD-5023-4E89',
    amount: { form: 'minor', value: 5 },
    currency: 'EUR',
    refundedAmount: null,
    refund: null,
    declaredAccount: null,
    occurredAt: new Date('2019-06-07T08:27:26Z'),
  },
  // A card payout: money sent, never an order's payment.
  'payment_declined.card-payouts': null,
  payment_capture_declined: {
    kind: 'failed',
    resourceId: 'pay_y3oqhf46pyzuxjbcn2giaqnb44',
    orderId: null,
    orderReference: 'ORD-5023-4E89',
    amount: { form: 'minor', value: 6540 },
    currency: 'USD',
    refundedAmount: null,
    refund: null,
    declaredAccount: null,
    occurredAt: new Date('2018-04-10T08:12:14Z'),
  },
  payment_voided: {
    kind: 'canceled',
    resourceId: 'pay_y3oqhf46pyzuxjbcn2giaqnb44',
    orderId: null,
    orderReference: 'ORD-5023-4E89',
    amount: { form: 'minor', value: 6540 },
    currency: 'USD',
    refundedAmount: null,
    refund: null,
    declaredAccount: null,
    occurredAt: new Date('2018-04-10T08:12:14Z'),
  },
  payment_canceled: {
    kind: 'canceled',
    resourceId: 'pay_wtdnbqr2oarebnxeudvehbnrki',
    orderId: null,
    orderReference: 'ORD-5023-4E89',
    amount: { form: 'minor', value: 200 },
    currency: 'EUR',
    refundedAmount: null,
    refund: null,
    declaredAccount: null,
    occurredAt: new Date('2021-06-11T11:59:50.071Z'),
  },
  payment_expired: {
    kind: 'expired',
    resourceId: 'pay_4urtxiosfxxejmzuriescptqsi',
    orderId: null,
    orderReference: 'ORD-5023-4E89',
    amount: { form: 'minor', value: 300 },
    currency: 'EUR',
    refundedAmount: null,
    refund: null,
    declaredAccount: null,
    occurredAt: new Date('2021-06-11T12:01:26.316Z'),
  },
  'payment_expired.legacy': {
    kind: 'expired',
    resourceId: 'pay_y3oqhf46pyzuxjbcn2giaqnb44',
    orderId: null,
    orderReference: 'ORD-5023-4E89',
    amount: { form: 'minor', value: 6540 },
    currency: 'USD',
    refundedAmount: null,
    refund: null,
    declaredAccount: null,
    occurredAt: new Date('2018-04-10T08:12:14Z'),
  },
  payment_refunded: {
    kind: 'refunded',
    resourceId: 'pay_pswr5qaqzzferh2puzfyrefzuy',
    orderId: null,
    orderReference: 'ORD-5023-4E89',
    amount: null,
    currency: 'GBP',
    refundedAmount: null,
    refund: { id: 'act_7fmebms4rtmuja2poigylogjk4', amount: { form: 'minor', value: 200 } },
    // (v4) The action id is what a refund sent through the module was answered with: it confirms it.
    refundOutcomes: [{ id: 'act_7fmebms4rtmuja2poigylogjk4', status: 'succeeded' }],
    declaredAccount: null,
    occurredAt: new Date('2020-02-03T11:35:03Z'),
  },
  'dispute_received.derived': {
    kind: 'disputed',
    resourceId: 'pay_cnhuomagalglgozxy5zm',
    orderId: null,
    orderReference: 'some-company-ref',
    amount: null,
    currency: 'USD',
    refundedAmount: null,
    refund: null,
    declaredAccount: null,
    occurredAt: new Date('2018-07-10T11:04:48Z'),
  },
  'dispute_evidence_required.derived': {
    kind: 'disputed',
    resourceId: 'pay_cnhuomagalglgozxy5zm',
    orderId: null,
    orderReference: 'Disputes QA',
    amount: null,
    currency: 'GBP',
    refundedAmount: null,
    refund: null,
    declaredAccount: null,
    occurredAt: new Date('2022-12-15T15:20:32.582Z'),
  },
  dispute_won: {
    kind: 'dispute_won',
    resourceId: 'pay_cnhuomagalglgozxy5zm',
    orderId: null,
    orderReference: 'some-company-ref',
    amount: null,
    currency: null,
    refundedAmount: null,
    refund: null,
    declaredAccount: null,
    occurredAt: new Date('2018-07-06T11:19:20Z'),
  },
  dispute_lost: {
    kind: 'dispute_lost',
    resourceId: 'pay_cnhuomagalglgozxy5zm',
    orderId: null,
    orderReference: 'Disputes QA',
    amount: null,
    currency: 'GBP',
    refundedAmount: null,
    refund: null,
    declaredAccount: null,
    occurredAt: new Date('2022-12-15T15:20:32.582Z'),
  },
  'dispute_lost.legacy': {
    kind: 'dispute_lost',
    resourceId: 'pay_cnhuomagalglgozxy5zm',
    orderId: null,
    orderReference: 'some-company-ref',
    amount: null,
    currency: 'USD',
    refundedAmount: null,
    refund: null,
    declaredAccount: null,
    occurredAt: new Date('2018-07-10T11:04:48Z'),
  },
  // A dispute type the service does not act on.
  'dispute_canceled.derived': null,
};

describe("checkout: Checkout.com's published example bodies, through the adapter", () => {
  it('every fixture has its expected event here, and every type of the table has a fixture', () => {
    expect(Object.keys(PUBLISHED).sort()).toEqual([...BODY_NAMES]);
    const types = new Set(BODY_NAMES.map((n) => fixture(n).type));
    for (const type of ['payment_pending', 'payment_approved', 'payment_captured', 'payment_declined', 'payment_capture_declined', 'payment_voided', 'payment_canceled', 'payment_expired', 'payment_refunded', 'dispute_received', 'dispute_evidence_required', 'dispute_won', 'dispute_lost']) {
      expect(types).toContain(type);
    }
  });

  it.each(Object.entries(PUBLISHED))('%s: signed with our key, it verifies and is recorded; normalize maps it', async (name, expected) => {
    const text = bodyText(name);
    const outcome = await signed(text);
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    const [recorded] = outcome.events;
    expect(recorded.eventId).toBe(fixture(name).id);
    expect(recorded.eventType).toBe(fixture(name).type);
    expect(checkoutProvider.normalize(JSON.parse(recorded.body), recorded.eventType)).toEqual(expected);
  });
});

describe('checkout: the field rules of normalize', () => {
  const normalize = (data: Record<string, unknown>, overrides: Record<string, unknown> = {}) => {
    const body = JSON.parse(event(overrides, data));
    return checkoutProvider.normalize(body, body.type as string);
  };
  const ORDER = '0196f3b2-7c4e-7a10-9d2e-5b8c4a1f0e21';

  it('the order: data.metadata.order_id (our id) first, data.reference (its reference or id) beside it', () => {
    expect(normalize({ metadata: { order_id: ORDER } })).toMatchObject({ orderId: ORDER, orderReference: 'ORD-1042' });
    expect(normalize({ metadata: { coupon_code: 'NY2018' } })).toMatchObject({ orderId: null, orderReference: 'ORD-1042' });
    expect(normalize({ reference: undefined })).toMatchObject({ orderId: null, orderReference: null });
    // Checkout.com's metadata values may be numbers: one is no order id.
    expect(normalize({ metadata: { order_id: 123989 } })).toMatchObject({ orderId: null, orderReference: 'ORD-1042' });
  });

  it("a dispute's order reference is data.payment_reference (data.reference in the older shape)", () => {
    expect(normalize({ reference: undefined, payment_reference: 'ORD-9', payment_id: 'pay_1' }, { type: 'dispute_lost' })).toMatchObject({ orderReference: 'ORD-9' });
    expect(normalize({ reference: 'ORD-8', payment_reference: 'ORD-9', payment_id: 'pay_1' }, { type: 'dispute_lost' })).toMatchObject({ orderReference: 'ORD-8' });
    // payment_reference is a dispute's field only.
    expect(normalize({ reference: undefined, payment_reference: 'ORD-9' })).toMatchObject({ orderReference: null });
  });

  it('the amount: data.amount in minor units, in data.currency; a numeric string is read too', () => {
    expect(normalize({ amount: 4990, currency: 'EUR' })).toMatchObject({ amount: { form: 'minor', value: 4990 }, currency: 'EUR' });
    expect(normalize({ amount: '4990' })).toMatchObject({ amount: { form: 'minor', value: '4990' } });
    expect(normalize({ amount: undefined })).toMatchObject({ amount: null });
  });

  it('a dispute states no amount (a dispute may be partial), only its currency', () => {
    for (const type of ['dispute_received', 'dispute_evidence_required', 'dispute_won', 'dispute_lost']) {
      expect(normalize({ payment_id: 'pay_1', amount: 100 }, { type })).toMatchObject({ amount: null, refund: null, currency: 'EUR' });
    }
  });

  it('payment_refunded: a refund of data.amount under data.action_id, never a cumulative amount', () => {
    expect(normalize({ action_id: 'act_1', amount: 1200 }, { type: 'payment_refunded' })).toMatchObject({
      kind: 'refunded',
      amount: null,
      refundedAmount: null,
      refund: { id: 'act_1', amount: { form: 'minor', value: 1200 } },
    });
    // Without its action id or amount it is no refund the payment can count (processing rejects it).
    expect(normalize({ action_id: undefined }, { type: 'payment_refunded' })).toMatchObject({ kind: 'refunded', refund: null, refundedAmount: null });
    expect(normalize({ amount: undefined }, { type: 'payment_refunded' })).toMatchObject({ kind: 'refunded', refund: null });
  });

  it('payment_refunded confirms the refund its action id names (refundOutcomes), when it names one', () => {
    expect(normalize({ action_id: 'act_1', amount: 1200 }, { type: 'payment_refunded' })?.refundOutcomes).toEqual([{ id: 'act_1', status: 'succeeded' }]);
    expect(normalize({ action_id: undefined }, { type: 'payment_refunded' })?.refundOutcomes).toBeUndefined();
    // Other types confirm no refund.
    expect(normalize({ action_id: 'act_1' }, { type: 'payment_captured' })?.refundOutcomes).toBeUndefined();
  });

  it("payment_refund_declined (Checkout.com's published example): the refund under data.action_id failed, with the acquirer's summary and code; no payment change", () => {
    const published = {
      id: 'evt_y5kl22y4bqnupcuw46ztq2c56i',
      type: 'payment_refund_declined',
      version: '1.0.29',
      created_on: '2023-05-24T09:27:48.586796Z',
      data: {
        id: 'pay_awlo4m4phelezkhsj4egc6d35q',
        action_id: 'act_rzy3fxofo3lufmjzaismfzjiae',
        reference: 'ORD-5023-4E89',
        amount: 3737,
        processed_on: '2023-05-24T09:27:47.0891199Z',
        response_code: '20006',
        response_summary: 'Error / Invalid Request Parameters',
        metadata: { coupon_code: 'NY2018', partner_id: '123989' },
        currency: 'EUR',
      },
    };
    expect(checkoutProvider.normalize(published, published.type)).toEqual({
      kind: 'refund_outcome',
      resourceId: 'pay_awlo4m4phelezkhsj4egc6d35q',
      orderId: null,
      orderReference: 'ORD-5023-4E89',
      amount: null,
      currency: null,
      refundedAmount: null,
      refund: null,
      refundOutcomes: [{ id: 'act_rzy3fxofo3lufmjzaismfzjiae', status: 'failed', reason: 'Error / Invalid Request Parameters (20006)' }],
      declaredAccount: null,
      occurredAt: new Date('2023-05-24T09:27:48.586796Z'),
    });
    expect(normalize({ action_id: 'act_1', response_summary: undefined, response_code: undefined }, { type: 'payment_refund_declined' })?.refundOutcomes).toEqual([
      { id: 'act_1', status: 'failed', reason: 'declined by Checkout.com' },
    ]);
    // Without the refund's action id, or the payment, there is nothing to apply it to.
    expect(normalize({ action_id: undefined }, { type: 'payment_refund_declined' })).toBeNull();
    expect(normalize({ id: undefined, action_id: 'act_1' }, { type: 'payment_refund_declined' })).toBeNull();
  });

  it('the payment: data.id; a dispute: data.payment_id; neither present: ignored', () => {
    expect(normalize({ id: 'pay_9' })).toMatchObject({ resourceId: 'pay_9' });
    expect(normalize({ id: 'dsp_1', payment_id: 'pay_9' }, { type: 'dispute_won' })).toMatchObject({ resourceId: 'pay_9' });
    expect(normalize({ id: 'dsp_1' }, { type: 'dispute_won' })).toBeNull();
    expect(normalize({ id: undefined })).toBeNull();
  });

  it('when it happened: created_on, else timestamp; neither or unreadable: null', () => {
    expect(normalize({}, { created_on: '2026-12-01T10:00:00Z' })?.occurredAt).toEqual(new Date('2026-12-01T10:00:00Z'));
    expect(normalize({}, { created_on: undefined, timestamp: '2026-12-02T10:00:00.5+00:00' })?.occurredAt).toEqual(new Date('2026-12-02T10:00:00.500Z'));
    expect(normalize({}, { created_on: 'yesterday' })?.occurredAt).toBeNull();
  });

  it('the type table; every other type (and a body without data) is ignored', () => {
    const table: Record<string, string> = {
      payment_pending: 'processing',
      payment_approved: 'authorized',
      payment_captured: 'succeeded',
      payment_declined: 'failed',
      payment_capture_declined: 'failed',
      payment_voided: 'canceled',
      payment_canceled: 'canceled',
      payment_expired: 'expired',
      payment_refunded: 'refunded',
      dispute_received: 'disputed',
      dispute_evidence_required: 'disputed',
      dispute_won: 'dispute_won',
      dispute_lost: 'dispute_lost',
    };
    for (const [type, kind] of Object.entries(table)) expect(normalize({ payment_id: 'pay_1' }, { type })?.kind).toBe(kind);
    for (const type of ['payment_authentication_failed', 'card_verified', 'dispute_canceled', 'dispute_resolved', 'dispute_expired', 'payment_paid', 'PAYMENT_CAPTURED']) {
      expect(normalize({ payment_id: 'pay_1' }, { type })).toBeNull();
    }
    expect(checkoutProvider.normalize({ id: 'evt_1', type: 'payment_captured' }, 'payment_captured')).toBeNull();
  });

  it('the body declares no account: declaredAccount is always null (the endpoint\'s account is the event\'s)', () => {
    expect(normalize({ entity_id: 'ent_other', client_id: 'cli_other' })).toMatchObject({ declaredAccount: null });
  });
});

describe('checkout: endpoint definitions, validated at start', () => {
  const validate = (over: Record<string, unknown>) =>
    validateEndpoints('WEBHOOK_ENDPOINTS', [{ id: 'checkout-main', provider: 'checkout', secrets: [KEY], merchantAccountId: 'ent_shop', ...over }]);
  const refusal = (over: Record<string, unknown>): string => {
    try {
      validate(over);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigurationError);
      return (err as Error).message;
    }
    throw new Error('not refused');
  };

  it('without API credentials it receives; with a secret key the base URL defaults to https://api.checkout.com', () => {
    expect(validate({})[0]).toEqual({ id: 'checkout-main', provider: 'checkout', secrets: [KEY], merchantAccountId: 'ent_shop', toleranceSeconds: 300 });
    expect(validate({ apiKey: 'sk_sbox_m73dzbpy7cf3gfd46xr4yj5xo4e' })[0]).toMatchObject({ apiKey: 'sk_sbox_m73dzbpy7cf3gfd46xr4yj5xo4e', apiBaseUrl: 'https://api.checkout.com' });
    expect(validate({ apiKey: 'sk_test_fde517a8-3f01-41ef-b4bd-4282384b0a64', apiBaseUrl: 'http://127.0.0.1:4010/' })[0]).toMatchObject({ apiBaseUrl: 'http://127.0.0.1:4010' });
  });

  it('an apiKey that is not a secret key (a public key, say) stops the start, one line that never shows it', () => {
    const message = refusal({ apiKey: 'pk_sbox_publickey1234567890' });
    expect(message).toBe('WEBHOOK_ENDPOINTS: endpoint "checkout-main": "apiKey" must be a Checkout.com secret key (sk_…)');
    expect(message).not.toContain('publickey');
    expect(refusal({ apiKey: '' })).toBe('WEBHOOK_ENDPOINTS: endpoint "checkout-main": "apiKey" must be a non-empty string');
    expect(refusal({ apiKey: 'sk_x', apiBaseUrl: 'api.checkout.com' })).toBe('WEBHOOK_ENDPOINTS: endpoint "checkout-main": "apiBaseUrl" must be an http(s) URL');
  });

  it('needs a secret; a placeholder-short one is refused; merchantAccountIds is not available (the body names no account)', () => {
    expect(refusal({ secrets: [] })).toMatch(/^WEBHOOK_ENDPOINTS: endpoint "checkout-main": /);
    expect(refusal({ secrets: ['short'] })).toBe('WEBHOOK_ENDPOINTS: endpoint "checkout-main": secret #1 is shorter than 8 characters');
    expect(refusal({ merchantAccountId: undefined, merchantAccountIds: ['*'] })).toBe(
      'WEBHOOK_ENDPOINTS: endpoint "checkout-main": "merchantAccountIds" is not available for checkout (its bodies declare no account); use "merchantAccountId"',
    );
  });
});

describe('checkout: the signer of nestjs-payment-webhooks/testing', () => {
  it('signs the exact body with the secret, hex, in Cko-Signature; no timestamp or id header', () => {
    const text = bodyText('payment_refunded');
    expect(signedHeaders('checkout', KEY, text, { timestamp: 1, eventId: 'x' })).toEqual({ 'content-type': 'application/json', 'cko-signature': hex(KEY, text) });
  });

  it('refuses extra secrets: Checkout.com sends one signature', () => {
    expect(() => signedHeaders('checkout', KEY, '{}', { extraSecrets: [OTHER_KEY] })).toThrow('checkout: Checkout.com sends one signature; extraSecrets does not apply');
  });
});
