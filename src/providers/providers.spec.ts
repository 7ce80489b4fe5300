import type { IncomingHttpHeaders } from 'node:http';
import { exampleEvents } from '../../test/support/fixtures';
import { factuareaProvider } from './factuarea.provider';
import {
  decodeHexSignature,
  EnvelopeIdentity,
  header,
  MalformedPayloadError,
  parseKeyValueHeader,
  parseTimestampedHeader,
  parseUnixSeconds,
  PROVIDERS,
  HmacProvider,
  ProviderAdapter,
  requireId,
  optionalId,
  v1Candidates,
} from './index';
import { paymosProvider } from './paymos.provider';
import { standardProvider } from './standard.provider';
import { stripeProvider } from './stripe.provider';

/** What identify() reads of the declared account and API version (their own tests are below). */
function declared(provider: string, body: Record<string, unknown>): { account: string | null; apiVersion: string | null } {
  const obj = (v: unknown) => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {});
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  switch (provider) {
    case 'factuarea': return { account: str(obj(body.account).id), apiVersion: str(body.api_version) };
    case 'stripe': return { account: str(body.account), apiVersion: str(body.api_version) };
    case 'standard': return { account: str(obj(body.data).account_id), apiVersion: null };
    default: return { account: null, apiVersion: null };
  }
}


type Body = Record<string, unknown>;

/** The MalformedPayloadError `fn` throws (fails the test if it throws nothing or something else). */
function malformed(fn: () => unknown): MalformedPayloadError {
  try {
    fn();
  } catch (err) {
    if (err instanceof MalformedPayloadError) return err;
    throw err;
  }
  throw new Error('expected a MalformedPayloadError, nothing was thrown');
}

const CONTROL = ['\u0000', '\n', '\r', '\t', '\u001f', '\u007f'];
const ID_255 = `evt_${'x'.repeat(251)}`;
const ID_256 = `evt_${'x'.repeat(252)}`;

describe('PROVIDERS', () => {
  it('maps every provider name to its adapter', () => {
    expect(Object.keys(PROVIDERS).sort()).toEqual(['factuarea', 'paymos', 'standard', 'stripe']);
    expect(PROVIDERS.paymos).toBe(paymosProvider);
    expect(PROVIDERS.factuarea).toBe(factuareaProvider);
    expect(PROVIDERS.stripe).toBe(stripeProvider);
    expect(PROVIDERS.standard).toBe(standardProvider);
    for (const [name, adapter] of Object.entries(PROVIDERS)) expect(adapter.name).toBe(name);
  });

  it('declares lower-case header names, signature headers among the stored ones', () => {
    for (const adapter of Object.values(PROVIDERS) as ProviderAdapter[]) {
      for (const name of [...adapter.storedHeaders, ...adapter.signatureHeaders]) expect(name).toBe(name.toLowerCase());
      for (const name of adapter.signatureHeaders) expect(adapter.storedHeaders.includes(name)).toBe(true);
    }
  });
});

