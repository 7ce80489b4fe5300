import { createMollieProvider, HINT_DETAIL, MollieClientPackage, MollieProviderOptions, paymentEvent } from './mollie.provider';
import type { ProviderEndpoint } from './provider';
import { receiveDelivery, ReceivingEndpoint } from './receive';

const KEY = 'test_dHar4XY7LxsDOtmnkVtjNVWXLSlXsM';
const PROFILE = 'pfl_QkEhN94Ba';

/** A payment as Mollie's API returns it (https://docs.mollie.com/reference/get-payment). */
function payment(id: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    resource: 'payment',
    id,
    mode: 'test',
    createdAt: '2026-12-01T10:00:00+00:00',
    amount: { value: '49.90', currency: 'EUR' },
    description: 'Order 1',
    metadata: { order_id: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b' },
    status: 'open',
    profileId: PROFILE,
    _links: { self: { href: `https://api.mollie.com/v2/payments/${id}`, type: 'application/hal+json' } },
    ...fields,
  };
}

/** A stand-in for the client package: answers `payments.get` with `answer`, and records what it was asked. */
function fakeClient(answer: (id: string) => Promise<object>) {
  const created: Array<{ apiKey: string; apiEndpoint: string }> = [];
  const gets: Array<{ id: string; embed: string[] }> = [];
  const pkg: MollieClientPackage = {
    createMollieClient(options) {
      created.push(options);
      return {
        payments: {
          get(id, parameters) {
            gets.push({ id, embed: parameters.embed });
            return answer(id);
          },
        },
      };
    },
  };
  return { pkg, created, gets };
}

function apiError(statusCode: number): Error {
  return Object.assign(new Error(`status ${statusCode}`), { name: 'ApiError', statusCode });
}

function setup(answer: (id: string) => Promise<object>, options: MollieProviderOptions = {}) {
  const fake = fakeClient(answer);
  const provider = createMollieProvider({ loadClient: () => fake.pkg, ...options });
  const settings: ProviderEndpoint = { id: 'mollie-main', merchantAccountId: PROFILE, apiKey: KEY, apiBaseUrl: 'https://api.mollie.test', settings: {} };
  const endpoint: ReceivingEndpoint = { provider, toleranceSeconds: 300, settings, merchantAccountId: PROFILE, merchantAccountIds: null };
  let nowMs = 1_764_000_000_000;
  const deliver = (body: string) => receiveDelivery(endpoint, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: Buffer.from(body) }, [], nowMs);
  return {
    ...fake,
    provider,
    deliver,
    advance: (ms: number) => (nowMs += ms),
  };
}

describe('mollie: the hint', () => {
  it.each([
    [''],
    ['id='],
    ['id=tr_'],
    ['id=re_4qqhO89gsT'],
    ['id=tr_WDqYK6vllg&testmode=true'],
    ['id=tr_WDqYK6vllg\n'],
    [' id=tr_WDqYK6vllg'],
    ['ID=tr_WDqYK6vllg'],
    ['id=tr_WDqY-K6vllg'],
    ['id=tr_WDqYK6vll%67'],
    ['id=tr_WDqYK6vllg+'],
    ['{"id":"tr_WDqYK6vllg"}'],
    [`id=tr_${'a'.repeat(65)}`],
    ['id=tr_WDqYK6vllé'],
  ])('%j: 400 malformed_payload, and Mollie is not called', async (body) => {
    const t = setup(async (id) => payment(id));
    expect(await t.deliver(body)).toEqual({ ok: false, error: 'malformed_payload', detail: HINT_DETAIL });
    expect(t.gets).toEqual([]);
    expect(t.created).toEqual([]);
  });

  it('id=<tr_…>: the payment is fetched with the endpoint key, at {apiBaseUrl}/v2/, its refunds and chargebacks embedded', async () => {
    const t = setup(async (id) => payment(id, { status: 'paid', amountRefunded: { value: '0.00', currency: 'EUR' } }));
    const outcome = await t.deliver('id=tr_WDqYK6vllg');
    expect(t.created).toEqual([{ apiKey: KEY, apiEndpoint: 'https://api.mollie.test/v2/' }]);
    expect(t.gets).toEqual([{ id: 'tr_WDqYK6vllg', embed: ['refunds', 'chargebacks'] }]);
    expect(outcome).toMatchObject({
      ok: true,
      secretIndex: null,
      events: [
        {
          eventId: 'tr_WDqYK6vllg:paid:0.00:0',
          eventType: 'payment.paid',
          resourceId: 'tr_WDqYK6vllg',
          deliveryId: null,
          account: PROFILE,
          merchantAccountId: PROFILE,
          served: true,
          apiVersion: null,
        },
      ],
    });
    // What is recorded is the payment Mollie returned, never the hint's bytes.
    const [event] = (outcome as { events: Array<{ body: string }> }).events;
    expect(JSON.parse(event.body)).toEqual(payment('tr_WDqYK6vllg', { status: 'paid', amountRefunded: { value: '0.00', currency: 'EUR' } }));
    expect(event.body).not.toContain(KEY);
  });
});

