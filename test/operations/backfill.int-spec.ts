import type { EndpointDefinition, ResolvedOptions } from '../../src/config/options';
import { recoveringBackfill } from '../../src/operations/reconciliation.service';
import { PW_OPTIONS } from '../../src/config/tokens';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { AUTH, eventually, TEST_ENDPOINTS, TestApp } from '../support/app';
import { useCarrierSimulator } from '../support/carrier-suite';
import { driver } from '../support/domain';
import { StripeEventsStub, StubEvent } from '../support/stripe-events-stub';

/** POST /admin/backfill and GET /admin/backfill/{id} (CONTRACT §4) against a local stub of Stripe's Events API. */

const SECRET = 'whsec_backfill_test_secret';
const WRONG_KEY = 'sk_test_wrongKeyNeverValid9999';

describe('backfill from the Stripe events API', () => {
  const sim = new CarrierSimulator();
  const stub = new StripeEventsStub();
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(() => stub.start());
  afterAll(() => stub.stop());

  useCarrierSimulator(
    sim,
    (carrierUrl) => {
      const api = { apiKey: stub.apiKey, apiBaseUrl: stub.url };
      const endpoints: EndpointDefinition[] = [
        ...TEST_ENDPOINTS,
        { id: 'stripe-backfill', provider: 'stripe', secrets: [SECRET], merchantAccountId: 'acct_bf', ...api },
        { id: 'stripe-other', provider: 'stripe', secrets: [SECRET], merchantAccountId: 'acct_other', ...api },
        { id: 'stripe-badkey', provider: 'stripe', secrets: [SECRET], merchantAccountId: 'acct_bad', apiKey: WRONG_KEY, apiBaseUrl: stub.url },
        { id: 'stripe-connect', provider: 'stripe', secrets: [SECRET], merchantAccountIds: ['acct_A', 'acct_B'], ...api },
        { id: 'stripe-any', provider: 'stripe', secrets: [SECRET], merchantAccountIds: ['*'], ...api },
      ];
      return { carriers: [{ name: 'default', url: carrierUrl }], endpoints };
    },
    (app) => {
      t = app;
      d = driver(app);
    },
  );
  beforeEach(() => stub.reset());

  const now = () => Math.floor(Date.now() / 1000);
  const start = (body: object) => d.http().post('/admin/backfill').set(AUTH).send(body);
  const since = () => new Date((now() - 3_600) * 1000).toISOString();

  async function finished(id: string, timeoutMs = 20_000) {
    return eventually(
      async () => {
        const res = await d.http().get(`/admin/backfill/${id}`).set(AUTH);
        expect(res.status).toBe(200);
        return res.body.status === 'running' ? undefined : res.body;
      },
      timeoutMs,
      `backfill ${id}`,
    );
  }

  /**
   * `count` orders, each with a succeeded event in the stub (on `account` when given), created a
   * second apart. A connected account's order names that account: an event of an endpoint of many
   * accounts pays only an order that expects its account.
   */
  async function ordersWithEvents(count: number, account?: string): Promise<Array<{ orderId: string; event: StubEvent }>> {
    const out = [];
    const base = now() - 1_800;
    for (let i = 0; i < count; i++) {
      const order = await d.createOrder('49.90', 'EUR', account ? { merchantAccountId: account } : {});
      out.push({ orderId: order.id, event: stub.addSucceeded({ orderId: order.id, created: base + i, account }) });
    }
    return out;
  }

  async function deliver(endpointId: string, event: StubEvent) {
    const text = JSON.stringify(event);
    const res = await d.http().post(`/webhooks/${endpointId}`).set(signedHeaders('stripe', SECRET, text)).send(text);
    expect(res.body).toEqual({ status: 'accepted', eventId: event.id });
  }

  const shippedOrders = () => sim.shipments.map((s) => s.orderId).sort();
  const inboxOf = (eventIds: string[]) =>
    t.dataSource.query(
      `SELECT event_id, source, status, outcome, attempts, processed_at, merchant_account_id FROM webhook_inbox WHERE event_id = ANY($1) ORDER BY event_id`,
      [eventIds],
    );

  it('3 pages, 10 of 25 events already delivered: done with 25 listed, 15 accepted, 10 duplicates; each order paid and shipped once', async () => {
    const all = await ordersWithEvents(25);
    const delivered = all.filter((_, i) => i % 5 < 2); // 10 of them, spread over the pages
    const missed = all.filter((_, i) => i % 5 >= 2);
    for (const { event } of delivered) await deliver('stripe-backfill', event);
    await eventually(async () => sim.shipments.length === 10, 20_000, 'the 10 delivered orders shipped');
    const before = await inboxOf(delivered.map((x) => x.event.id));
    expect(before.map((r: { status: string }) => r.status)).toEqual(Array(10).fill('processed'));

    const res = await start({ endpointId: 'stripe-backfill', since: since() });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ id: expect.any(String), status: 'running' });
    const done = await finished(res.body.id);
    expect(done).toEqual({
      id: res.body.id,
      endpointId: 'stripe-backfill',
      status: 'done',
      since: expect.any(String),
      until: expect.any(String),
      listed: 25,
      accepted: 15,
      duplicates: 10,
      refused: 0,
      error: null,
    });

    // Page by page, as Stripe is walked: limit 100 asked (the stub pages by 10), the window, the key, no Stripe-Account.
    expect(stub.listed.map((r) => r.query.starting_after ?? null)).toEqual([null, all[15].event.id, all[5].event.id]);
    for (const r of stub.requests) {
      expect(r.query).toMatchObject({ limit: '100', 'created[gte]': expect.stringMatching(/^\d+$/), 'created[lt]': expect.stringMatching(/^\d+$/) });
      expect(r.authorization).toBe(`Bearer ${stub.apiKey}`);
      expect(r.stripeAccount).toBeUndefined();
    }

    // The 15 processed like webhooks: paid and shipped once each; the 10 untouched.
    await eventually(async () => sim.shipments.length === 25, 20_000, 'every order shipped');
    expect(shippedOrders()).toEqual(all.map((x) => x.orderId).sort());
    for (const { orderId } of missed) {
      await eventually(async () => (await d.getOrder(orderId)).status === 'fulfilled', 10_000, `order ${orderId} fulfilled`);
    }
    expect(await inboxOf(delivered.map((x) => x.event.id))).toEqual(before);
    const missedRows = await inboxOf(missed.map((x) => x.event.id));
    expect(missedRows.map((r: { source: string; status: string; outcome: string; merchant_account_id: string }) => [r.source, r.status, r.outcome, r.merchant_account_id])).toEqual(
      Array(15).fill(['backfill', 'processed', 'applied', 'acct_bf']),
    );
    expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(25);
    expect(await d.count(`SELECT 1 FROM payments`)).toBe(25);

    // The archive says how each arrived.
    const archive = await d.http().get('/admin/webhook-deliveries?endpointId=stripe-backfill&limit=100').set(AUTH);
    expect(archive.status).toBe(200);
    const bySource = (source: string) => archive.body.items.filter((i: { source: string }) => i.source === source).map((i: { eventId: string }) => i.eventId).sort();
    expect(bySource('backfill')).toEqual(missed.map((x) => x.event.id).sort());
    expect(bySource('webhook')).toEqual(delivered.map((x) => x.event.id).sort());
    const [one] = archive.body.items.filter((i: { source: string }) => i.source === 'backfill');
    const detail = await d.http().get(`/admin/webhook-deliveries/${one.id}`).set(AUTH);
    expect(detail.body).toMatchObject({ deliveryId: null, source: 'backfill', apiVersion: '2025-03-31.basil', body: { id: one.eventId, object: 'event' } });
    expect(JSON.stringify(detail.body)).not.toContain(stub.apiKey);

    // Again over the same window: all 25 are duplicates, nothing changes.
    const again = await start({ endpointId: 'stripe-backfill', since: since() });
    expect(await finished(again.body.id)).toMatchObject({ status: 'done', listed: 25, accepted: 0, duplicates: 25 });
    expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(25);
    expect(sim.shipments.length).toBe(25);
  });

  describe('events the webhook route would refuse with a 400', () => {
    /** An object nested `levels` deep: past the route's limit of 64 from 65 on. */
    const nested = (levels: number): Record<string, unknown> => {
      let value: Record<string, unknown> = { end: true };
      for (let i = 1; i < levels; i++) value = { v: value };
      return value;
    };

    it('a lone-surrogate id, a C1-control id and a body too deep: refused (3), skipped; done, the good ones accepted, no attempt loop', async () => {
      // Newest first, as listed: page 1 (10 events) ends with the lone surrogate, page 2 holds the rest.
      const base = now() - 1_800;
      const good: StubEvent[] = [];
      const orders: string[] = [];
      const put = async (created: number, shape?: 'lone' | 'c1' | 'deep') => {
        const order = await d.createOrder();
        const id = shape === 'lone' ? `evt_lone_\ud800` : shape === 'c1' ? `evt_c1_\u009b[2J` : undefined;
        const event = stub.addSucceeded({ orderId: order.id, created, ...(id ? { id } : {}) });
        if (shape === 'deep') event.data.object.metadata = { order_id: order.id, deep: nested(70) };
        if (!shape) {
          good.push(event);
          orders.push(order.id);
        }
        return event;
      };
      // created: G1..G3 oldest (page 2), then L, G4, G5, G6, D, G7, G8, C, G9, G10 newest.
      for (let i = 0; i < 3; i++) await put(base + i);
      await put(base + 3, 'lone');
      for (let i = 4; i < 7; i++) await put(base + i);
      await put(base + 7, 'deep');
      for (let i = 8; i < 10; i++) await put(base + i);
      await put(base + 10, 'c1');
      for (let i = 11; i < 13; i++) await put(base + i);
      expect(good).toHaveLength(10);

      const res = await start({ endpointId: 'stripe-backfill', since: since() });
      expect(res.status).toBe(202);
      const done = await finished(res.body.id, 40_000);
      expect(done).toEqual({
        id: res.body.id,
        endpointId: 'stripe-backfill',
        status: 'done',
        since: expect.any(String),
        until: expect.any(String),
        listed: 13,
        accepted: 10,
        duplicates: 0,
        refused: 3,
        error: null,
      });
      // Each page asked once: no attempt was retried. Page 2 starts after the last id of page 1 that
      // can be sent back (G4); the lone surrogate it lists again first is not counted twice.
      const g4 = good.find((e) => e.created === base + 4)!;
      expect(stub.listed.map((r) => r.query.starting_after ?? null)).toEqual([null, g4.id]);
      expect(stub.requests).toHaveLength(2);
      // The good ones recorded and processed as webhooks; nothing of the refused ones.
      const rows = await t.dataSource.query(`SELECT event_id FROM webhook_inbox ORDER BY event_id`);
      expect(rows.map((r: { event_id: string }) => r.event_id)).toEqual(good.map((e) => e.id).sort());
      await eventually(async () => sim.shipments.length === 10, 20_000, 'the ten good orders shipped');
      expect(shippedOrders()).toEqual([...orders].sort());
    });

    it('a lone-surrogate id alone on its page: refused, and the backfill is done (no attempts spent on it)', async () => {
      const [first] = await ordersWithEvents(1);
      const order = await d.createOrder();
      stub.addSucceeded({ orderId: order.id, created: first.event.created + 1, id: 'evt_\udc00_lone' });
      const res = await start({ endpointId: 'stripe-backfill', since: since() });
      const done = await finished(res.body.id, 40_000);
      expect({ status: done.status, error: done.error, listed: done.listed, accepted: done.accepted, refused: done.refused }).toEqual({
        status: 'done',
        error: null,
        listed: 2,
        accepted: 1,
        refused: 1,
      });
      expect(stub.listed).toHaveLength(1);
    });

    it('exactly 64 levels is recorded; 65 is refused', async () => {
      const [ok, deep] = await ordersWithEvents(2);
      // The event is level 1, data 2, object 3, metadata 4: `deep` adds its levels from 5 on.
      ok.event.data.object.metadata = { order_id: ok.orderId, deep: nested(60) };
      deep.event.data.object.metadata = { order_id: deep.orderId, deep: nested(61) };
      const res = await start({ endpointId: 'stripe-backfill', since: since() });
      expect(await finished(res.body.id)).toMatchObject({ status: 'done', listed: 2, accepted: 1, duplicates: 0, refused: 1 });
      expect((await t.dataSource.query(`SELECT event_id FROM webhook_inbox`)).map((r: { event_id: string }) => r.event_id)).toEqual([ok.event.id]);
    });

    it('a whole page without an id the walk can continue after: failed, saying why (it cannot go past them)', async () => {
      await ordersWithEvents(1); // the oldest: never reached
      const order = await d.createOrder();
      for (let i = 0; i < 10; i++) stub.addSucceeded({ orderId: order.id, created: now() - 60 + i, id: `evt_${i}_\u2028` });
      const res = await start({ endpointId: 'stripe-backfill', since: since() });
      const failed = await finished(res.body.id);
      expect(failed).toMatchObject({ status: 'failed', listed: 0, accepted: 0, refused: 0 });
      expect(failed.error).toBe(
        'the events API listed 10 events in a row without an id the walk can continue after (printable text): it cannot go past them',
      );
      expect(stub.listed).toHaveLength(1);
      expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(0);
    });
  });

  it('a 429 is retried with backoff and the walk goes on', async () => {
    const all = await ordersWithEvents(3);
    stub.failNext(2);
    const res = await start({ endpointId: 'stripe-backfill', since: since() });
    expect(await finished(res.body.id)).toMatchObject({ status: 'done', listed: 3, accepted: 3, duplicates: 0, error: null });
    expect(stub.requests.map((r) => r.status)).toEqual([429, 429, 200]);
    await eventually(async () => sim.shipments.length === 3, 20_000, 'three shipments');
    expect(shippedOrders()).toEqual(all.map((x) => x.orderId).sort());
  });

  it("a key Stripe refuses: failed with Stripe's message, never the key; nothing recorded", async () => {
    await ordersWithEvents(2);
    const res = await start({ endpointId: 'stripe-badkey', since: since() });
    expect(res.status).toBe(202);
    const failed = await finished(res.body.id);
    expect(failed).toMatchObject({ status: 'failed', listed: 0, accepted: 0, duplicates: 0 });
    expect(failed.error).toBe('Stripe events API answered 401: Invalid API Key provided: sk_test_****9999');
    expect(JSON.stringify(failed)).not.toContain(WRONG_KEY);
    const [row] = await t.dataSource.query(`SELECT row_to_json(b)::text AS text FROM backfills b WHERE id = $1`, [res.body.id]);
    expect(row.text).not.toContain(WRONG_KEY);
    expect(stub.requests.map((r) => r.status)).toEqual([401]);
    expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(0);
  });

  it('a page over the read bound (32 MiB): the download is cut there and the backfill fails saying so; nothing recorded', async () => {
    await ordersWithEvents(2);
    stub.oversizeNext(256 * 1024 * 1024);
    const res = await start({ endpointId: 'stripe-backfill', since: since() });
    const failed = await finished(res.body.id);
    expect(failed).toMatchObject({ status: 'failed', listed: 0, accepted: 0, duplicates: 0 });
    expect(failed.error).toBe('Stripe events API: a page of events: the answer exceeded 32 MiB and was not read further');
    // One request (not retried), cut near the bound: far less than the 256 MiB offered.
    expect(stub.requests.map((r) => r.status)).toEqual([200]);
    expect(stub.oversizeWritten).toBeLessThan(64 * 1024 * 1024);
    expect(await d.count(`SELECT 1 FROM webhook_inbox`)).toBe(0);
  });

  it('one backfill per endpoint at a time: a second while one runs is 409 backfill_running; another endpoint may run', async () => {
    await ordersWithEvents(2);
    let held = false;
    stub.holdNext(1, () => (held = true));
    const first = await start({ endpointId: 'stripe-backfill', since: since() });
    expect(first.status).toBe(202);
    await eventually(async () => held, 10_000, 'the first page request');

    const second = await start({ endpointId: 'stripe-backfill', since: since() });
    expect(second.status).toBe(409);
    expect(second.body).toEqual({ error: 'backfill_running', detail: expect.stringContaining('stripe-backfill') });
    // Both at once: the unique index lets exactly none of them through while the first runs.
    const racing = await Promise.all([1, 2, 3].map(() => start({ endpointId: 'stripe-backfill', since: since() })));
    expect(racing.map((r) => r.status)).toEqual([409, 409, 409]);
    // (A window with no events: the stub answers every key-holder the same account's events.)
    const other = await start({ endpointId: 'stripe-other', since: '2020-01-01T00:00:00Z', until: '2020-01-02T00:00:00Z' });
    expect(other.status).toBe(202);

    stub.release();
    expect(await finished(first.body.id)).toMatchObject({ status: 'done', listed: 2, accepted: 2 });
    expect(await finished(other.body.id)).toMatchObject({ status: 'done', listed: 0 });
    expect(await d.count(`SELECT 1 FROM backfills`)).toBe(2);
    // Once it is done, the endpoint may be backfilled again.
    const third = await start({ endpointId: 'stripe-backfill', since: since() });
    expect(third.status).toBe(202);
    expect(await finished(third.body.id)).toMatchObject({ status: 'done', listed: 2, accepted: 0, duplicates: 2 });
  });

  it.each([
    ['an unknown endpoint', { endpointId: 'nope', since: 'S' }, 'endpointId', /no endpoint nope/],
    ['a non-stripe endpoint', { endpointId: 'paymos-a', since: 'S' }, 'endpointId', /not a stripe endpoint/],
    ['a stripe endpoint without apiKey', { endpointId: 'stripe-main', since: 'S' }, 'endpointId', /no apiKey/],
    ['no endpointId', { since: 'S' }, 'endpointId', /./],
    ['no since', { endpointId: 'stripe-backfill' }, 'since', /ISO 8601/],
    ['since not an instant', { endpointId: 'stripe-backfill', since: '2026-11-29' }, 'since', /ISO 8601 instant/],
    ['until not an instant', { endpointId: 'stripe-backfill', since: 'S', until: 'yesterday' }, 'until', /ISO 8601 instant/],
    ['since after until', { endpointId: 'stripe-backfill', since: '2026-11-29T10:00:00Z', until: '2026-11-28T10:00:00Z' }, 'until', /after since/],
    ['since equal to until', { endpointId: 'stripe-backfill', since: '2026-11-29T10:00:00Z', until: '2026-11-29T10:00:00Z' }, 'until', /after since/],
    ['since in the future, no until', { endpointId: 'stripe-backfill', since: '2099-01-01T00:00:00Z' }, 'since', /in the past/],
    ['accounts missing on a ["*"] endpoint', { endpointId: 'stripe-any', since: 'S' }, 'accounts', /required/],
    ['an account not in the list', { endpointId: 'stripe-connect', since: 'S', accounts: ['acct_A', 'acct_Z'] }, 'accounts', /acct_Z/],
    ['another account on a single-account endpoint', { endpointId: 'stripe-backfill', since: 'S', accounts: ['acct_Z'] }, 'accounts', /acct_Z/],
    ['accounts not a list', { endpointId: 'stripe-connect', since: 'S', accounts: 'acct_A' }, 'accounts', /./],
    ['an unknown field', { endpointId: 'stripe-backfill', since: 'S', apiKey: 'sk_test_x' }, 'apiKey', /./],
  ])('%s: 400 validation_failed naming the field, nothing written or called', async (_name, body, field, message) => {
    const input = Object.fromEntries(Object.entries(body).map(([k, v]) => [k, v === 'S' ? since() : v]));
    const res = await start(input);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('validation_failed');
    expect(res.body.details[0].field).toBe(field);
    expect(res.body.details[0].message).toMatch(message);
    expect(await d.count(`SELECT 1 FROM backfills`)).toBe(0);
    expect(stub.requests).toEqual([]);
  });

  it('GET of an unknown or malformed backfill id is 404 not_found; without the token 401', async () => {
    const unknown = await d.http().get('/admin/backfill/0190a8f2-0000-7000-8000-000000000000').set(AUTH);
    expect([unknown.status, unknown.body]).toEqual([404, { error: 'not_found' }]);
    expect((await d.http().get('/admin/backfill/nope').set(AUTH)).status).toBe(404);
    expect((await d.http().post('/admin/backfill').send({ endpointId: 'stripe-backfill', since: since() })).status).toBe(401);
  });

  it("a Connect endpoint: each listed account walked with its Stripe-Account, its events keyed under it and paying its own orders", async () => {
    const a = await ordersWithEvents(3, 'acct_A');
    const b = await ordersWithEvents(2, 'acct_B');
    await ordersWithEvents(1); // the platform's own: not asked for
    await ordersWithEvents(1, 'acct_C'); // not served
    const res = await start({ endpointId: 'stripe-connect', since: since() });
    expect(await finished(res.body.id)).toMatchObject({ status: 'done', listed: 5, accepted: 5, duplicates: 0 });
    expect(stub.requests.map((r) => r.stripeAccount)).toEqual(['acct_A', 'acct_B']);
    const rows = await inboxOf([...a, ...b].map((x) => x.event.id));
    expect(rows.map((r: { merchant_account_id: string }) => r.merchant_account_id).sort()).toEqual(['acct_A', 'acct_A', 'acct_A', 'acct_B', 'acct_B']);
    await eventually(async () => sim.shipments.length === 5, 20_000, 'five shipments');
    expect(shippedOrders()).toEqual([...a, ...b].map((x) => x.orderId).sort());

    // One account of the list, by request.
    const only = await start({ endpointId: 'stripe-connect', since: since(), accounts: ['acct_B'] });
    expect(await finished(only.body.id)).toMatchObject({ status: 'done', listed: 2, accepted: 0, duplicates: 2 });
    expect(stub.requests.slice(2).map((r) => r.stripeAccount)).toEqual(['acct_B']);
  });

  it('a page recorded whose progress was not saved (a crash between the two) is walked again, and the counts stay exact', async () => {
    const all = await ordersWithEvents(25);
    for (const { event } of all.filter((_, i) => i % 5 < 2)) await deliver('stripe-backfill', event);
    // The second page's progress save fails once, after its events were recorded: as if the process died there.
    await t.dataSource.query(`CREATE TABLE backfill_fault (armed boolean)`);
    await t.dataSource.query(`INSERT INTO backfill_fault VALUES (true)`);
    // A sequence moves outside transactions: it tells the test the fault fired, though its update rolled back.
    await t.dataSource.query(`CREATE SEQUENCE backfill_fault_fired`);
    await t.dataSource.query(`
      CREATE FUNCTION backfill_fault() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.listed = 20 AND (SELECT armed FROM backfill_fault) THEN
          PERFORM nextval('backfill_fault_fired');
          RAISE EXCEPTION 'injected crash before the progress of page 2 is saved';
        END IF;
        RETURN NEW;
      END $$`);
    await t.dataSource.query(`CREATE TRIGGER backfill_fault BEFORE UPDATE ON backfills FOR EACH ROW EXECUTE FUNCTION backfill_fault()`);
    try {
      const res = await start({ endpointId: 'stripe-backfill', since: since() });
      await eventually(async () => stub.listed.length >= 2 && (await d.count(`SELECT 1 FROM webhook_inbox WHERE source = 'backfill'`)) >= 12, 20_000, 'page 2 recorded');
      await eventually(async () => (await d.count(`SELECT 1 FROM backfills WHERE listed = 10`)) === 1, 5_000, 'page 1 saved');
      // Disarmed only once the save of page 2 has failed, so the redo always happens.
      await eventually(async () => (await t.dataSource.query(`SELECT is_called FROM backfill_fault_fired`))[0].is_called === true, 20_000, 'the fault fired');
      await t.dataSource.query(`UPDATE backfill_fault SET armed = false`);
      expect(await finished(res.body.id)).toMatchObject({ status: 'done', listed: 25, accepted: 15, duplicates: 10, error: null });
      // Page 2 asked twice (the redo), pages 1 and 3 once.
      expect(stub.listed.map((r) => r.query.starting_after ?? null).filter((s) => s === all[15].event.id).length).toBeGreaterThanOrEqual(2);
      await eventually(async () => sim.shipments.length === 25, 20_000, 'every order shipped');
      expect(shippedOrders()).toEqual(all.map((x) => x.orderId).sort());
    } finally {
      await t.dataSource.query(`DROP TRIGGER backfill_fault ON backfills; DROP FUNCTION backfill_fault(); DROP TABLE backfill_fault; DROP SEQUENCE backfill_fault_fired`);
    }
  });

  describe('reconciliation that recovers (the outage runbook)', () => {
    const reconcile = (body: object) => d.http().post('/admin/reconciliation').set(AUTH).send(body);

    it('missing Stripe events come with the backfill that recovers them; run it, and reconciliation is clean', async () => {
      const all = await ordersWithEvents(4);
      await deliver('stripe-backfill', all[0].event);
      const eventIds = all.map((x) => x.event.id);
      const before = Date.now();
      const report = await reconcile({ provider: 'stripe', merchantAccountId: 'acct_bf', eventIds });
      expect(report.status).toBe(200);
      expect(report.body).toEqual({
        missingEvents: eventIds.slice(1),
        missingPaidPayments: [],
        paidNotFulfilled: [],
        duplicateEffects: [],
        backfill: { endpointId: 'stripe-backfill', since: expect.any(String), until: expect.any(String) },
      });
      const { since: from, until: to } = report.body.backfill;
      // As far back as Stripe lists events (30 days), up to the report.
      expect(Date.parse(to) - Date.parse(from)).toBe(30 * 86_400_000);
      expect(Math.abs(Date.parse(to) - before)).toBeLessThan(5_000);

      const started = await start(report.body.backfill);
      expect(started.status).toBe(202);
      expect(await finished(started.body.id)).toMatchObject({ status: 'done', listed: 4, accepted: 3, duplicates: 1 });
      await eventually(async () => sim.shipments.length === 4, 20_000, 'four shipments');
      const after = await reconcile({ provider: 'stripe', merchantAccountId: 'acct_bf', eventIds });
      expect(after.body).toEqual({ missingEvents: [], missingPaidPayments: [], paidNotFulfilled: [], duplicateEffects: [], backfill: null });
    });

    it('a connected account gets its endpoint and itself as accounts; no endpoint with an apiKey, or another provider: null', async () => {
      const connect = await reconcile({ provider: 'stripe', merchantAccountId: 'acct_B', eventIds: ['evt_never_seen'] });
      expect(connect.body.backfill).toEqual({ endpointId: 'stripe-connect', since: expect.any(String), until: expect.any(String), accounts: ['acct_B'] });
      const anyAccount = await reconcile({ provider: 'stripe', merchantAccountId: 'acct_Q', eventIds: ['evt_never_seen'] });
      expect(anyAccount.body.backfill).toMatchObject({ endpointId: 'stripe-any', accounts: ['acct_Q'] });
      // Without the ["*"] endpoint, acct_1's only stripe endpoint (stripe-main) has no apiKey.
      const withoutAny = (t.get(PW_OPTIONS) as ResolvedOptions).endpoints.filter((e) => e.id !== 'stripe-any');
      expect(recoveringBackfill(withoutAny, 'stripe', 'acct_1', Date.now())).toBeNull();
      expect(recoveringBackfill(withoutAny, 'stripe', 'acct_bf', Date.parse('2026-11-29T12:00:00.400Z'))).toEqual({
        endpointId: 'stripe-backfill',
        since: '2026-10-30T12:00:00.000Z',
        until: '2026-11-29T12:00:00.000Z',
      });
      // Nothing missing, nothing to recover.
      expect((await reconcile({ provider: 'stripe', merchantAccountId: 'acct_bf', eventIds: [] })).body.backfill).toBeNull();
      const paymos = await reconcile({ provider: 'paymos', merchantAccountId: 'acc_1', eventIds: ['evt_never_seen'] });
      expect(paymos.body.backfill).toBeNull();
    });
  });
});