describe('paymosProvider.identify', () => {
  const events = exampleEvents('paymos');
  const body = (): Body => structuredClone(events['invoice.paid']);

  it('has example events to read', () => {
    expect(Object.keys(events).length).toBeGreaterThan(0);
  });

  it.each(Object.entries(events))('%s: event id, type and invoice id', (type, event) => {
    expect(paymosProvider.identify(event, {})).toEqual<EnvelopeIdentity>({
      ...declared('paymos', event),
      eventId: event.event_id as string,
      eventType: type,
      resourceId: 'inv_51ab77c0',
      deliveryId: null,
    });
  });

  it('reads the resource id from data.id', () => {
    const b = { event_id: 'evt_1', type: 'withdrawal.completed', data: { object: 'withdrawal', id: 'wdr_9' } };
    expect(paymosProvider.identify(b, {})).toEqual({
      ...declared('paymos', b),
      eventId: 'evt_1',
      eventType: 'withdrawal.completed',
      resourceId: 'wdr_9',
      deliveryId: null,
    });
  });

  it.each<[string, unknown]>([
    ['no data', undefined],
    ['data without id', { object: 'invoice' }],
    ['a numeric data.id', { id: 42 }],
    ['an empty data.id', { id: '' }],
    ['data as an array', [{ id: 'inv_1' }]],
    ['data as a string', 'inv_1'],
  ])('gives resourceId null for %s', (_label, data) => {
    expect(paymosProvider.identify({ event_id: 'evt_1', type: 'invoice.paid', data }, {}).resourceId).toBe(null);
  });

  it('accepts X-Webhook-Id equal to the body event_id', () => {
    const b = body();
    expect(paymosProvider.identify(b, { 'x-webhook-id': b.event_id as string }).eventId).toBe(b.event_id);
  });

  it('rejects X-Webhook-Id different from the body event_id', () => {
    const err = malformed(() => paymosProvider.identify(body(), { 'x-webhook-id': 'evt_other' }));
    expect(err.detail).toBe("x-webhook-id header does not match the body's event id");
    expect(err.message).toBe(err.detail);
  });

  it('rejects an empty X-Webhook-Id', () => {
    expect(malformed(() => paymosProvider.identify(body(), { 'x-webhook-id': '' })).detail).toBe(
      "x-webhook-id header does not match the body's event id",
    );
  });

  it('ignores headers of other providers', () => {
    const b = body();
    expect(
      paymosProvider.identify(b, { 'factuarea-event-id': 'x', 'webhook-id': 'y', 'factuarea-delivery-id': 'd' }),
    ).toEqual({ eventId: b.event_id, eventType: 'invoice.paid', resourceId: 'inv_51ab77c0', deliveryId: null, account: null, apiVersion: null });
  });

  it.each<[string, unknown]>([
    ['absent', undefined],
    ['empty', ''],
    ['a number', 123],
    ['null', null],
  ])('rejects an event_id that is %s', (_label, value) => {
    const b = body();
    if (value === undefined) delete b.event_id;
    else b.event_id = value;
    expect(malformed(() => paymosProvider.identify(b, {})).detail).toBe('event_id is missing');
  });

  it('rejects a missing type', () => {
    const b = body();
    delete b.type;
    expect(malformed(() => paymosProvider.identify(b, {})).detail).toBe('type is missing');
  });

  it.each(CONTROL)('rejects an event_id holding control character %j', (c) => {
    expect(malformed(() => paymosProvider.identify({ ...body(), event_id: `evt_${c}1` }, {})).detail).toBe(
      'event_id is not a printable string of at most 255 characters',
    );
  });

  it('accepts an event_id of 255 characters and rejects one of 256', () => {
    expect(paymosProvider.identify({ ...body(), event_id: ID_255 }, {}).eventId).toBe(ID_255);
    expect(malformed(() => paymosProvider.identify({ ...body(), event_id: ID_256 }, {})).detail).toBe(
      'event_id is not a printable string of at most 255 characters',
    );
  });

  it('rejects a data.id holding a control character', () => {
    const b = { ...body(), data: { id: 'inv_\u00001' } };
    expect(malformed(() => paymosProvider.identify(b, {})).detail).toBe(
      'data.id is not a printable string of at most 255 characters',
    );
  });
});