describe('mollie: what Mollie answers', () => {
  it('404: 400 malformed_payload naming the payment, not the key', async () => {
    const t = setup(async () => {
      throw apiError(404);
    });
    const outcome = await t.deliver('id=tr_unknown1');
    expect(outcome).toEqual({ ok: false, error: 'malformed_payload', detail: "Mollie has no payment tr_unknown1 for this endpoint's API key" });
  });

  it.each([429, 500, 502, 503, 401])('%i: a throw (the guard answers 503 unavailable), the key in no message', async (status) => {
    const t = setup(async () => {
      throw apiError(status);
    });
    const failure = t.deliver('id=tr_WDqYK6vllg');
    await expect(failure).rejects.toThrow(`Mollie answered ${status} for payment tr_WDqYK6vllg`);
    await expect(failure).rejects.not.toThrow(KEY);
  });

  it('unreachable: a throw naming the reason, with the key redacted should the client ever name it', async () => {
    const t = setup(async () => {
      throw new Error(`request to https://api.mollie.test/v2/payments/tr_x failed (Bearer ${KEY}), reason: connect ECONNREFUSED`);
    });
    const failure = t.deliver('id=tr_WDqYK6vllg');
    await expect(failure).rejects.toThrow(/could not be reached for payment tr_WDqYK6vllg: .*\[redacted\].*ECONNREFUSED/);
    await expect(failure).rejects.not.toThrow(KEY);
  });

  it('no answer within the fetch timeout: a throw once it passes, not later', async () => {
    const t = setup(() => new Promise<never>(() => undefined), { fetchTimeoutMs: 50 });
    const started = Date.now();
    await expect(t.deliver('id=tr_WDqYK6vllg')).rejects.toThrow('Mollie did not answer for payment tr_WDqYK6vllg within 50 ms');
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('an answer that is not the payment asked for, or has no status: a throw (503), never a 400', async () => {
    const other = setup(async () => payment('tr_other1'));
    await expect(other.deliver('id=tr_WDqYK6vllg')).rejects.toThrow('Mollie answered another resource than payment tr_WDqYK6vllg');
    const statusless = setup(async (id) => payment(id, { status: undefined }));
    await expect(statusless.deliver('id=tr_WDqYK6vllg')).rejects.toThrow('without a status');
  });
});

describe('mollie: the business fact is the event', () => {
  const id = 'tr_WDqYK6vllg';
  const eur = (value: string) => ({ value, currency: 'EUR' });

  it.each([
    ['open', 'pending', { createdAt: '2026-12-01T10:00:00+00:00' }],
    ['pending', 'processing', {}],
    ['authorized', 'authorized', { authorizedAt: '2026-12-01T10:01:00+00:00' }],
    ['paid', 'succeeded', { paidAt: '2026-12-01T10:02:00+00:00', amountRefunded: eur('0.00'), amountRemaining: eur('49.90') }],
    ['failed', 'failed', { failedAt: '2026-12-01T10:03:00+00:00' }],
    ['canceled', 'canceled', { canceledAt: '2026-12-01T10:03:00+00:00' }],
    ['expired', 'expired', { expiredAt: '2026-12-01T10:15:00+00:00' }],
  ])('status %s → %s', (status, kind, extra) => {
    const body = payment(id, { status, ...extra });
    const event = paymentEvent(id, body);
    const refunded = status === 'paid' ? '0.00' : '0';
    expect(event).toMatchObject({ eventId: `${id}:${status}:${refunded}:0`, eventType: `payment.${status}`, resourceId: id, account: PROFILE });
    const time = Object.values(extra).find((v) => typeof v === 'string') as string | undefined;
    expect(createMollieProvider().normalize(JSON.parse(event.body), event.eventType)).toEqual({
      kind,
      resourceId: id,
      orderId: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
      amount: { form: 'decimal', value: '49.90' },
      currency: 'EUR',
      refundedAmount: null,
      declaredAccount: PROFILE,
      occurredAt: time ? new Date(time) : null,
    });
  });

  it('a partial and then a full refund: new events, kind refunded with the cumulative amount', () => {
    const partial = paymentEvent(id, payment(id, { status: 'paid', amountRefunded: eur('10.00'), amountRemaining: eur('39.90') }));
    const full = paymentEvent(id, payment(id, { status: 'paid', amountRefunded: eur('49.90'), amountRemaining: eur('0.00') }));
    expect([partial.eventId, full.eventId]).toEqual([`${id}:paid:10.00:0`, `${id}:paid:49.90:0`]);
    expect(partial.eventType).toBe('payment.refunded');
    for (const [event, refunded] of [[partial, '10.00'], [full, '49.90']] as const) {
      expect(createMollieProvider().normalize(JSON.parse(event.body), event.eventType)).toMatchObject({
        kind: 'refunded',
        amount: { form: 'decimal', value: '49.90' },
        refundedAmount: { form: 'decimal', value: refunded },
        currency: 'EUR',
        occurredAt: null,
      });
    }
  });

  it('a chargeback: a new event, dispute_lost, its amount never compared (it may be partial)', () => {
    const event = paymentEvent(id, payment(id, { status: 'paid', amountRefunded: eur('0.00'), amountChargedBack: eur('49.90') }));
    expect(event).toMatchObject({ eventId: `${id}:paid:0.00:49.90`, eventType: 'payment.charged_back' });
    expect(createMollieProvider().normalize(JSON.parse(event.body), event.eventType)).toMatchObject({
      kind: 'dispute_lost',
      amount: null,
      refundedAmount: null,
      currency: 'EUR',
    });
  });

  it('a zero refund or chargeback is no refund and no chargeback', () => {
    const event = paymentEvent(id, payment(id, { status: 'paid', amountRefunded: eur('0.00'), amountChargedBack: eur('0.00') }));
    expect(event.eventType).toBe('payment.paid');
    expect(createMollieProvider().normalize(JSON.parse(event.body), event.eventType)?.kind).toBe('succeeded');
  });

  it('a status the service does not act on is recorded under its own key and ignored', () => {
    const event = paymentEvent(id, payment(id, { status: 'settled' }));
    expect(event).toMatchObject({ eventId: `${id}:settled:0:0`, eventType: 'payment.settled' });
    expect(createMollieProvider().normalize(JSON.parse(event.body), event.eventType)).toBeNull();
  });

  it('another profile is declared as the account (processing ends account_mismatch), metadata without order_id is no order', () => {
    const event = paymentEvent(id, payment(id, { status: 'paid', profileId: 'pfl_other', metadata: 'just text' }));
    expect(event.account).toBe('pfl_other');
    expect(createMollieProvider().normalize(JSON.parse(event.body), event.eventType)).toMatchObject({ declaredAccount: 'pfl_other', orderId: null });
  });
});

describe('mollie: what a flood of hints can make it fetch', () => {
  it('200 concurrent hints for one unknown payment: one fetch, all 400', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const t = setup(async () => {
      await gate;
      throw apiError(404);
    });
    const outcomes = Array.from({ length: 200 }, () => t.deliver('id=tr_bogus0001'));
    release();
    const settled = await Promise.all(outcomes);
    expect(t.gets).toHaveLength(1);
    expect(new Set(settled.map((o) => JSON.stringify(o)))).toEqual(new Set([JSON.stringify({ ok: false, error: 'malformed_payload', detail: "Mollie has no payment tr_bogus0001 for this endpoint's API key" })]));
  });

  it('a result (a 404, a failure, a payment) is reused for the rest of the window, then fetched again', async () => {
    let status = 404;
    const t = setup(async (id) => {
      if (status === 200) return payment(id, { status: 'paid' });
      throw apiError(status);
    });
    await t.deliver('id=tr_bogus0001');
    t.advance(999);
    await t.deliver('id=tr_bogus0001');
    expect(t.gets).toHaveLength(1);
    t.advance(1);
    status = 503;
    await expect(t.deliver('id=tr_bogus0001')).rejects.toThrow('503');
    await expect(t.deliver('id=tr_bogus0001')).rejects.toThrow('503');
    expect(t.gets).toHaveLength(2);
    t.advance(1_000);
    status = 200;
    expect(await t.deliver('id=tr_bogus0001')).toMatchObject({ ok: true, events: [{ eventId: 'tr_bogus0001:paid:0:0' }] });
    expect(t.gets).toHaveLength(3);
  });

  it('many distinct bogus ids: each fetched once', async () => {
    const t = setup(async () => {
      throw apiError(404);
    });
    const ids = Array.from({ length: 300 }, (_, i) => `tr_bogus${i}`);
    // In waves under the cap of fetches at once (64), each id hinted twice at once and once after.
    for (let wave = 0; wave < ids.length; wave += 60) {
      const some = ids.slice(wave, wave + 60);
      await Promise.all(some.flatMap((id) => [t.deliver(`id=${id}`), t.deliver(`id=${id}`)]));
      await Promise.all(some.map((id) => t.deliver(`id=${id}`)));
    }
    expect(t.gets.map((g) => g.id).sort()).toEqual([...ids].sort());
  });

  it('fetches unanswered at once are capped: past the cap a hint fails at once, Mollie not called', async () => {
    const t = setup(() => new Promise<never>(() => undefined), { maxFetchesInFlight: 3, fetchTimeoutMs: 30 });
    const first = ['a1', 'a2', 'a3'].map((id) => t.deliver(`id=tr_${id}`));
    await expect(t.deliver('id=tr_a4')).rejects.toThrow('3 fetches from Mollie are unanswered: payment tr_a4 is not fetched now');
    expect(t.gets).toHaveLength(3);
    // Timed out, but never answered: the abandoned calls still count, so nothing more is sent.
    await Promise.allSettled(first);
    t.advance(5_000);
    await expect(t.deliver('id=tr_a5')).rejects.toThrow('unanswered');
    expect(t.gets).toHaveLength(3);
  });

  it('what it remembers is capped: past the cap the least recently fetched is forgotten (and may be fetched again)', async () => {
    const t = setup(async () => {
      throw apiError(404);
    }, { maxRememberedPayments: 2 });
    for (const id of ['tr_m1', 'tr_m2', 'tr_m3']) await t.deliver(`id=${id}`);
    await t.deliver('id=tr_m3');
    await t.deliver('id=tr_m2');
    expect(t.gets).toHaveLength(3);
    await t.deliver('id=tr_m1');
    expect(t.gets.map((g) => g.id)).toEqual(['tr_m1', 'tr_m2', 'tr_m3', 'tr_m1']);
  });
});

describe('mollie: an endpoint at start', () => {
  const loadable = () => createMollieProvider({ loadClient: () => fakeClient(async () => ({})).pkg });

  it('has no secrets, and needs a test_ or live_ key; an https base URL', () => {
    const provider = loadable();
    expect(provider.secrets).toBe('none');
    expect(provider.usesApi).toEqual({ defaultBaseUrl: 'https://api.mollie.com' });
    expect(provider.checkEndpoint!({ apiKey: KEY, settings: {} })).toBeNull();
    expect(provider.checkEndpoint!({ apiKey: 'live_abc123', apiBaseUrl: 'https://api.mollie.com', settings: {} })).toBeNull();
    expect(provider.checkEndpoint!({ settings: {} })).toMatch(/^"apiKey" is required/);
    expect(provider.checkEndpoint!({ apiKey: 'sk_test_123', settings: {} })).toBe('"apiKey" must be a Mollie API key (test_… or live_…)');
    expect(provider.checkEndpoint!({ apiKey: KEY, apiBaseUrl: 'http://127.0.0.1:9', settings: {} })).toMatch(/must be an https URL/);
  });

  it('without @mollie/api-client installed: one line saying how to install it; the package is looked for once', () => {
    const load = jest.fn(() => {
      throw Object.assign(new Error("Cannot find module '@mollie/api-client'"), { code: 'MODULE_NOT_FOUND' });
    });
    const provider = createMollieProvider({ loadClient: load });
    expect(provider.checkEndpoint!({ apiKey: KEY, settings: {} })).toBe('needs the @mollie/api-client package: npm install @mollie/api-client');
    expect(provider.checkEndpoint!({ apiKey: KEY, settings: {} })).toBe('needs the @mollie/api-client package: npm install @mollie/api-client');
    expect(load).toHaveBeenCalledTimes(1);
  });

  it('a package that fails to load for another reason: that error, unchanged', () => {
    const provider = createMollieProvider({ loadClient: () => { throw new SyntaxError('Unexpected token'); } });
    expect(() => provider.checkEndpoint!({ apiKey: KEY, settings: {} })).toThrow(SyntaxError);
  });
});

describe('mollie: the optional peer (the module without @mollie/api-client)', () => {
  afterEach(() => jest.dontMock('@mollie/api-client'));

  const notInstalled = () => {
    throw Object.assign(new Error("Cannot find module '@mollie/api-client' from 'src/providers/mollie.provider.ts'"), { code: 'MODULE_NOT_FOUND' });
  };

  it('loads, and validates and resolves endpoints of other providers, without ever requiring it', () => {
    const factory = jest.fn(notInstalled);
    jest.isolateModules(() => {
      jest.doMock('@mollie/api-client', factory, { virtual: true });
      const { validateEndpoints } = require('../config/validate') as typeof import('../config/validate');
      const { resolveEndpoint } = require('../config/endpoints') as typeof import('../config/endpoints');
      require('../index');
      const [definition] = validateEndpoints('WEBHOOK_ENDPOINTS', [{ id: 'paymos-a', provider: 'paymos', secrets: ['paymos-secret-old'], merchantAccountId: 'acc_1' }]);
      expect(resolveEndpoint(definition).provider.name).toBe('paymos');
    });
    expect(factory).not.toHaveBeenCalled();
  });

  it('a mollie endpoint without it stops the start: one line naming the endpoint and the install command', () => {
    jest.isolateModules(() => {
      jest.doMock('@mollie/api-client', notInstalled, { virtual: true });
      const { validateEndpoints } = require('../config/validate') as typeof import('../config/validate');
      expect(() => validateEndpoints('WEBHOOK_ENDPOINTS', [{ id: 'mollie-main', provider: 'mollie', merchantAccountId: PROFILE, apiKey: KEY }])).toThrow(
        'WEBHOOK_ENDPOINTS: endpoint "mollie-main": needs the @mollie/api-client package: npm install @mollie/api-client',
      );
    });
  });

  it('with it: no secrets, apiBaseUrl defaults to https://api.mollie.com', () => {
    const { validateEndpoints } = require('../config/validate') as typeof import('../config/validate');
    expect(validateEndpoints('WEBHOOK_ENDPOINTS', [{ id: 'mollie-main', provider: 'mollie', merchantAccountId: PROFILE, apiKey: KEY }])).toEqual([
      { id: 'mollie-main', provider: 'mollie', secrets: [], merchantAccountId: PROFILE, toleranceSeconds: 300, apiKey: KEY, apiBaseUrl: 'https://api.mollie.com' },
    ]);
    expect(() => validateEndpoints('WEBHOOK_ENDPOINTS', [{ id: 'mollie-main', provider: 'mollie', merchantAccountId: PROFILE }])).toThrow(
      'WEBHOOK_ENDPOINTS: endpoint "mollie-main": "apiKey" is required',
    );
  });
});
