import { ConfigurationError, validateEndpoints } from '../config/validate';
import type { ProviderEndpoint } from './provider';
import { receiveWith } from '../testing/receive';
import { adyenProvider, createAdyenProvider } from './adyen.provider';
import { BUILT_IN_PROVIDER_NAMES, BUILT_IN_PROVIDERS, PROVIDERS } from './index';
import {
  HMAC_VECTORS,
  libraryMock,
  NotificationItem,
  OPENAPI_CODES,
  openApiExample,
  signedBody,
  signItem,
} from '../../test/fixtures/adyen';

/** An HMAC key of the endpoint under test, as Adyen shows one (hex, 32 bytes). */
const KEY = 'A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F90';
const OTHER_KEY = '0F1E2D3C4B5A69788796A5B4C3D2E1F00F1E2D3C4B5A69788796A5B4C3D2E1F0';

const item = (overrides: Partial<NotificationItem> = {}): NotificationItem => ({
  eventCode: 'AUTHORISATION',
  success: 'true',
  pspReference: '7914073381342284',
  originalReference: '',
  merchantAccountCode: 'ShopEU',
  merchantReference: 'order-ref-1',
  eventDate: '2026-12-01T10:00:00+01:00',
  amount: { value: 4990, currency: 'EUR' },
  paymentMethod: 'visa',
  reason: '',
  additionalData: {},
  ...overrides,
});

const receive = (body: unknown, endpoint: Record<string, unknown> = {}) =>
  receiveWith(adyenProvider, { headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) }, {
    endpoint: { secrets: [KEY], ...('merchantAccountIds' in endpoint ? {} : { merchantAccountId: 'ShopEU' }), ...endpoint },
  });

const endpointWith = (settings: Record<string, unknown> = {}): ProviderEndpoint => ({ id: 'adyen-main', merchantAccountId: 'ShopEU', settings });

describe('adyen: registered as a built-in provider, not of the HMAC scheme', () => {
  it('is among the built-in providers; PROVIDERS stays the four HMAC ones', () => {
    expect(BUILT_IN_PROVIDER_NAMES).toContain('adyen');
    expect(BUILT_IN_PROVIDERS.adyen).toBe(adyenProvider);
    expect(Object.keys(PROVIDERS).sort()).toEqual(['factuarea', 'paymos', 'standard', 'stripe']);
  });
});

describe("adyen: Adyen's published HMAC vectors verify through the adapter", () => {
  it.each(HMAC_VECTORS.map((v) => [v.name, v] as const))('%s', async (_name, vector) => {
    const body = { live: 'false', notificationItems: [{ NotificationRequestItem: vector.item }] };
    const outcome = await receive(body, { secrets: [vector.key], merchantAccountId: vector.item.merchantAccountCode });
    expect(outcome).toMatchObject({ ok: true, secretIndex: 0 });
    if (!outcome.ok) return;
    expect(outcome.events).toHaveLength(1);
    expect(outcome.events[0]).toMatchObject({
      eventId: `${vector.item.pspReference}:${vector.item.eventCode}:${vector.item.success}`,
      eventType: vector.item.eventCode,
      account: vector.item.merchantAccountCode,
      merchantAccountId: vector.item.merchantAccountCode,
      deliveryId: null,
      apiVersion: null,
    });
    // The stored body is the item itself.
    expect(JSON.parse(outcome.events[0].body)).toEqual(vector.item);

    // A key in lower case is the same key.
    expect((await receive(body, { secrets: [vector.key.toLowerCase()], merchantAccountId: vector.item.merchantAccountCode })).ok).toBe(true);
  });

  it.each(HMAC_VECTORS.map((v) => [v.name, v] as const))('%s: any signed field changed, or another key, is invalid_signature', async (_name, vector) => {
    const account = vector.item.merchantAccountCode as string;
    const changed: NotificationItem[] = [
      { ...vector.item, pspReference: `${vector.item.pspReference}0` },
      { ...vector.item, merchantReference: 'another' },
      { ...vector.item, amount: { ...(vector.item.amount as object), value: 1 } },
      { ...vector.item, amount: { ...(vector.item.amount as object), currency: 'USD' } },
      { ...vector.item, eventCode: 'REFUND' },
      { ...vector.item, success: 'false' },
      { ...vector.item, merchantAccountCode: 'Another' },
      { ...vector.item, originalReference: 'X' },
    ];
    for (const c of changed) {
      const outcome = await receive({ live: 'false', notificationItems: [{ NotificationRequestItem: c }] }, { secrets: [vector.key], merchantAccountIds: ['*'] });
      expect(outcome).toEqual({ ok: false, error: 'invalid_signature' });
    }
    const outcome = await receive({ live: 'false', notificationItems: [{ NotificationRequestItem: vector.item }] }, { secrets: [OTHER_KEY], merchantAccountId: account });
    expect(outcome).toEqual({ ok: false, error: 'invalid_signature' });
  });

  it('a field outside the signing string (eventDate, reason, the rest of additionalData) may change: Adyen signs named fields only', async () => {
    const [vector] = HMAC_VECTORS;
    const moved = { ...vector.item, eventDate: '2030-01-01T00:00:00Z', reason: 'other', additionalData: { ...vector.item.additionalData, extra: '1' } };
    const outcome = await receive({ live: 'true', notificationItems: [{ NotificationRequestItem: moved }] }, { secrets: [vector.key], merchantAccountId: 'merchantAccount' });
    expect(outcome.ok).toBe(true);
  });
});