describe('factuareaProvider.identify', () => {
  const events = exampleEvents('factuarea');
  const body = (): Body => structuredClone(events['invoice.sent']);
  const EVENT_ID = '069229b1-ffe9-4553-af69-4580a54597e3';
  const INVOICE_ID = '01931b3e-7c4a-7f2e-9a8b-3c5d6e7f8a42';

  it('has example events to read', () => {
    expect(Object.keys(events).length).toBeGreaterThan(0);
    expect(body().id).toBe(EVENT_ID);
  });

  it.each(Object.entries(events))('%s: event id, type and invoice id', (type, event) => {
    expect(factuareaProvider.identify(event, {})).toEqual<EnvelopeIdentity>({
      ...declared('factuarea', event),
      eventId: event.id as string,
      eventType: type,
      resourceId: INVOICE_ID,
      deliveryId: null,
    });
  });

  it('reads the delivery id from Factuarea-Delivery-Id', () => {
    expect(factuareaProvider.identify(body(), { 'factuarea-delivery-id': 'dlv-1' })).toEqual({
      ...declared('factuarea', body()),
      eventId: EVENT_ID,
      eventType: 'invoice.sent',
      resourceId: INVOICE_ID,
      deliveryId: 'dlv-1',
    });
  });

  it('gives deliveryId null for an empty Factuarea-Delivery-Id', () => {
    expect(factuareaProvider.identify(body(), { 'factuarea-delivery-id': '' }).deliveryId).toBe(null);
  });

  it('rejects a Factuarea-Delivery-Id holding a control character', () => {
    expect(malformed(() => factuareaProvider.identify(body(), { 'factuarea-delivery-id': 'd\u0000' })).detail).toBe(
      'Factuarea-Delivery-Id is not a printable string of at most 255 characters',
    );
  });

  it('accepts Factuarea-Event-Id and Idempotency-Key equal to the body id', () => {
    const headers = { 'factuarea-event-id': EVENT_ID, 'idempotency-key': EVENT_ID, 'factuarea-delivery-id': 'dlv-2' };
    expect(factuareaProvider.identify(body(), headers)).toEqual({
      ...declared('factuarea', body()),
      eventId: EVENT_ID,
      eventType: 'invoice.sent',
      resourceId: INVOICE_ID,
      deliveryId: 'dlv-2',
    });
  });

  it('rejects a Factuarea-Event-Id different from the body id', () => {
    expect(malformed(() => factuareaProvider.identify(body(), { 'factuarea-event-id': 'other' })).detail).toBe(
      "factuarea-event-id header does not match the body's event id",
    );
  });

  it('rejects an Idempotency-Key different from the body id', () => {
    const headers = { 'factuarea-event-id': EVENT_ID, 'idempotency-key': 'other' };
    expect(malformed(() => factuareaProvider.identify(body(), headers)).detail).toBe(
      "idempotency-key header does not match the body's event id",
    );
  });

  it('compares the id headers exactly (case matters)', () => {
    expect(
      malformed(() => factuareaProvider.identify(body(), { 'factuarea-event-id': EVENT_ID.toUpperCase() })).detail,
    ).toBe("factuarea-event-id header does not match the body's event id");
  });

  it('does not check X-Webhook-Id (a Paymos header)', () => {
    expect(factuareaProvider.identify(body(), { 'x-webhook-id': 'unrelated' }).eventId).toBe(EVENT_ID);
  });

  it('reads the resource id from data.object.id, also for account events', () => {
    const b = {
      id: 'e-1',
      type: 'account.updated',
      account: { id: 'acc-uuid' },
      data: { object: { object: 'account', id: 'acc-uuid' } },
    };
    expect(factuareaProvider.identify(b, {})).toEqual({
      ...declared('factuarea', b),
      eventId: 'e-1',
      eventType: 'account.updated',
      resourceId: 'acc-uuid',
      deliveryId: null,
    });
  });

  it.each<[string, unknown]>([
    ['no data', undefined],
    ['data without object', { type: 'invoice.sent' }],
    ['data.id instead of data.object.id', { id: 'inv-1' }],
    ['a numeric data.object.id', { object: { id: 7 } }],
  ])('gives resourceId null for %s', (_label, data) => {
    expect(factuareaProvider.identify({ id: 'e-1', type: 'invoice.sent', data }, {}).resourceId).toBe(null);
  });

  it('rejects a missing id', () => {
    const b = body();
    delete b.id;
    expect(malformed(() => factuareaProvider.identify(b, {})).detail).toBe('id is missing');
  });

  it('rejects a missing id even when Factuarea-Event-Id is sent', () => {
    const b = body();
    delete b.id;
    expect(malformed(() => factuareaProvider.identify(b, { 'factuarea-event-id': EVENT_ID })).detail).toBe(
      'id is missing',
    );
  });

  it('rejects a missing type', () => {
    const b = body();
    delete b.type;
    expect(malformed(() => factuareaProvider.identify(b, {})).detail).toBe('type is missing');
  });

  it.each(CONTROL)('rejects an id holding control character %j', (c) => {
    expect(malformed(() => factuareaProvider.identify({ ...body(), id: `a${c}b` }, {})).detail).toBe(
      'id is not a printable string of at most 255 characters',
    );
  });

  it('accepts an id of 255 characters and rejects one of 256', () => {
    expect(factuareaProvider.identify({ ...body(), id: ID_255 }, {}).eventId).toBe(ID_255);
    expect(malformed(() => factuareaProvider.identify({ ...body(), id: ID_256 }, {})).detail).toBe(
      'id is not a printable string of at most 255 characters',
    );
  });
});

