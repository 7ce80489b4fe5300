import { Logger } from '@nestjs/common';
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
  /** Payments the service knows (registered, or in an event), and every id it was asked about. */
  const known = new Set<string>();
  const asked: string[] = [];
  const knowsPayment = async (id: string) => {
    asked.push(id);
    return known.has(id);
  };
  const deliver = (body: string, sender = '192.0.2.1') =>
    receiveDelivery(endpoint, { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: Buffer.from(body) }, [], nowMs, { sender, knowsPayment });
  return {
    ...fake,
    provider,
    endpoint,
    deliver,
    known,
    asked,
    now: () => nowMs,
    advance: (ms: number) => (nowMs += ms),
  };
}

/** A client answer held until the test releases it: `answer` runs then, with the payment asked for. */
function heldAnswers() {
  const held: Array<{ id: string; release: () => void }> = [];
  // The answer is what the payment is when the call arrives, sent when released.
  const answer = (reply: (id: string) => Promise<object>) => (id: string) => {
    const now = reply(id);
    now.catch(() => undefined);
    return new Promise<object>((resolve, reject) => held.push({ id, release: () => void now.then(resolve, reject) }));
  };
  return { held, answer };
}

/** Lets every promise chain that can move, move (no timer involved). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

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

describe('mollie: the outcome of refunds (payment commands)', () => {
  const id = 'tr_WDqYK6vllg';
  const eur = (value: string) => ({ value, currency: 'EUR' });
  const refund = (refundId: string, status: string, value = '10.00') => ({ resource: 'refund', id: refundId, status, amount: eur(value), paymentId: id });
  const paid = (refunds: unknown[], refunded = '10.00') =>
    payment(id, { status: 'paid', amountRefunded: eur(refunded), amountRemaining: eur('39.90'), _embedded: { refunds } });
  const normalized = (body: Record<string, unknown>) => {
    const event = paymentEvent(id, body);
    return { event, normalized: createMollieProvider().normalize(JSON.parse(event.body), event.eventType) };
  };

  it('a refund Mollie reports refunded confirms it (succeeded); one queued, pending or processing is not listed', () => {
    const { event, normalized: n } = normalized(paid([refund('re_4qqhO89gsT', 'refunded'), refund('re_Pending01', 'pending'), refund('re_Queued001', 'queued'), refund('re_Process01', 'processing')], '40.00'));
    expect(event.eventType).toBe('payment.refunded');
    expect(n).toMatchObject({ kind: 'refunded', refundedAmount: { form: 'decimal', value: '40.00' } });
    expect(n?.refundOutcomes).toEqual([{ id: 're_4qqhO89gsT', status: 'succeeded' }]);
  });

  it('a refund Mollie reports failed or canceled fails it, with the reason; the payment\'s own change stays the event\'s kind', () => {
    const { normalized: n } = normalized(paid([refund('re_Failed001', 'failed'), refund('re_Cancel001', 'canceled')], '0.00'));
    expect(n).toMatchObject({ kind: 'succeeded', refundedAmount: null });
    expect(n?.refundOutcomes).toEqual([
      { id: 're_Failed001', status: 'failed', reason: 'Mollie refund failed' },
      { id: 're_Cancel001', status: 'failed', reason: 'Mollie refund canceled' },
    ]);
  });

  it('a payment with no refund that has ended lists none, and keeps the key it had', () => {
    const { event, normalized: n } = normalized(paid([refund('re_Pending01', 'pending')]));
    expect(event.eventId).toBe(`${id}:paid:10.00:0`);
    expect(n).not.toHaveProperty('refundOutcomes');
    expect(normalized(payment(id, { status: 'paid' })).normalized).not.toHaveProperty('refundOutcomes');
  });

  it('a refund that ends is a new event even when no amount moved (else the hint reporting it would be a duplicate)', () => {
    const pending = paymentEvent(id, paid([refund('re_4qqhO89gsT', 'pending')]));
    const refunded = paymentEvent(id, paid([refund('re_4qqhO89gsT', 'refunded')]));
    const failed = paymentEvent(id, paid([refund('re_4qqhO89gsT', 'failed')]));
    expect(pending.eventId).toBe(`${id}:paid:10.00:0`);
    expect(refunded.eventId).toMatch(new RegExp(`^${id}:paid:10.00:0:refunds=[A-Za-z0-9_-]{16}$`));
    expect(failed.eventId).toMatch(new RegExp(`^${id}:paid:10.00:0:refunds=[A-Za-z0-9_-]{16}$`));
    expect(new Set([pending.eventId, refunded.eventId, failed.eventId]).size).toBe(3);
    // The same refunds in another order are the same event.
    const two = [refund('re_A000000001', 'refunded'), refund('re_B000000001', 'failed')];
    expect(paymentEvent(id, paid(two)).eventId).toBe(paymentEvent(id, paid([...two].reverse())).eventId);
  });

  it('unusable refund entries are skipped, never thrown on', () => {
    const { normalized: n } = normalized(paid([null, 'x', { id: 7, status: 'refunded' }, { id: 're_NoStatus01' }, refund('re_4qqhO89gsT', 'refunded')]));
    expect(n?.refundOutcomes).toEqual([{ id: 're_4qqhO89gsT', status: 'succeeded' }]);
    expect(normalized(payment(id, { status: 'paid', _embedded: { refunds: 'none' } })).normalized).not.toHaveProperty('refundOutcomes');
  });
});

describe('mollie: a hint is answered by a fetch that began after it', () => {
  it('hints while a fetch runs share one fetch that starts when it ends, and see what changed meanwhile', async () => {
    let status = 'paid';
    const { held, answer } = heldAnswers();
    const t = setup(answer(async (id) => payment(id, { status })));
    const first = t.deliver('id=tr_WDqYK6vllg');
    await settle();
    expect(t.gets).toHaveLength(1);
    // The payment changes at Mollie after the first fetch began; three hints arrive meanwhile.
    status = 'failed';
    const later = [t.deliver('id=tr_WDqYK6vllg'), t.deliver('id=tr_WDqYK6vllg', '192.0.2.2'), t.deliver('id=tr_WDqYK6vllg')];
    await settle();
    expect(t.gets).toHaveLength(1);
    held[0].release();
    expect(await first).toMatchObject({ ok: true, events: [{ eventId: 'tr_WDqYK6vllg:paid:0:0' }] });
    await settle();
    // One more fetch for the three, begun after each of them.
    expect(t.gets).toHaveLength(2);
    held[1].release();
    for (const outcome of await Promise.all(later)) expect(outcome).toMatchObject({ ok: true, events: [{ eventId: 'tr_WDqYK6vllg:failed:0:0' }] });
  });

  it('two changes one after the other: each hint fetches, and each change is its own event', async () => {
    let refunded = '0.00';
    const t = setup(async (id) => payment(id, { status: 'paid', amountRefunded: { value: refunded, currency: 'EUR' } }));
    expect(await t.deliver('id=tr_WDqYK6vllg')).toMatchObject({ ok: true, events: [{ eventId: 'tr_WDqYK6vllg:paid:0.00:0' }] });
    refunded = '10.00';
    // No time passes on the module's clock: nothing of the first answer is reused.
    expect(await t.deliver('id=tr_WDqYK6vllg')).toMatchObject({ ok: true, events: [{ eventId: 'tr_WDqYK6vllg:paid:10.00:0' }] });
    expect(t.gets).toHaveLength(2);
  });

  it('a failure answers only the hints that shared its fetch: the next hint asks again', async () => {
    let status = 503;
    const t = setup(async (id) => {
      if (status === 200) return payment(id, { status: 'paid' });
      throw apiError(status);
    });
    await expect(t.deliver('id=tr_WDqYK6vllg')).rejects.toThrow('Mollie answered 503 for payment tr_WDqYK6vllg');
    status = 429;
    await expect(t.deliver('id=tr_WDqYK6vllg')).rejects.toThrow('Mollie answered 429 for payment tr_WDqYK6vllg');
    status = 200;
    expect(await t.deliver('id=tr_WDqYK6vllg')).toMatchObject({ ok: true, events: [{ eventId: 'tr_WDqYK6vllg:paid:0:0' }] });
    expect(t.gets).toHaveLength(3);
  });

  it('a hint waits at most the fetch timeout, even behind a fetch that never answers', async () => {
    const t = setup(() => new Promise<never>(() => undefined), { fetchTimeoutMs: 50 });
    const first = t.deliver('id=tr_WDqYK6vllg');
    const behind = t.deliver('id=tr_WDqYK6vllg');
    const started = Date.now();
    await expect(first).rejects.toThrow('within 50 ms');
    await expect(behind).rejects.toThrow('Mollie did not answer for payment tr_WDqYK6vllg within 50 ms');
    expect(Date.now() - started).toBeLessThan(1_000);
    // The one behind started once the first was given up on, and was given up on in turn.
    expect(t.gets).toHaveLength(2);
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

  it('a 404 is remembered for a minute, for every sender: not asked again until then', async () => {
    const t = setup(async () => {
      throw apiError(404);
    });
    const notFound = { ok: false, error: 'malformed_payload', detail: "Mollie has no payment tr_bogus0001 for this endpoint's API key" };
    expect(await t.deliver('id=tr_bogus0001')).toEqual(notFound);
    t.advance(59_999);
    expect(await t.deliver('id=tr_bogus0001', '192.0.2.9')).toEqual(notFound);
    expect(t.gets).toHaveLength(1);
    t.advance(1);
    expect(await t.deliver('id=tr_bogus0001')).toEqual(notFound);
    expect(t.gets).toHaveLength(2);
  });

  it('many distinct bogus ids, from many senders: each fetched once', async () => {
    const t = setup(async () => {
      throw apiError(404);
    });
    const ids = Array.from({ length: 300 }, (_, i) => `tr_bogus${i}`);
    // In waves, each from an address of its own and within its share, each id hinted twice at once and once after.
    for (let wave = 0; wave < ids.length; wave += 8) {
      const some = ids.slice(wave, wave + 8);
      const sender = `198.51.100.${wave / 8}`;
      await Promise.all(some.flatMap((id) => [t.deliver(`id=${id}`, sender), t.deliver(`id=${id}`, sender)]));
      await Promise.all(some.map((id) => t.deliver(`id=${id}`, sender)));
    }
    expect(t.gets.map((g) => g.id).sort()).toEqual([...ids].sort());
  });

  it('an address that named more than 60 ids Mollie has not: 429 rate_limited without a call, for a minute; other addresses, and payments the service knows, are not refused', async () => {
    const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const t = setup(async (id) => {
      if (id.startsWith('tr_real')) return payment(id, { status: 'paid' });
      throw apiError(404);
    });
    for (let i = 0; i < 61; i++) expect(await t.deliver(`id=tr_guess${i}`)).toMatchObject({ ok: false, error: 'malformed_payload' });
    expect(t.gets).toHaveLength(61);
    // The 61st made it more than 60: from now on, refused unasked (a known id too, once forgotten as not found).
    expect(await t.deliver('id=tr_guess61')).toEqual({ ok: false, error: 'rate_limited' });
    expect(await t.deliver('id=tr_guess0')).toEqual({ ok: false, error: 'rate_limited' });
    expect(t.gets).toHaveLength(61);
    // Another address is asked for.
    expect(await t.deliver('id=tr_guess62', '192.0.2.2')).toMatchObject({ ok: false, error: 'malformed_payload' });
    expect(t.gets).toHaveLength(62);
    // A payment Mollie has answered for is fetched, even from the refused address; the refused
    // address is not worth a question to the service (a payment only the database knows is refused).
    expect(await t.deliver('id=tr_realPaid1', '192.0.2.3')).toMatchObject({ ok: true });
    expect(await t.deliver('id=tr_realPaid1')).toMatchObject({ ok: true, events: [{ eventId: 'tr_realPaid1:paid:0:0' }] });
    t.known.add('tr_realRegistered1');
    expect(await t.deliver('id=tr_realRegistered1')).toEqual({ ok: false, error: 'rate_limited' });
    expect(t.asked).toEqual([]);
    // A minute after the ids it named, it is asked for again.
    t.advance(60_000);
    expect(await t.deliver('id=tr_guess63')).toMatchObject({ ok: false, error: 'malformed_payload' });
    expect(t.gets.map((g) => g.id).slice(-2)).toEqual(['tr_realPaid1', 'tr_guess63']);
    // It said so once, naming the address's network only.
    expect(warned.mock.calls.map((c) => String(c[0]))).toEqual([expect.stringContaining('hints from 192.0.2.0/24 named more than 60 payments Mollie does not have')]);
  });

  it('one address holds at most its share of the fetches for unknown ids; another address, and known payments, still fetch', async () => {
    const { held, answer } = heldAnswers();
    const t = setup(answer(async (id) => payment(id, { status: 'paid' })), { maxUnknownFetchesInFlight: 6, senderLimits: { inFlight: 4 } });
    const flood = Array.from({ length: 10 }, (_, i) => t.deliver(`id=tr_flood${i}`, '203.0.113.66'));
    await settle();
    // Four fetched; the six past its share refused unfetched (503), the service asked about each.
    expect(t.gets).toHaveLength(4);
    const refused = await Promise.allSettled(flood.slice(4));
    expect(refused.map((r) => r.status)).toEqual(Array(6).fill('rejected'));
    expect(t.asked).toHaveLength(6);
    // Another address fills the rest of the lane: two more; then the lane is full for everyone.
    const others = [t.deliver('id=tr_other1', '192.0.2.7'), t.deliver('id=tr_other2', '192.0.2.8')];
    await settle();
    expect(t.gets).toHaveLength(6);
    await expect(t.deliver('id=tr_other3', '192.0.2.9')).rejects.toThrow('fetches from Mollie are unanswered');
    // A payment the service knows has a lane of its own.
    t.known.add('tr_registered1');
    const known = t.deliver('id=tr_registered1', '192.0.2.9');
    await settle();
    expect(t.gets.map((g) => g.id)).toContain('tr_registered1');
    for (const h of held) h.release();
    expect(await known).toMatchObject({ ok: true, events: [{ eventId: 'tr_registered1:paid:0:0' }] });
    await Promise.all([...flood.slice(0, 4), ...others]);
    // Answered, the shares are given back: the address fetches again.
    const again = t.deliver('id=tr_flood10', '203.0.113.66');
    await settle();
    held[held.length - 1].release();
    expect(await again).toMatchObject({ ok: true });
  });

  it('guesses spread over time: an address costs at most 61 + 7 calls in any minute', async () => {
    jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const t = setup(async () => {
      throw apiError(404);
    });
    const callsAt: number[] = [];
    let n = 0;
    // One guess a second for 61 seconds, then eight new guesses every second, for five minutes more.
    for (let second = 0; second < 360; second++) {
      const before = t.gets.length;
      await Promise.all(Array.from({ length: second < 61 ? 1 : 8 }, () => t.deliver(`id=tr_spread${n++}`)));
      callsAt.push(t.gets.length - before);
      t.advance(1_000);
    }
    const windows = callsAt.slice(0, -59).map((_, from) => callsAt.slice(from, from + 60).reduce((a, b) => a + b, 0));
    expect(Math.max(...windows)).toBeLessThanOrEqual(61 + 7);
    // Not refused for good: each minute after the first some guesses are asked about again.
    for (let minute = 1; minute < 6; minute++) expect(callsAt.slice(minute * 60, minute * 60 + 60).some((c) => c > 0)).toBe(true);
  });

  it('one address holds at most its share of the fetches for payments the service knows; another address still fetches them', async () => {
    const { held, answer } = heldAnswers();
    const t = setup(answer(async (id) => payment(id, { status: 'paid' })), { senderLimits: { knownInFlight: 3 } });
    const ids = Array.from({ length: 6 }, (_, i) => `tr_known${i}`);
    for (const id of ids) t.known.add(id);
    // Known to this process: fetched once from elsewhere.
    const first = ids.map((id) => t.deliver(`id=${id}`, '192.0.2.50'));
    await settle();
    for (const h of held.splice(0)) h.release();
    await Promise.all(first);
    const replay = ids.map((id) => t.deliver(`id=${id}`, '203.0.113.66'));
    await settle();
    expect(t.gets).toHaveLength(6 + 3);
    expect((await Promise.allSettled(replay.slice(3))).map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    const other = t.deliver('id=tr_known5', '192.0.2.51');
    await settle();
    expect(t.gets).toHaveLength(6 + 4);
    for (const h of held.splice(0)) h.release();
    await Promise.all([...replay.slice(0, 3), other]);
  });

  it('a client that throws at once gives its share back: the endpoint keeps fetching', async () => {
    let calls = 0;
    const fake = fakeClient(async (id) => payment(id, { status: 'paid' }));
    const pkg: MollieClientPackage = {
      createMollieClient: (options) => {
        const client = fake.pkg.createMollieClient(options);
        return {
          payments: {
            get: (id, parameters) => {
              if (++calls <= 3) throw new Error('the client refused the call');
              return client.payments.get(id, parameters);
            },
          },
        };
      },
    };
    const t = setup(async () => ({}), { loadClient: () => pkg, maxFetchesInFlight: 1 });
    for (let i = 0; i < 3; i++) await expect(t.deliver(`id=tr_throws${i}`)).rejects.toThrow('the client refused the call');
    expect(await t.deliver('id=tr_throws3')).toMatchObject({ ok: true });
  });

  it('a call Mollie never answers gives its share back after abandonAfterMs', async () => {
    const t = setup(() => new Promise<never>(() => undefined), { maxFetchesInFlight: 1, fetchTimeoutMs: 20, abandonAfterMs: 150 });
    await expect(t.deliver('id=tr_silent1')).rejects.toThrow('within 20 ms');
    await expect(t.deliver('id=tr_silent2')).rejects.toThrow('1 fetches from Mollie are unanswered');
    // Refused unfetched until the abandoned call's share comes back, then fetched (a deadline, not a sleep).
    const deadline = Date.now() + 5_000;
    let last = '';
    while (Date.now() < deadline && !/within 20 ms/.test(last)) {
      await settle();
      last = await t.deliver('id=tr_silent3').then(
        () => 'answered',
        (err: Error) => err.message,
      );
    }
    expect(last).toBe('Mollie did not answer for payment tr_silent3 within 20 ms');
    expect(t.gets.map((g) => g.id)).toEqual(['tr_silent1', 'tr_silent3']);
  });

  it('an address has at most its share of questions to the service unanswered', async () => {
    const { held, answer } = heldAnswers();
    const t = setup(answer(async (id) => payment(id, { status: 'paid' })), { maxUnknownFetchesInFlight: 1, senderLimits: { lookups: 2 } });
    const stuck: Array<() => void> = [];
    const known = new Set(['tr_reg1', 'tr_reg2', 'tr_reg3']);
    const provider = t.deliver('id=tr_fill1', '192.0.2.1');
    await settle();
    // The lane for unknown ids is full: each hint below is a question, answered when the test says.
    const slow = (id: string) => new Promise<boolean>((resolve) => stuck.push(() => resolve(known.has(id))));
    const hints = ['tr_reg1', 'tr_reg2', 'tr_reg3'].map((id) =>
      receiveDelivery(t.endpoint, { headers: {}, body: Buffer.from(`id=${id}`) }, [], t.now(), { sender: '203.0.113.9', knowsPayment: slow }),
    );
    await settle();
    expect(stuck).toHaveLength(2);
    await expect(hints[2]).rejects.toThrow('fetches from Mollie are unanswered');
    for (const release of stuck) release();
    await settle();
    for (const h of held.splice(0)) h.release();
    expect(await Promise.all([provider, ...hints.slice(0, 2)])).toMatchObject([{ ok: true }, { ok: true }, { ok: true }]);
  });

  it('the service is asked whether it knows a payment only when that decides something', async () => {
    const t = setup(async (id) => payment(id, { status: 'paid' }));
    for (let i = 0; i < 5; i++) await t.deliver(`id=tr_quiet${i}`);
    expect(t.asked).toEqual([]);
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