describe('adyen: a delivery of several items', () => {
  it('records each item as its own event, in the order sent', async () => {
    const items = [
      item({ pspReference: 'PSP1', merchantReference: 'a' }),
      item({ pspReference: 'PSP2', eventCode: 'CAPTURE', originalReference: 'PSP1' }),
      item({ pspReference: 'PSP3', eventCode: 'REFUND', originalReference: 'PSP1', amount: { value: 100, currency: 'EUR' } }),
    ];
    const outcome = await receive(signedBody(items, KEY));
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    expect(outcome.secretIndex).toBe(0);
    expect(outcome.events.map((e) => [e.eventId, e.eventType, e.resourceId])).toEqual([
      ['PSP1:AUTHORISATION:true', 'AUTHORISATION', 'PSP1'],
      ['PSP2:CAPTURE:true', 'CAPTURE', 'PSP1'],
      ['PSP3:REFUND:true', 'REFUND', 'PSP1'],
    ]);
    expect(outcome.events.map((e) => JSON.parse(e.body).pspReference)).toEqual(['PSP1', 'PSP2', 'PSP3']);
  });

  it('a signed field no signing string can be made of (its own toString not a function) is 400 malformed_payload, never a 503', async () => {
    // Found by the fuzzer: the official library throws building such an item's signing string. An
    // object is not of a signed field's type: refused before any signature is checked.
    const signature = { hmacSignature: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' };
    const body = { notificationItems: [{ NotificationRequestItem: { pspReference: { toString: 1 }, additionalData: signature } }] };
    expect(await receive(body)).toEqual({ ok: false, error: 'malformed_payload', detail: 'item #1: "pspReference" must be a string, as Adyen signs and sends it' });
    const currency = { notificationItems: [{ NotificationRequestItem: { ...item(), amount: { value: 4990, currency: { toString: 'x', valueOf: 'y' } }, additionalData: signature } }] };
    expect(await receive(currency)).toEqual({ ok: false, error: 'malformed_payload', detail: 'item #1: "amount.currency" must be a string, as Adyen signs and sends it' });
  });

  it('one item with a bad signature refuses the whole delivery (invalid_signature): nothing of it is returned to record', async () => {
    const body = signedBody([item({ pspReference: 'PSP1' }), item({ pspReference: 'PSP2' }), item({ pspReference: 'PSP3' })], KEY);
    body.notificationItems[1].NotificationRequestItem = { ...body.notificationItems[1].NotificationRequestItem, pspReference: 'PSP2-forged' };
    expect(await receive(body)).toEqual({ ok: false, error: 'invalid_signature' });
    // Signed with another key than the endpoint's.
    const mixed = signedBody([item({ pspReference: 'PSP1' })], KEY);
    mixed.notificationItems.push(signedBody([item({ pspReference: 'PSP2' })], OTHER_KEY).notificationItems[0]);
    expect(await receive(mixed)).toEqual({ ok: false, error: 'invalid_signature' });
  });

  it('during a rotation each item may verify under another live key; the secret index is the greatest any item needed', async () => {
    const body = signedBody([item({ pspReference: 'PSP1' })], KEY);
    body.notificationItems.push(signedBody([item({ pspReference: 'PSP2' })], OTHER_KEY).notificationItems[0]);
    expect(await receive(body, { secrets: [KEY, OTHER_KEY] })).toMatchObject({ ok: true, secretIndex: 1 });
    expect(await receive(signedBody([item()], KEY), { secrets: [OTHER_KEY, KEY] })).toMatchObject({ ok: true, secretIndex: 1 });
    // An expired key verifies nothing.
    expect(
      await receive(body, { secrets: [KEY, { secret: OTHER_KEY, expiresAt: '2026-01-01T00:00:00Z' }] }),
    ).toEqual({ ok: false, error: 'invalid_signature' });
  });

  it('an item without additionalData.hmacSignature is missing_signature, before any signature is checked', async () => {
    const body = signedBody([item({ pspReference: 'PSP1' }), item({ pspReference: 'PSP2' })], KEY);
    delete body.notificationItems[1].NotificationRequestItem.additionalData!.hmacSignature;
    expect(await receive(body)).toEqual({ ok: false, error: 'missing_signature' });
    // …even when another item's signature is bad.
    body.notificationItems[0].NotificationRequestItem.pspReference = 'forged';
    expect(await receive(body)).toEqual({ ok: false, error: 'missing_signature' });
    for (const additionalData of [undefined, null, 'x', { hmacSignature: '' }, { hmacSignature: 42 }]) {
      const one = signedBody([item()], KEY);
      one.notificationItems[0].NotificationRequestItem.additionalData = additionalData as never;
      expect(await receive(one)).toEqual({ ok: false, error: 'missing_signature' });
    }
  });

  it('a signature that is not the base64 of 32 bytes can never verify (invalid_signature)', async () => {
    const body = signedBody([item()], KEY);
    const sig = body.notificationItems[0].NotificationRequestItem.additionalData!.hmacSignature as string;
    for (const spelled of [sig.slice(0, -1), `${sig}=`, sig.replace(/=$/, ''), ` ${sig}`, `${sig.slice(0, 10)}*${sig.slice(11)}`]) {
      body.notificationItems[0].NotificationRequestItem.additionalData!.hmacSignature = spelled;
      expect(await receive(body)).toEqual({ ok: false, error: 'invalid_signature' });
    }
  });

  it('no timestamp is signed: an old notification verifies whatever toleranceSeconds says', async () => {
    const old = signedBody([item({ eventDate: '2001-01-01T00:00:00+00:00' })], KEY);
    expect((await receive(old, { toleranceSeconds: 1 })).ok).toBe(true);
  });
});

describe('adyen: malformed bodies are 400 malformed_payload, read before the signatures', () => {
  const malformed = async (body: string | object) => {
    const outcome = await receive(body);
    expect(outcome).toMatchObject({ ok: false, error: 'malformed_payload' });
    return outcome.ok ? '' : (outcome.detail ?? '');
  };

  it.each([
    ['not JSON', 'nope'],
    ['not UTF-8', Buffer.from([0x7b, 0xff, 0x7d]).toString('latin1')],
    ['an array', '[]'],
    ['no notificationItems', '{"live":"false"}'],
    ['notificationItems empty', '{"live":"false","notificationItems":[]}'],
    ['notificationItems not an array', '{"live":"false","notificationItems":{}}'],
    ['an entry without NotificationRequestItem', '{"live":"false","notificationItems":[{"item":{}}]}'],
    ['an entry that is not an object', '{"live":"false","notificationItems":["x"]}'],
    ['a NotificationRequestItem that is an array', '{"live":"false","notificationItems":[{"NotificationRequestItem":[]}]}'],
  ])('%s', async (_what, body) => {
    await malformed(body);
  });

  it('a body nested deeper than the bound', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200; i++) deep = { d: deep };
    const body = signedBody([item({ additionalData: { deep } as never })], KEY);
    expect(await malformed(body)).toMatch(/deep/);
  });

  it('not UTF-8 bytes', async () => {
    const outcome = await receiveWith(adyenProvider, { body: Buffer.from([0x7b, 0xff, 0x7d]) }, { endpoint: { secrets: [KEY], merchantAccountId: 'ShopEU' } });
    expect(outcome).toMatchObject({ ok: false, error: 'malformed_payload', detail: 'the body is not valid UTF-8' });
  });

  it('authentic items without a usable id, code, success or account', async () => {
    const cases: Array<[Partial<NotificationItem>, RegExp]> = [
      [{ pspReference: '' }, /pspReference is missing/],
      [{ pspReference: 'PSP\u200b1' }, /pspReference is not a printable/],
      [{ eventCode: undefined }, /eventCode is missing/],
      [{ success: true as never }, /"success" must be a string/],
      [{ success: 'yes' }, /success must be/],
      [{ merchantAccountCode: undefined }, /merchantAccountCode is missing/],
      [{ originalReference: 'PSP\u00851' }, /originalReference is not a printable/],
    ];
    for (const [overrides, detail] of cases) {
      expect(await malformed(signedBody([item(overrides)], KEY))).toMatch(detail);
    }
  });
});