describe('stripeProvider.identify', () => {
  const events = exampleEvents('stripe');

  it('has example events of both kinds to read', () => {
    const types = Object.keys(events);
    expect(types.some((t) => t.startsWith('payment_intent.'))).toBe(true);
    expect(types.includes('charge.refunded')).toBe(true);
    expect(types.includes('charge.dispute.created')).toBe(true);
    expect(types.includes('charge.dispute.closed')).toBe(true);
  });

  it.each(Object.entries(events))('%s: event id, type and PaymentIntent id', (type, event) => {
    expect(stripeProvider.identify(event, {})).toEqual<EnvelopeIdentity>({
      ...declared('stripe', event),
      eventId: event.id as string,
      eventType: type,
      resourceId: 'pi_3QxAbcDEF',
      deliveryId: null,
    });
  });

  const pi = (type: string, object: Record<string, unknown>) => ({
    id: 'evt_1',
    type,
    data: { object },
  });

  it.each([
    ['payment_intent.succeeded', { id: 'pi_1', payment_intent: 'pi_other' }, 'pi_1'],
    ['charge.refunded', { id: 'ch_1', payment_intent: 'pi_2' }, 'pi_2'],
    ['charge.succeeded', { id: 'ch_1', payment_intent: 'pi_3' }, 'pi_3'],
    ['charge.dispute.created', { id: 'dp_1', payment_intent: 'pi_4', charge: 'ch_9' }, 'pi_4'],
    ['charge.dispute.closed', { id: 'dp_2', payment_intent: 'pi_5', status: 'won' }, 'pi_5'],
    ['charge.dispute.funds_withdrawn', { id: 'dp_3', payment_intent: 'pi_6' }, 'pi_6'],
    ['customer.created', { id: 'cus_1' }, 'cus_1'],
    // A charge with no PaymentIntent (legacy Charges API) keeps its own id.
    ['charge.refunded', { id: 'ch_2', payment_intent: null }, 'ch_2'],
    ['charge.refunded', { id: 'ch_3' }, 'ch_3'],
  ])('%s with %j → resource %s', (type, object, expected) => {
    expect(stripeProvider.identify(pi(type, object), {}).resourceId).toBe(expected);
  });

  it('gives resourceId null when data.object is absent', () => {
    expect(stripeProvider.identify({ id: 'evt_1', type: 'payment_intent.succeeded' }, {}).resourceId).toBe(null);
  });

  it('rejects a missing id', () => {
    expect(malformed(() => stripeProvider.identify({ type: 'payment_intent.succeeded', data: {} }, {})).detail).toBe(
      'id is missing',
    );
  });

  it('rejects a missing type', () => {
    expect(malformed(() => stripeProvider.identify({ id: 'evt_1', data: {} }, {})).detail).toBe('type is missing');
  });

  it.each(CONTROL)('rejects an id holding control character %j', (c) => {
    const b = { ...pi('payment_intent.succeeded', { id: 'pi_1' }), id: `evt${c}` };
    expect(malformed(() => stripeProvider.identify(b, {})).detail).toBe(
      'id is not a printable string of at most 255 characters',
    );
  });

  it('accepts an id of 255 characters and rejects one of 256', () => {
    expect(stripeProvider.identify({ ...pi('x', {}), id: ID_255 }, {}).eventId).toBe(ID_255);
    expect(malformed(() => stripeProvider.identify({ ...pi('x', {}), id: ID_256 }, {})).detail).toBe(
      'id is not a printable string of at most 255 characters',
    );
  });

  it('rejects a PaymentIntent id holding a control character', () => {
    expect(
      malformed(() => stripeProvider.identify(pi('charge.refunded', { id: 'ch_1', payment_intent: 'pi_\u0000' }), {}))
        .detail,
    ).toBe('data.object.id is not a printable string of at most 255 characters');
  });
});

describe('standardProvider.identify', () => {
  const events = exampleEvents('standard');
  const body = (): Body => structuredClone(events['payment.succeeded']);

  it('has example events to read', () => {
    expect(Object.keys(events).length).toBeGreaterThan(0);
  });

  it.each(Object.entries(events))('%s: webhook-id, type and payment id', (type, event) => {
    expect(standardProvider.identify(event, { 'webhook-id': 'msg_1' })).toEqual<EnvelopeIdentity>({
      ...declared('standard', event),
      eventId: 'msg_1',
      eventType: type,
      resourceId: 'pay_7Hc2Lq',
      deliveryId: null,
    });
  });

  it('reads the event id from the webhook-id header, not the body', () => {
    expect(standardProvider.identify({ ...body(), id: 'body-id' }, { 'webhook-id': 'msg_2' }).eventId).toBe('msg_2');
  });

  it('rejects a missing webhook-id', () => {
    expect(malformed(() => standardProvider.identify(body(), {})).detail).toBe('webhook-id is missing');
  });

  it('rejects a webhook-id holding a control character', () => {
    expect(malformed(() => standardProvider.identify(body(), { 'webhook-id': 'msg\u0001' })).detail).toBe(
      'webhook-id is not a printable string of at most 255 characters',
    );
  });

  it('rejects a webhook-id of 256 characters', () => {
    expect(malformed(() => standardProvider.identify(body(), { 'webhook-id': ID_256 })).detail).toBe(
      'webhook-id is not a printable string of at most 255 characters',
    );
    expect(standardProvider.identify(body(), { 'webhook-id': ID_255 }).eventId).toBe(ID_255);
  });

  it('rejects a missing type', () => {
    const b = body();
    delete b.type;
    expect(malformed(() => standardProvider.identify(b, { 'webhook-id': 'msg_1' })).detail).toBe('type is missing');
  });

  it.each<[string, unknown]>([
    ['no data', undefined],
    ['data.id instead of data.payment_id', { id: 'pay_1' }],
    ['a numeric data.payment_id', { payment_id: 12 }],
  ])('gives resourceId null for %s', (_label, data) => {
    expect(standardProvider.identify({ type: 'payment.succeeded', data }, { 'webhook-id': 'm' }).resourceId).toBe(null);
  });
});