describe('adyen: each signed field has the type Adyen sends it as, before any signature is checked', () => {
  /** What the official library signs a field as: JavaScript's `join`, so ["x"] signs as "x" and null as "". */
  const TEXT_FIELDS = ['pspReference', 'originalReference', 'merchantAccountCode', 'merchantReference', 'eventCode', 'success'] as const;
  const NOT_TEXT: Array<[string, unknown]> = [
    ['an array', ['ORD-1']],
    ['an array of two', ['a', 'b']],
    ['an object', { value: 'x' }],
    ['a boolean', true],
    ['null', null],
    ['a number', 42],
  ];
  const refusedAs = (field: string, type: string) => ({ ok: false, error: 'malformed_payload', detail: `item #1: "${field}" must be ${type}, as Adyen signs and sends it` });

  it("Adyen's published bodies hold each signed field as a string and amount.value as a number (what the rule keeps)", () => {
    const bodies = [...OPENAPI_CODES.map((code) => openApiExample(code)), ...(['authorisationTrue', 'captureTrue', 'captureFalse', 'refundTrue', 'refundFalse'] as const).map(libraryMock)];
    for (const body of bodies) {
      for (const { NotificationRequestItem: it } of body.notificationItems) {
        for (const field of TEXT_FIELDS) if (field in it) expect({ field, type: typeof it[field] }).toEqual({ field, type: 'string' });
        const amount = it.amount as { value: unknown; currency: unknown };
        expect([typeof amount.value, typeof amount.currency]).toEqual(['number', 'string']);
      }
    }
  });

  describe.each(TEXT_FIELDS)('%s', (field) => {
    it.each(NOT_TEXT)('as %s, signed as Adyen would sign it: 400 malformed_payload, no event', async (_what, value) => {
      // Signed by the official library over what it makes of the value: the signature itself verifies.
      const body = signedBody([item({ [field]: value })], KEY);
      expect(await receive(body)).toEqual(refusedAs(field, 'a string'));
    });
  });

  it.each([...NOT_TEXT.filter(([what]) => what !== 'a number'), ['a numeric string', '4990'] as [string, unknown]])(
    'amount.value as %s: 400 malformed_payload',
    async (_what, value) => {
      expect(await receive(signedBody([item({ amount: { value, currency: 'EUR' } })], KEY))).toEqual(refusedAs('amount.value', 'a number'));
    },
  );

  it.each(NOT_TEXT)('amount.currency as %s: 400 malformed_payload', async (_what, value) => {
    expect(await receive(signedBody([item({ amount: { value: 4990, currency: value } })], KEY))).toEqual(refusedAs('amount.currency', 'a string'));
  });

  it.each([['an array', [4990, 'EUR']], ['a string', '4990 EUR'], ['null', null], ['a number', 4990], ['a boolean', true]])('amount as %s: 400 malformed_payload', async (_what, amount) => {
    // The library cannot sign an item whose amount is null (it reads amount.value): a signature of the right form stands in.
    const signature = { hmacSignature: 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=' };
    const body = amount === null ? { notificationItems: [{ NotificationRequestItem: item({ amount, additionalData: signature }) }] } : signedBody([item({ amount })], KEY);
    expect(await receive(body)).toEqual(refusedAs('amount', 'an object'));
  });

  it('a field that is absent stays absent (it signs as the empty string): verified and recorded', async () => {
    const { originalReference: _o, merchantReference: _m, ...rest } = item();
    const outcome = await receive(signedBody([rest as NotificationItem, item({ pspReference: 'PSP2', amount: {} })], KEY));
    expect(outcome).toMatchObject({ ok: true, secretIndex: 0 });
  });

  it('one item of a batch of the wrong type refuses the whole delivery, before the signatures (an unsigned one too)', async () => {
    const body = signedBody([item({ pspReference: 'PSP1' }), item({ pspReference: 'PSP2', merchantReference: ['ORD-2'] })], KEY);
    expect(await receive(body)).toEqual({ ok: false, error: 'malformed_payload', detail: 'item #2: "merchantReference" must be a string, as Adyen signs and sends it' });
    delete body.notificationItems[1].NotificationRequestItem.additionalData!.hmacSignature;
    expect(await receive(body)).toMatchObject({ ok: false, error: 'malformed_payload' });
  });
});

describe('adyen: endpoints (capture, secrets, accounts)', () => {
  const table = new Map([['adyen', adyenProvider]]);
  const validate = (endpoint: Record<string, unknown>) =>
    validateEndpoints('WEBHOOK_ENDPOINTS', [{ id: 'adyen-main', provider: 'adyen', secrets: [KEY], merchantAccountId: 'ShopEU', ...endpoint }], Date.now(), table);

  it('capture is "automatic" (the default) or "manual", and nothing else', () => {
    expect(validate({})[0]).not.toHaveProperty('capture');
    expect(validate({ capture: 'manual' })[0]).toMatchObject({ capture: 'manual' });
    expect(validate({ capture: 'automatic' })[0]).toMatchObject({ capture: 'automatic' });
    for (const capture of ['Manual', 'auto', 1, null, true]) {
      expect(() => validate({ capture })).toThrow(
        new ConfigurationError('WEBHOOK_ENDPOINTS', 'endpoint "adyen-main": "capture" must be "automatic" or "manual"'),
      );
    }
  });

  it('a secret is the hex HMAC key; not hex, or under 16 bytes, stops the start (never echoing it)', () => {
    for (const secret of ['not-hex-at-all!!', 'ABC', `${KEY}Z`, `${KEY.slice(0, -1)}`]) {
      expect(() => validate({ secrets: [secret] })).toThrow(/secret #1 is not hex: an Adyen HMAC key is the hex string the Customer Area shows/);
      try {
        validate({ secrets: [secret] });
      } catch (err) {
        expect((err as Error).message).not.toContain(secret);
      }
    }
    expect(() => validate({ secrets: ['00112233445566778899AABBCCDDEE'] })).toThrow(/secret #1 decodes to fewer than 16 bytes/);
    expect(() => validate({ secrets: ['00112233445566778899AABBCCDDEEFF'] })).not.toThrow();
  });

  it('apiKey (the Checkout API key) and apiBaseUrl are accepted; the base URL defaults to the Checkout API, and must be https', () => {
    const API_KEY = 'AQEyhmfxK4LNbhZFw0m/n3Q5qf3VaY9UCJ14XWZE03G/k2NFikzVGEiYj+4vtN01BchqAcwhNJEQwV1bDb7kfNy1WIxIIkxgBw==-secret';
    expect(validate({})[0]).not.toHaveProperty('apiKey');
    expect(validate({})[0]).not.toHaveProperty('apiBaseUrl');
    expect(validate({ apiKey: API_KEY })[0]).toMatchObject({ apiKey: API_KEY, apiBaseUrl: 'https://checkout-live.adyen.com' });
    const live = 'https://1797a841fbb37ca7-AdyenDemo-checkout-live.adyenpayments.com/checkout';
    expect(validate({ apiKey: API_KEY, apiBaseUrl: `${live}/` })[0]).toMatchObject({ apiKey: API_KEY, apiBaseUrl: live });
    const refused = () => validate({ apiKey: API_KEY, apiBaseUrl: 'http://127.0.0.1:8080' });
    expect(refused).toThrow(new ConfigurationError('WEBHOOK_ENDPOINTS', 'endpoint "adyen-main": "apiBaseUrl" must be an https URL (the Adyen library speaks HTTPS only)'));
    try {
      refused();
    } catch (err) {
      expect((err as Error).message).not.toContain(API_KEY);
    }
    expect(adyenProvider.usesApi).toEqual({ defaultBaseUrl: 'https://checkout-live.adyen.com' });
  });

  it('merchantAccountIds is allowed (a company-level webhook serves many merchant accounts): each item is keyed on its merchantAccountCode', async () => {
    expect(validate({ merchantAccountId: undefined, merchantAccountIds: ['ShopEU', 'ShopUS'] })[0]).toMatchObject({ merchantAccountIds: ['ShopEU', 'ShopUS'] });
    const outcome = await receive(signedBody([item({ merchantAccountCode: 'ShopUS' }), item({ pspReference: 'PSP9', merchantAccountCode: 'ShopXX' })], KEY), {
      merchantAccountId: undefined,
      merchantAccountIds: ['ShopEU', 'ShopUS'],
    });
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    expect(outcome.events.map((e) => [e.merchantAccountId, e.served])).toEqual([
      ['ShopUS', true],
      ['ShopXX', false],
    ]);
  });
});

describe('adyen: the answer', () => {
  it('is the text [accepted], whatever the items were (new or recorded before)', () => {
    const answer = adyenProvider.answer!;
    expect(answer([{ status: 'accepted', eventId: 'a' }])).toEqual({ contentType: 'text/plain; charset=utf-8', body: '[accepted]' });
    expect(answer([{ status: 'duplicate', eventId: 'a' }, { status: 'accepted', eventId: 'b' }]).body).toBe('[accepted]');
  });
});

describe('adyen: the optional peer @adyen/api-library', () => {
  const notInstalled = () => {
    throw Object.assign(new Error("Cannot find module '@adyen/api-library'\nRequire stack:\n- x.js"), { code: 'MODULE_NOT_FOUND' });
  };
  const INSTALL_LINE = 'endpoint "adyen-main": the adyen provider needs the optional package @adyen/api-library, which is not installed: npm install @adyen/api-library';

  it('an adyen endpoint without the package stops the start with one line naming the endpoint and the install', () => {
    const table = new Map([['adyen', createAdyenProvider(notInstalled)]]);
    const start = () => validateEndpoints('WEBHOOK_ENDPOINTS', [{ id: 'adyen-main', provider: 'adyen', secrets: [KEY], merchantAccountId: 'ShopEU' }], Date.now(), table);
    expect(start).toThrow(new ConfigurationError('WEBHOOK_ENDPOINTS', INSTALL_LINE));
    try {
      start();
    } catch (err) {
      expect((err as Error).message.split('\n')).toHaveLength(1);
    }
  });

  it('loads it once, and only for an adyen endpoint', async () => {
    let loads = 0;
    const adapter = createAdyenProvider(() => {
      loads++;
      return jest.requireActual('@adyen/api-library');
    });
    expect(loads).toBe(0);
    const table = new Map([['adyen', adapter]]);
    validateEndpoints('WEBHOOK_ENDPOINTS', [{ id: 'a', provider: 'adyen', secrets: [KEY], merchantAccountId: 'ShopEU' }, { id: 'b', provider: 'adyen', secrets: [KEY], merchantAccountId: 'ShopEU' }], Date.now(), table);
    adapter.prepareKey(KEY);
    expect(loads).toBe(1);
  });

  it('another load failure is named too, on one line', () => {
    const broken = createAdyenProvider(() => {
      throw new Error('boom\nstack');
    });
    expect(broken.checkEndpoint!({ settings: {} })).toBe('the adyen provider could not load @adyen/api-library: boom');
    expect(createAdyenProvider(() => ({}) as never).checkEndpoint!({ settings: {} })).toMatch(/has no hmacValidator/);
  });

  it('without the package installed, the module loads and every other provider works (jest.doMock of a missing module)', () => {
    jest.isolateModules(() => {
      jest.doMock('@adyen/api-library', notInstalled);
      const providers = require('./index') as typeof import('./index');
      const config = require('../config/validate') as typeof import('../config/validate');
      expect(providers.BUILT_IN_PROVIDERS.adyen.name).toBe('adyen');
      const [stripe] = config.validateEndpoints('WEBHOOK_ENDPOINTS', [{ id: 'stripe-main', provider: 'stripe', secrets: ['whsec_0123456789'], merchantAccountId: 'acct_1' }]);
      expect(stripe.provider).toBe('stripe');
      expect(() =>
        config.validateEndpoints('WEBHOOK_ENDPOINTS', [{ id: 'adyen-main', provider: 'adyen', secrets: [KEY], merchantAccountId: 'ShopEU' }]),
      ).toThrow(`WEBHOOK_ENDPOINTS: ${INSTALL_LINE}`);
      // The module's options, as forRoot validates them: the same one line, naming the option.
      const options = { databaseUrl: 'postgres://localhost/x', redisUrl: 'redis://localhost:6379', endpoints: [{ id: 'adyen-main', provider: 'adyen', secrets: [KEY], merchantAccountId: 'ShopEU' }] };
      expect(() => config.resolveOptions(options as never)).toThrow(`endpoints: ${INSTALL_LINE}`);
      expect(() => config.resolveOptions({ ...options, endpoints: [] } as never)).not.toThrow();
    });
    jest.dontMock('@adyen/api-library');
  });
});

describe('adyen: every event code mapped to the payment lifecycle (normalize, on the published examples)', () => {
  /** The item of Adyen's published example of `code`, with `success` as given. */
  const example = (code: (typeof OPENAPI_CODES)[number], success = 'true') => {
    const published = openApiExample(code).notificationItems[0].NotificationRequestItem;
    return { ...published, success };
  };
  const normalize = (body: Record<string, unknown>, settings: Record<string, unknown> = {}) =>
    adyenProvider.normalize(body, body.eventCode as string, endpointWith(settings));

  it('AUTHORISATION success true: succeeded (capture automatic, the default), authorized (manual); the order from merchantReference', () => {
    const body = example('AUTHORISATION');
    const base = {
      resourceId: 'QFQTPCQ8HXSKGK82',
      orderId: null,
      orderReference: 'YOUR_MERCHANT_REFERENCE',
      amount: { form: 'minor', value: 1000 },
      currency: 'EUR',
      refundedAmount: null,
      refund: null,
      declaredAccount: 'YOUR_MERCHANT_ACCOUNT',
      occurredAt: new Date('2021-01-01T00:00:00Z'),
    };
    expect(normalize(body)).toEqual({ kind: 'succeeded', ...base });
    expect(adyenProvider.normalize(body, 'AUTHORISATION')).toEqual({ kind: 'succeeded', ...base });
    expect(normalize(body, { capture: 'automatic' })).toEqual({ kind: 'succeeded', ...base });
    expect(normalize(body, { capture: 'manual' })).toEqual({ kind: 'authorized', ...base });
  });

  it('AUTHORISATION success false: failed (whatever the capture)', () => {
    expect(normalize(example('AUTHORISATION', 'false'))).toMatchObject({ kind: 'failed', resourceId: 'QFQTPCQ8HXSKGK82', amount: { form: 'minor', value: 1000 } });
    expect(normalize(example('AUTHORISATION', 'false'), { capture: 'manual' })).toMatchObject({ kind: 'failed' });
  });

  it('CAPTURE: succeeded with the captured amount, about the payment (originalReference)', () => {
    expect(normalize(example('CAPTURE'), { capture: 'manual' })).toMatchObject({
      kind: 'succeeded',
      resourceId: '9913140798220028',
      amount: { form: 'minor', value: 1000 },
      currency: 'EUR',
      refund: null,
    });
  });

  it('CANCELLATION: canceled', () => {
    expect(normalize(example('CANCELLATION'))).toMatchObject({ kind: 'canceled', resourceId: '9913140798220028', amount: { form: 'minor', value: 1000 }, refund: null });
  });

  it('CANCEL_OR_REFUND: canceled, carrying the refund it is once the payment is captured', () => {
    expect(normalize(example('CANCEL_OR_REFUND'))).toMatchObject({
      kind: 'canceled',
      resourceId: '9913140798220028',
      amount: null,
      currency: 'EUR',
      refund: { id: 'QFQTPCQ8HXSKGK82', amount: { form: 'minor', value: 1000 } },
    });
  });

  it("REFUND: refunded by that refund's amount only, keyed by the refund's own pspReference", () => {
    expect(normalize(example('REFUND'))).toEqual({
      kind: 'refunded',
      resourceId: '9913140798220028',
      orderId: null,
      orderReference: 'YOUR_MERCHANT_REFERENCE',
      amount: null,
      currency: 'EUR',
      refundedAmount: null,
      refund: { id: 'QFQTPCQ8HXSKGK82', amount: { form: 'minor', value: 1000 } },
      // The refund's pspReference is what the Checkout API answered a refund the module sent: confirmed.
      refundOutcomes: [{ id: 'QFQTPCQ8HXSKGK82', status: 'succeeded' }],
      declaredAccount: 'YOUR_MERCHANT_ACCOUNT',
      occurredAt: new Date('2021-01-01T00:00:00Z'),
    });
  });

  it('NOTIFICATION_OF_CHARGEBACK: disputed; CHARGEBACK: dispute_lost; CHARGEBACK_REVERSED: dispute_won (no amount checked: a dispute may be partial)', () => {
    expect(normalize(example('NOTIFICATION_OF_CHARGEBACK'))).toMatchObject({ kind: 'disputed', resourceId: '9913140798220028', amount: null, currency: 'EUR', refund: null });
    expect(normalize(example('CHARGEBACK'))).toMatchObject({ kind: 'dispute_lost', resourceId: '9913140798220028', amount: null });
    // The published CHARGEBACK_REVERSED has no originalReference: the payment is its pspReference.
    expect(normalize(example('CHARGEBACK_REVERSED'))).toMatchObject({ kind: 'dispute_won', resourceId: 'QFQTPCQ8HXSKGK82', amount: null });
  });

  it('success "false" on a modification changes nothing (a refused capture or cancel): ignored', () => {
    for (const code of ['CAPTURE', 'CANCELLATION', 'CANCEL_OR_REFUND', 'NOTIFICATION_OF_CHARGEBACK', 'CHARGEBACK', 'CHARGEBACK_REVERSED'] as const) {
      expect(normalize(example(code, 'false'))).toBeNull();
    }
    // As published: the library's own refused capture.
    expect(normalize(libraryMock('captureFalse').notificationItems[0].NotificationRequestItem)).toBeNull();
  });

  it('REFUND success "false" (as Adyen publishes it): no payment change, the refund failed with Adyen\'s reason', () => {
    expect(normalize(openApiExample('REFUND').notificationItems[0].NotificationRequestItem)).toEqual({
      kind: 'refund_outcome',
      resourceId: '9913140798220028',
      orderId: null,
      orderReference: 'YOUR_MERCHANT_REFERENCE',
      amount: null,
      currency: 'EUR',
      refundedAmount: null,
      refund: null,
      refundOutcomes: [{ id: 'QFQTPCQ8HXSKGK82', status: 'failed', reason: "Transaction hasn't been captured, refund not possible" }],
      declaredAccount: 'YOUR_MERCHANT_ACCOUNT',
      occurredAt: new Date('2021-01-01T00:00:00Z'),
    });
    expect(normalize(libraryMock('refundFalse').notificationItems[0].NotificationRequestItem)).toMatchObject({
      kind: 'refund_outcome',
      resourceId: 'ORIGINAL_PSP',
      amount: null,
      refund: null,
      refundOutcomes: [{ id: 'PSP_REFERENCE', status: 'failed', reason: 'Insufficient balance on payment' }],
    });
  });

  it('REFUND_FAILED (as Adyen publishes it, success "true"): the refund failed later, with its reason; keyed on the payment', () => {
    const published = openApiExample('REFUND_FAILED').notificationItems[0].NotificationRequestItem;
    expect(normalize(published)).toEqual({
      kind: 'refund_outcome',
      resourceId: '9913140798220028',
      orderId: null,
      orderReference: 'YOUR_MERCHANT_REFERENCE',
      amount: null,
      currency: 'EUR',
      refundedAmount: null,
      refund: null,
      refundOutcomes: [{ id: 'QFQTPCQ8HXSKGK82', status: 'failed', reason: 'Refund Failed' }],
      declaredAccount: 'YOUR_MERCHANT_ACCOUNT',
      occurredAt: new Date('2021-01-01T00:00:00Z'),
    });
    // Without a reason: still failed, with a reason of its own.
    const { reason: _reason, ...unexplained } = published;
    expect(normalize(unexplained)?.refundOutcomes).toEqual([{ id: 'QFQTPCQ8HXSKGK82', status: 'failed', reason: 'refused by Adyen' }]);
    // Without the payment it failed a refund of: nothing to apply it to.
    const { originalReference: _original, ...orphan } = published;
    expect(normalize(orphan)).toBeNull();
  });

  it('other codes are recorded and ignored', () => {
    expect(normalize(example('REPORT_AVAILABLE'))).toBeNull();
    expect(normalize({ ...example('AUTHORISATION'), eventCode: 'AUTHORISATION_ADJUSTMENT' })).toBeNull();
  });

  it("the official library's own notifications read the same way", () => {
    expect(normalize(libraryMock('authorisationTrue').notificationItems[0].NotificationRequestItem)).toMatchObject({
      kind: 'succeeded',
      resourceId: '123456789',
      orderReference: '8313842560770001',
      amount: { form: 'minor', value: 10100 },
      currency: 'EUR',
      declaredAccount: 'MagentoMerchantTest2',
    });
    expect(normalize(libraryMock('captureTrue').notificationItems[0].NotificationRequestItem)).toMatchObject({ kind: 'succeeded', resourceId: 'ORIGINAL_PSP', currency: 'USD' });
    expect(normalize(libraryMock('refundTrue').notificationItems[0].NotificationRequestItem)).toMatchObject({
      kind: 'refunded',
      resourceId: 'ORIGINAL_PSP',
      refund: { id: 'PSP_REFERENCE', amount: { form: 'minor', value: 1500 } },
    });
  });

  it('a weird stored body never throws: it reads as nothing to act on', () => {
    expect(normalize({})).toBeNull();
    expect(normalize({ ...example('REFUND'), amount: 'x' })).toMatchObject({ kind: 'refunded', refund: null, currency: null });
    expect(normalize({ ...example('AUTHORISATION'), eventDate: 'soon' })).toMatchObject({ occurredAt: null });
  });

  it("every published example, signed with the endpoint's key, is received as one event keyed <pspReference>:<eventCode>:<success>", async () => {
    for (const code of OPENAPI_CODES) {
      const published = openApiExample(code).notificationItems[0].NotificationRequestItem;
      const outcome = await receive({ live: 'false', notificationItems: [{ NotificationRequestItem: signItem(published, KEY) }] }, { merchantAccountId: 'YOUR_MERCHANT_ACCOUNT' });
      expect(outcome).toMatchObject({ ok: true, events: [{ eventId: `${published.pspReference}:${code}:${published.success}`, eventType: code }] });
    }
  });
});