describe('provider helpers', () => {
  describe('header', () => {
    it('reads a lower-case header, the first of repeated values, undefined when absent', () => {
      const headers: IncomingHttpHeaders = { 'x-a': '1', 'set-cookie': ['a', 'b'] };
      expect(header(headers, 'x-a')).toBe('1');
      expect(header(headers, 'set-cookie')).toBe('a');
      expect(header(headers, 'x-b')).toBe(undefined);
      expect(header(headers, 'X-A')).toBe(undefined);
    });
  });

  describe('parseUnixSeconds', () => {
    it.each<[string | undefined, number | null]>([
      ['1790590562', 1790590562],
      ['0', 0],
      ['999999999999', 999999999999],
      ['1790590562000', 1790590562000],
      ['999999999999999', 999999999999999],
      ['1000000000000000', null],
      ['', null],
      [undefined, null],
      ['-1', null],
      ['1.5', null],
      ['1e9', null],
      [' 17', null],
      ['0x10', null],
    ])('%j → %j', (value, expected) => {
      expect(parseUnixSeconds(value)).toBe(expected);
    });
  });

  describe('decodeHexSignature', () => {
    it('decodes 64 lower-case hex digits and refuses anything else (upper case too: the providers sign in lower-case hex)', () => {
      const hex = 'ab'.repeat(32);
      expect(decodeHexSignature(hex)).toEqual(Buffer.alloc(32, 0xab));
      expect(decodeHexSignature(hex.toUpperCase())).toBe(null);
      expect(decodeHexSignature(hex.slice(1))).toBe(null);
      expect(decodeHexSignature(`${hex}a`)).toBe(null);
      expect(decodeHexSignature(`${hex.slice(2)}zz`)).toBe(null);
      expect(decodeHexSignature('')).toBe(null);
    });
  });

  describe('parseKeyValueHeader', () => {
    it('splits entries, trims them and keeps repeated keys in order', () => {
      expect(parseKeyValueHeader(' t=1 , v1=a,v1=b=c ')).toEqual([
        ['t', '1'],
        ['v1', 'a'],
        ['v1', 'b=c'],
      ]);
    });

    it.each([undefined, '', '   ', 'v1', 't=1,', '=a', 't=1,,v1=a'])('refuses %j', (value) => {
      expect(parseKeyValueHeader(value)).toBe(null);
    });
  });

  describe('parseTimestampedHeader', () => {
    const hex = 'cd'.repeat(32);

    it('gives the timestamp, the signed prefix and the v1 candidates', () => {
      expect(parseTimestampedHeader(`t=17,v1=${hex},v0=${hex},v1=short`)).toEqual({
        timestamp: 17,
        prefix: '17.',
        candidates: [Buffer.alloc(32, 0xcd)],
      });
    });

    it.each([undefined, `v1=${hex}`, `t=1,t=1,v1=${hex}`, `t=x,v1=${hex}`, `t=1,v1`])('refuses %j', (value) => {
      expect(parseTimestampedHeader(value)).toBe(null);
    });
  });

  describe('v1Candidates', () => {
    it('keeps only decodable v1 entries', () => {
      expect(
        v1Candidates([
          ['v1', '01'.repeat(32)],
          ['v0', '02'.repeat(32)],
          ['V1', '03'.repeat(32)],
          ['v1', 'nothex'],
          ['v1', '04'.repeat(32)],
        ]),
      ).toEqual([Buffer.alloc(32, 1), Buffer.alloc(32, 4)]);
    });
  });

  describe('requireId and optionalId', () => {
    it('requireId returns a usable id and names the field in its errors', () => {
      expect(requireId('evt_1', 'id')).toBe('evt_1');
      expect(requireId('ünïcode-✓', 'id')).toBe('ünïcode-✓');
      expect(malformed(() => requireId(undefined, 'the field')).detail).toBe('the field is missing');
      expect(malformed(() => requireId('a\u0000', 'the field')).detail).toBe(
        'the field is not a printable string of at most 255 characters',
      );
    });

    it('optionalId reads non-strings and empty strings as absent but refuses unusable strings', () => {
      expect(optionalId(undefined, 'f')).toBe(null);
      expect(optionalId(5, 'f')).toBe(null);
      expect(optionalId('', 'f')).toBe(null);
      expect(optionalId('x', 'f')).toBe('x');
      expect(malformed(() => optionalId(ID_256, 'f')).detail).toBe('f is not a printable string of at most 255 characters');
    });

    it('MalformedPayloadError carries its detail as message and name', () => {
      const err = new MalformedPayloadError('why');
      expect(err).toBeInstanceOf(Error);
      expect(err.name).toBe('MalformedPayloadError');
      expect(err.message).toBe('why');
      expect(err.detail).toBe('why');
    });
  });
});

describe('the declared account and the API version (identify)', () => {
  it('reads Stripe account (Connect) and api_version', () => {
    const body = { id: 'evt_1', type: 'payment_intent.succeeded', account: 'acct_1Conn', api_version: '2020-08-27', data: { object: { id: 'pi_1' } } };
    expect(stripeProvider.identify(body, {})).toMatchObject({ account: 'acct_1Conn', apiVersion: '2020-08-27' });
  });

  it('reads Factuarea account.id and api_version', () => {
    const body = { id: 'evt_f1', type: 'invoice.paid', account: { id: 'acc-uuid-1' }, api_version: '2026-09-23', data: { object: { id: 'inv_1' } } };
    expect(factuareaProvider.identify(body, {})).toMatchObject({ account: 'acc-uuid-1', apiVersion: '2026-09-23' });
  });

  it('reads Standard Webhooks data.account_id; no API version', () => {
    const body = { type: 'payment.succeeded', data: { payment_id: 'pay_1', account_id: 'acc_9' } };
    expect(standardProvider.identify(body, { 'webhook-id': 'msg_1' })).toMatchObject({ account: 'acc_9', apiVersion: null });
  });

  it.each<[string, unknown]>([
    ['absent', undefined],
    ['a number', 42],
    ['an object', { id: 'x' }],
    ['empty', ''],
  ])('reads an account that is %s as none (never malformed)', (_what, account) => {
    const body = { id: 'evt_1', type: 'payment_intent.succeeded', account, api_version: account, data: { object: { id: 'pi_1' } } };
    expect(stripeProvider.identify(body, {})).toMatchObject({ account: null, apiVersion: null });
  });

  // A declared account is keyed on and compared: read as none, an unusable one would pass for an
  // event that declares no account.
  it.each<[string, string]>([
    ['with a NUL', 'acct_\u0000'],
    ['with a C1 control', 'acct_\u009b1'],
    ['with a bidi override', 'acct_\u202e1'],
    ['with a lone surrogate', 'acct_\ud800'],
    ['longer than 255', 'a'.repeat(256)],
  ])('refuses an account string %s (malformed); the API version, only informative, reads as none', (_what, account) => {
    const body = { id: 'evt_1', type: 'payment_intent.succeeded', account, api_version: account, data: { object: { id: 'pi_1' } } };
    expect(malformed(() => stripeProvider.identify(body, {})).detail).toBe('account is not a printable string of at most 255 characters');
    expect(stripeProvider.identify({ ...body, account: 'acct_1' }, {})).toMatchObject({ account: 'acct_1', apiVersion: null });
  });
});

/**
 * Every id identify() stores, on every provider: printable text only. Control and format
 * characters (Unicode Cc, Cf), line and paragraph separators and lone surrogates are malformed;
 * printable non-ASCII text, astral characters included, is an id like any other.
 */
describe('ids are printable text (identify, every provider and stored id)', () => {
  const UNPRINTABLE: Array<[string, string]> = [
    ['U+009B (C1 control)', '\u009b'],
    ['U+0085 (next line)', '\u0085'],
    ['U+2028 (line separator)', '\u2028'],
    ['U+2029 (paragraph separator)', '\u2029'],
    ['U+202E (right-to-left override)', '\u202e'],
    ['U+200B (zero-width space)', '\u200b'],
    ['U+FEFF (byte order mark)', '\ufeff'],
    ['U+00AD (soft hyphen)', '\u00ad'],
    ['U+0000', '\u0000'],
    ['a lone high surrogate', '\ud800'],
    ['a lone low surrogate', '\udc00'],
  ];
  const PRINTABLE = ['evt_é', 'evt_日本', 'evt_😀', 'evt_a b'];

  type Where = { provider: HmacProvider; field: string; put: (value: string) => { body: Body; headers: IncomingHttpHeaders }; read: (id: EnvelopeIdentity) => string | null };
  const paymos = (over: { id?: string; type?: string; resource?: string } = {}) => ({
    event_id: over.id ?? 'evt_1',
    type: over.type ?? 'invoice.paid',
    data: { id: over.resource ?? 'inv_1' },
  });
  const factuarea = (over: { id?: string; type?: string; resource?: string; account?: string } = {}) => ({
    id: over.id ?? 'evt_1',
    type: over.type ?? 'invoice.paid',
    account: { id: over.account ?? 'fa-merchant-1' },
    data: { object: { object: 'invoice', id: over.resource ?? 'inv_1' } },
  });
  const stripe = (over: { id?: string; type?: string; resource?: string; account?: string } = {}) => ({
    id: over.id ?? 'evt_1',
    type: over.type ?? 'payment_intent.succeeded',
    account: over.account ?? 'acct_1',
    data: { object: { object: 'payment_intent', id: over.resource ?? 'pi_1' } },
  });
  const standard = (over: { type?: string; resource?: string; account?: string } = {}) => ({
    type: over.type ?? 'payment.succeeded',
    data: { payment_id: over.resource ?? 'pay_1', account_id: over.account ?? 'acc_1' },
  });
  const msg = { 'webhook-id': 'msg_1' };
  const WHERE: Where[] = [
    { provider: paymosProvider, field: 'event_id', put: (v) => ({ body: paymos({ id: v }), headers: {} }), read: (i) => i.eventId },
    { provider: paymosProvider, field: 'type', put: (v) => ({ body: paymos({ type: v }), headers: {} }), read: (i) => i.eventType },
    { provider: paymosProvider, field: 'data.id', put: (v) => ({ body: paymos({ resource: v }), headers: {} }), read: (i) => i.resourceId },
    { provider: factuareaProvider, field: 'id', put: (v) => ({ body: factuarea({ id: v }), headers: {} }), read: (i) => i.eventId },
    { provider: factuareaProvider, field: 'type', put: (v) => ({ body: factuarea({ type: v }), headers: {} }), read: (i) => i.eventType },
    { provider: factuareaProvider, field: 'data.object.id', put: (v) => ({ body: factuarea({ resource: v }), headers: {} }), read: (i) => i.resourceId },
    { provider: factuareaProvider, field: 'account.id', put: (v) => ({ body: factuarea({ account: v }), headers: {} }), read: (i) => i.account },
    {
      provider: factuareaProvider,
      field: 'Factuarea-Delivery-Id',
      put: (v) => ({ body: factuarea(), headers: { 'factuarea-delivery-id': v } }),
      read: (i) => i.deliveryId,
    },
    { provider: stripeProvider, field: 'id', put: (v) => ({ body: stripe({ id: v }), headers: {} }), read: (i) => i.eventId },
    { provider: stripeProvider, field: 'type', put: (v) => ({ body: stripe({ type: v }), headers: {} }), read: (i) => i.eventType },
    { provider: stripeProvider, field: 'data.object.id', put: (v) => ({ body: stripe({ resource: v }), headers: {} }), read: (i) => i.resourceId },
    { provider: stripeProvider, field: 'account', put: (v) => ({ body: stripe({ account: v }), headers: {} }), read: (i) => i.account },
    { provider: standardProvider, field: 'webhook-id', put: (v) => ({ body: standard(), headers: { 'webhook-id': v } }), read: (i) => i.eventId },
    { provider: standardProvider, field: 'type', put: (v) => ({ body: standard({ type: v }), headers: msg }), read: (i) => i.eventType },
    { provider: standardProvider, field: 'data.payment_id', put: (v) => ({ body: standard({ resource: v }), headers: msg }), read: (i) => i.resourceId },
    { provider: standardProvider, field: 'data.account_id', put: (v) => ({ body: standard({ account: v }), headers: msg }), read: (i) => i.account },
  ];

  describe.each(WHERE.map((w) => [`${w.provider.name} ${w.field}`, w] as const))('%s', (_name, where) => {
    it.each(UNPRINTABLE)('holding %s: malformed, naming the field', (_what, c) => {
      const { body, headers } = where.put(`x_${c}1`);
      expect(malformed(() => where.provider.identify(body, headers)).detail).toBe(`${where.field} is not a printable string of at most 255 characters`);
    });

    it('printable non-ASCII text (astral characters too) is read as itself', () => {
      for (const value of PRINTABLE) {
        const { body, headers } = where.put(value);
        expect(where.read(where.provider.identify(body, headers))).toBe(value);
      }
    });
  });
});
