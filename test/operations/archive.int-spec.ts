import request from 'supertest';
import { DeliveryProcessingService } from '../../src/webhooks/delivery-processing.service';
import { signedHeaders, SigningProvider } from '../../src/testing/sign';
import { AUTH, createTestApp, secretOf, TestApp, truncateAll } from '../support/app';
import { bodies } from '../support/domain';

/**
 * GET /admin/webhook-deliveries and GET /admin/webhook-deliveries/{id} (CONTRACT §3 lists, §4
 * archive), on deliveries recorded through the real receive path (UUIDv7 ids, receivedAt from
 * the id), on the real PostgreSQL.
 */

const ITEM_FIELDS = [
  'id',
  'endpointId',
  'provider',
  'merchantAccountId',
  'eventId',
  'eventType',
  'resourceId',
  'deliveryId',
  'apiVersion',
  'source',
  'status',
  'outcome',
  'attempts',
  'lastError',
  'receivedAt',
  'processedAt',
].sort();

interface Item {
  id: string;
  endpointId: string;
  provider: string;
  merchantAccountId: string;
  eventId: string;
  eventType: string;
  resourceId: string | null;
  deliveryId: string | null;
  status: string;
  outcome: string | null;
  attempts: number;
  lastError: string | null;
  receivedAt: string;
  processedAt: string | null;
}

interface Page {
  items: Item[];
  nextCursor: string | null;
}

const PAYMOS_TYPES = ['invoice.created', 'invoice.confirming', 'invoice.paid', 'invoice.expired'];
const BULK = 1_000;
const UA = 'provider-webhooks/1.0 (test)';

/** The millisecond a UUIDv7 carries, as an ISO instant. */
function uuid7Instant(id: string): string {
  return new Date(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toISOString();
}

/** The smallest UUIDv7 of a millisecond (as the service computes it for a time window). */
function idFloor(ms: number): string {
  const hex = Math.max(0, ms).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}

/** The columns the archive selects (delivery-archive.service.ts). */
const COLUMNS = `id, endpoint_id AS "endpointId", provider, merchant_account_id AS "merchantAccountId",
  event_id AS "eventId", event_type AS "eventType", resource_id AS "resourceId", delivery_id AS "deliveryId",
  status, outcome, attempts, last_error AS "lastError", received_at AS "receivedAt", processed_at AS "processedAt"`;

describe('the delivery archive (CONTRACT §4)', () => {
  let t: TestApp;
  const http = () => request(t.app.getHttpServer());

  interface Sent {
    id: string;
    eventId: string;
    text: string;
    headers: Record<string, string>;
  }

  /** Sends one signed delivery with a fixed user agent and a header that is never stored. */
  async function send(
    endpointId: string,
    provider: SigningProvider,
    eventId: string,
    body: object,
    extra: Record<string, string> = {},
    opts: { deliveryId?: string } = {},
  ): Promise<Sent> {
    const text = JSON.stringify(body);
    const headers = {
      ...signedHeaders(provider, secretOf(endpointId), text, { eventId, deliveryId: opts.deliveryId }),
      'user-agent': UA,
      'x-request-id': 'not-a-stored-header',
      ...extra,
    };
    const res = await http().post(`/webhooks/${endpointId}`).set(headers).send(text);
    if (res.status !== 200 || res.body.status !== 'accepted') {
      throw new Error(`delivery not accepted: ${res.status} ${JSON.stringify(res.body)}`);
    }
    const [{ id }] = await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [eventId]);
    return { id, eventId, text, headers };
  }

  /** `count` Paymos deliveries to paymos-a, in parallel batches of 50; their event ids in send order. */
  async function sendPaymosBulk(count: number, offset = 0): Promise<string[]> {
    const eventIds: string[] = [];
    for (let start = 0; start < count; start += 50) {
      const batch = Array.from({ length: Math.min(50, count - start) }, (_, k) => {
        const i = offset + start + k;
        const { eventId, body } = bodies.paymos(PAYMOS_TYPES[i % PAYMOS_TYPES.length], `inv_arch_${i % 50}`);
        eventIds.push(eventId);
        const text = JSON.stringify(body);
        return http()
          .post('/webhooks/paymos-a')
          .set(signedHeaders('paymos', secretOf('paymos-a'), text, { eventId }))
          .send(text)
          .then((res) => {
            if (res.status !== 200) throw new Error(`bulk delivery refused: ${res.status} ${res.text}`);
          });
      });
      await Promise.all(batch);
    }
    return eventIds;
  }

  async function page(query: Record<string, string | number>): Promise<Page> {
    const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
    const res = await http().get(`/admin/webhook-deliveries${qs ? `?${qs}` : ''}`).set(AUTH);
    if (res.status !== 200) throw new Error(`GET /admin/webhook-deliveries?${qs}: ${res.status} ${res.text}`);
    return res.body as Page;
  }

  /**
   * Every page of a query: each page but the last is full, only the last has nextCursor null.
   * `between` runs after each page but the last (to change the table while paging).
   */
  async function listAll(
    query: Record<string, string | number>,
    limit: number,
    between?: (pageIndex: number) => Promise<void>,
  ): Promise<{ items: Item[]; pages: number }> {
    const items: Item[] = [];
    let cursor: string | null = null;
    let pages = 0;
    for (;;) {
      const p: Page = await page({ ...query, limit, ...(cursor ? { cursor } : {}) });
      pages++;
      items.push(...p.items);
      if (p.nextCursor === null) {
        expect(p.items.length).toBeLessThanOrEqual(limit);
        return { items, pages };
      }
      expect(p.items.length).toBe(limit);
      cursor = p.nextCursor;
      if (pages > 100) throw new Error('paging does not end');
      if (between) await between(pages);
    }
  }

  const tableIds = async (): Promise<string[]> =>
    (await t.dataSource.query(`SELECT id FROM webhook_inbox ORDER BY id DESC`)).map((r: { id: string }) => r.id);

  let fa: Sent;
  let faNoDelivery: Sent;
  let stripe: Sent;
  let standard: Sent;
  let paymosB: Sent[];
  let ignored: Sent;
  let unmatched: Sent;
  const FA_DELIVERY_ID = 'dlv_7f3a1c9e-0001';

  beforeAll(async () => {
    t = await createTestApp();
    await truncateAll(t.dataSource);
    await sendPaymosBulk(BULK);

    paymosB = [];
    for (let i = 0; i < 5; i++) {
      const { eventId, body } = bodies.paymos('invoice.paid', `inv_b_${i}`);
      paymosB.push(await send('paymos-b', 'paymos', eventId, body));
    }
    const f1 = bodies.factuarea('invoice.paid', 'fac_inv_1');
    fa = await send('factuarea-company', 'factuarea', f1.eventId, f1.body, { 'factuarea-event-type': 'invoice.paid' }, {
      deliveryId: FA_DELIVERY_ID,
    });
    const f2 = bodies.factuarea('invoice.sent', 'fac_inv_2');
    faNoDelivery = await send('factuarea-account', 'factuarea', f2.eventId, f2.body);
    const s = bodies.stripe('payment_intent.succeeded', 'pi_arch_1');
    stripe = await send('stripe-main', 'stripe', s.eventId, s.body);
    const w = bodies.standard('payment.succeeded', 'pay_arch_1');
    standard = await send('standard-main', 'standard', w.eventId, w.body);

    // Real processing for two statuses: a type not acted on, and a payment nobody knows.
    const ig = bodies.paymos('invoice.unknown_kind', 'inv_arch_ignored');
    ignored = await send('paymos-b', 'paymos', ig.eventId, ig.body);
    const um = bodies.paymos('invoice.paid', 'inv_arch_unmatched');
    unmatched = await send('paymos-b', 'paymos', um.eventId, um.body);
    const processing = t.get(DeliveryProcessingService);
    expect(await processing.process(ignored.id, false)).toEqual({ status: 'ignored', outcome: 'no_handler' });
    expect(await processing.process(unmatched.id, true)).toEqual({ status: 'unmatched', outcome: 'payment_not_found' });
    // The others by SQL: the archive only reads what the table says.
    await t.dataSource.query(
      `UPDATE webhook_inbox SET status = 'processed', outcome = 'applied', attempts = 1, processed_at = received_at + interval '1 second'
        WHERE endpoint_id = 'paymos-a' AND event_type = 'invoice.paid' AND resource_id IN ('inv_arch_1', 'inv_arch_2', 'inv_arch_3')`,
    );
    await t.dataSource.query(
      `UPDATE webhook_inbox SET status = 'failed', outcome = 'internal_error', attempts = 10, last_error = 'internal_error: boom'
        WHERE endpoint_id = 'paymos-a' AND resource_id = 'inv_arch_5'`,
    );
    await t.dataSource.query(
      `UPDATE webhook_inbox SET status = 'rejected', outcome = 'amount_mismatch', attempts = 1, processed_at = now()
        WHERE id = $1`,
      [stripe.id],
    );
  }, 180_000);

  afterAll(async () => {
    await t?.close();
  });

  describe('GET /admin/webhook-deliveries', () => {
    it('items have exactly the CONTRACT §4 fields, with the values recorded', async () => {
      const all = (await listAll({}, 100)).items;
      for (const item of all) expect(Object.keys(item).sort()).toEqual(ITEM_FIELDS);
      const byId = new Map(all.map((i) => [i.id, i]));
      expect(byId.get(fa.id)).toEqual({
        id: fa.id,
        endpointId: 'factuarea-company',
        provider: 'factuarea',
        merchantAccountId: 'fa-merchant-1',
        eventId: fa.eventId,
        eventType: 'invoice.paid',
        resourceId: 'fac_inv_1',
        deliveryId: FA_DELIVERY_ID,
        apiVersion: '2026-09-23',
        source: 'webhook',
        status: 'received',
        outcome: null,
        attempts: 0,
        lastError: null,
        receivedAt: uuid7Instant(fa.id),
        processedAt: null,
      });
      const [row] = await t.dataSource.query(`SELECT processed_at FROM webhook_inbox WHERE id = $1`, [unmatched.id]);
      expect(byId.get(unmatched.id)).toEqual({
        id: unmatched.id,
        endpointId: 'paymos-b',
        provider: 'paymos',
        merchantAccountId: 'acc_1',
        eventId: unmatched.eventId,
        eventType: 'invoice.paid',
        resourceId: 'inv_arch_unmatched',
        deliveryId: null,
        apiVersion: null,
        source: 'webhook',
        status: 'unmatched',
        outcome: 'payment_not_found',
        attempts: 1,
        lastError: null,
        receivedAt: uuid7Instant(unmatched.id),
        processedAt: (row.processed_at as Date).toISOString(),
      });
      expect(byId.get(stripe.id)).toMatchObject({ provider: 'stripe', resourceId: 'pi_arch_1', deliveryId: null, status: 'rejected' });
      expect(byId.get(standard.id)).toMatchObject({ provider: 'standard', resourceId: 'pay_arch_1', eventId: standard.eventId });
    });

    it('the default page: 50 items, newest first, with a cursor', async () => {
      const p = await page({});
      expect(p.items.length).toBe(50);
      expect(p.nextCursor).toEqual(expect.any(String));
      expect(p.items.map((i) => i.id)).toEqual((await tableIds()).slice(0, 50));
    });

    it(`${BULK}+ deliveries in pages of 100: every id exactly once, no gap, strictly descending, receivedAt from the id`, async () => {
      const ids = await tableIds();
      expect(ids.length).toBe(BULK + 11);
      const { items, pages } = await listAll({}, 100);
      expect(pages).toBe(Math.ceil(ids.length / 100));
      const listed = items.map((i) => i.id);
      expect(new Set(listed).size).toBe(listed.length);
      expect(listed).toEqual(ids);
      for (let i = 1; i < listed.length; i++) expect(listed[i - 1] > listed[i]).toBe(true);
      for (let i = 1; i < items.length; i++) expect(items[i - 1].receivedAt >= items[i].receivedAt).toBe(true);
      for (const item of items) expect(item.receivedAt).toBe(uuid7Instant(item.id));
    });

    it('pages of 37 while new deliveries arrive: the snapshot exactly once, the newcomers on no later page', async () => {
      const before = await tableIds();
      const newcomers: string[] = [];
      const { items } = await listAll({}, 37, async (pageIndex) => {
        if (pageIndex <= 2) newcomers.push(...(await sendPaymosBulk(10, 5_000 + pageIndex * 10)));
      });
      const listed = items.map((i) => i.id);
      expect(listed).toEqual(before);
      const newIds: string[] = (
        await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = ANY($1)`, [newcomers])
      ).map((r: { id: string }) => r.id);
      expect(newIds.length).toBe(20);
      for (const id of newIds) expect(listed).not.toContain(id);
      // A fresh first read shows them, newest first.
      const first = await page({ limit: 20 });
      expect(new Set(first.items.map((i) => i.id))).toEqual(new Set(newIds));
    });

    describe('filters', () => {
      let all: Item[];
      beforeAll(async () => {
        all = (await listAll({}, 100)).items;
      });

      async function expectFilter(query: Record<string, string>, predicate: (i: Item) => boolean, limit = 100) {
        const expected = all.filter(predicate);
        const { items } = await listAll(query, limit);
        expect(items).toEqual(expected);
        return expected;
      }

      it.each(['received', 'processed', 'ignored', 'unmatched', 'failed', 'rejected'])('status=%s', async (status) => {
        const expected = await expectFilter({ status }, (i) => i.status === status);
        expect(expected.length).toBeGreaterThan(0);
      });

      it.each(['paymos-a', 'paymos-b', 'factuarea-company', 'factuarea-account', 'stripe-main', 'standard-main'])(
        'endpointId=%s',
        async (endpointId) => {
          const expected = await expectFilter({ endpointId }, (i) => i.endpointId === endpointId);
          expect(expected.length).toBeGreaterThan(0);
        },
      );

      it('endpointId of no delivery: an empty page', async () => {
        expect(await page({ endpointId: 'nobody-here' })).toEqual({ items: [], nextCursor: null });
      });

      it.each(['paymos', 'factuarea', 'stripe', 'standard'])('provider=%s', async (provider) => {
        const expected = await expectFilter({ provider }, (i) => i.provider === provider);
        expect(expected.length).toBeGreaterThan(0);
      });

      it.each(['invoice.paid', 'invoice.created', 'payment_intent.succeeded', 'invoice.unknown_kind'])(
        'eventType=%s',
        async (eventType) => {
          const expected = await expectFilter({ eventType }, (i) => i.eventType === eventType);
          expect(expected.length).toBeGreaterThan(0);
        },
      );

      it('eventId: exactly that delivery (Paymos, Factuarea UUID, Standard)', async () => {
        for (const sent of [unmatched, fa, standard]) {
          const expected = await expectFilter({ eventId: sent.eventId }, (i) => i.eventId === sent.eventId);
          expect(expected.map((i) => i.id)).toEqual([sent.id]);
        }
        expect(await page({ eventId: 'evt_never_seen' })).toEqual({ items: [], nextCursor: null });
      });

      it('resourceId, paged by 7', async () => {
        const expected = await expectFilter({ resourceId: 'inv_arch_7' }, (i) => i.resourceId === 'inv_arch_7', 7);
        expect(expected.length).toBe(BULK / 50);
      });

      it('from is inclusive and to exclusive, both exactly at a delivery\'s receivedAt', async () => {
        const x = all[Math.floor(all.length / 2)];
        const y = all[Math.floor(all.length / 4)];
        expect(y.receivedAt > x.receivedAt).toBe(true);

        const fromX = await expectFilter({ from: x.receivedAt }, (i) => i.receivedAt >= x.receivedAt);
        expect(fromX.map((i) => i.id)).toContain(x.id);
        const toX = await expectFilter({ to: x.receivedAt }, (i) => i.receivedAt < x.receivedAt);
        expect(toX.map((i) => i.id)).not.toContain(x.id);
        // Together they partition the table.
        expect(fromX.length + toX.length).toBe(all.length);

        const window = await expectFilter(
          { from: x.receivedAt, to: y.receivedAt },
          (i) => i.receivedAt >= x.receivedAt && i.receivedAt < y.receivedAt,
        );
        expect(window.map((i) => i.id)).toContain(x.id);
        expect(window.map((i) => i.id)).not.toContain(y.id);
        expect(window.length).toBeGreaterThan(0);
        // from = to: an empty window.
        expect(await page({ from: x.receivedAt, to: x.receivedAt })).toEqual({ items: [], nextCursor: null });
      });

      it('from/to with a UTC offset name the same instant as with Z', async () => {
        const x = all[Math.floor(all.length / 3)];
        const ms = Date.parse(x.receivedAt);
        const plus2 = new Date(ms + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
        await expectFilter({ from: plus2 }, (i) => i.receivedAt >= x.receivedAt);
        await expectFilter({ to: plus2 }, (i) => i.receivedAt < x.receivedAt);
      });

      it('from one millisecond after a delivery excludes it; to one millisecond after includes it', async () => {
        const x = all[Math.floor(all.length / 5)];
        const next = new Date(Date.parse(x.receivedAt) + 1).toISOString();
        const from = await expectFilter({ from: next }, (i) => i.receivedAt >= next);
        expect(from.map((i) => i.id)).not.toContain(x.id);
        const to = await expectFilter({ to: next }, (i) => i.receivedAt < next);
        expect(to.map((i) => i.id)).toContain(x.id);
      });

      it('combined: status + endpointId', async () => {
        const expected = await expectFilter(
          { status: 'received', endpointId: 'paymos-b' },
          (i) => i.status === 'received' && i.endpointId === 'paymos-b',
        );
        expect(expected.map((i) => i.id).sort()).toEqual(paymosB.map((s) => s.id).sort());
      });

      it('combined: provider + eventType + resourceId + status', async () => {
        const expected = await expectFilter(
          { provider: 'paymos', eventType: 'invoice.paid', resourceId: 'inv_arch_2', status: 'processed' },
          (i) => i.provider === 'paymos' && i.eventType === 'invoice.paid' && i.resourceId === 'inv_arch_2' && i.status === 'processed',
        );
        expect(expected.length).toBeGreaterThan(0);
      });

      it('combined: endpointId + eventType + from + to, paged by 10', async () => {
        const x = all[Math.floor((all.length * 3) / 4)];
        const y = all[Math.floor(all.length / 4)];
        const expected = await expectFilter(
          { endpointId: 'paymos-a', eventType: 'invoice.created', from: x.receivedAt, to: y.receivedAt },
          (i) =>
            i.endpointId === 'paymos-a' &&
            i.eventType === 'invoice.created' &&
            i.receivedAt >= x.receivedAt &&
            i.receivedAt < y.receivedAt,
          10,
        );
        expect(expected.length).toBeGreaterThan(10);
      });

      it('combined: status + provider + from; eventId + a status it does not have: empty', async () => {
        const x = all[Math.floor(all.length / 2)];
        await expectFilter(
          { status: 'failed', provider: 'paymos', from: x.receivedAt },
          (i) => i.status === 'failed' && i.provider === 'paymos' && i.receivedAt >= x.receivedAt,
        );
        expect(await page({ eventId: unmatched.eventId, status: 'processed' })).toEqual({ items: [], nextCursor: null });
        expect(await page({ eventId: unmatched.eventId, provider: 'stripe' })).toEqual({ items: [], nextCursor: null });
      });
    });

    describe('invalid query: 400 validation_failed naming the field', () => {
      it.each([
        ['status=bogus', 'status'],
        ['provider=worldpay', 'provider'],
        ['from=yesterday', 'from'],
        ['to=2026-13-01T00:00:00Z', 'to'],
        ['from=2026-02-30T00:00:00Z', 'from'],
        ['to=2026-01-01T25:00:00Z', 'to'],
        ['limit=0', 'limit'],
        ['limit=101', 'limit'],
        ['cursor=!!', 'cursor'],
        [`cursor=${Buffer.from('not-an-id').toString('base64url')}`, 'cursor'],
        ['colour=blue', 'colour'],
      ])('%s', async (query, field) => {
        const res = await http().get(`/admin/webhook-deliveries?${query}`).set(AUTH);
        expect({ status: res.status, error: res.body.error }).toEqual({ status: 400, error: 'validation_failed' });
        expect(res.body.details).toEqual([{ field, message: expect.any(String) }]);
      });

      it('without the token: 401', async () => {
        const res = await http().get('/admin/webhook-deliveries');
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ error: 'unauthorized' });
      });
    });

    describe('every filter is served by its index', () => {
      /** Index names a plan reads through (Index Scan, Index Only Scan, Bitmap Index Scan). */
      function indexesOf(plan: Record<string, unknown>): string[] {
        const found: string[] = [];
        const walk = (node: Record<string, unknown>) => {
          if (['Index Scan', 'Index Only Scan', 'Bitmap Index Scan'].includes(node['Node Type'] as string)) {
            found.push(node['Index Name'] as string);
          }
          for (const child of (node.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(child);
        };
        walk(plan);
        return found;
      }

      /** EXPLAIN of the archive's statement shape, after ANALYZE, with sequential scans off. */
      async function planIndexes(conditions: Array<[string, unknown]>): Promise<string[]> {
        const params: unknown[] = [51];
        const where = conditions.map(([sql, value]) => sql.replace('?', `$${params.push(value)}`));
        return t.dataSource.transaction(async (em) => {
          await em.query(`ANALYZE webhook_inbox`);
          await em.query(`SET LOCAL enable_seqscan = off`);
          const [row] = await em.query(
            `EXPLAIN (FORMAT JSON) SELECT ${COLUMNS} FROM webhook_inbox WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT $1`,
            params,
          );
          const plan = row['QUERY PLAN'];
          return indexesOf((Array.isArray(plan) ? plan : JSON.parse(plan))[0].Plan);
        });
      }

      // Selective values: where a filter matches a large share of the table, reading the primary key
      // backwards and filtering is the cheaper plan for a page, and the planner rightly takes it.
      it.each([
        ['status', [['status = ?', 'failed']], 'webhook_inbox_status_id_idx'],
        ['endpointId', [['endpoint_id = ?', 'paymos-b']], 'webhook_inbox_endpoint_id_idx'],
        ['eventType', [['event_type = ?', 'payment_intent.succeeded']], 'webhook_inbox_event_type_id_idx'],
        ['eventId', [['event_id = ?', 'evt_some_event']], 'webhook_inbox_event_id_idx'],
        ['resourceId', [['resource_id = ?', 'inv_arch_7']], 'webhook_inbox_resource_id_idx'],
      ] as Array<[string, Array<[string, unknown]>, string]>)('%s → %s', async (_name, conditions, index) => {
        expect(await planIndexes(conditions)).toContain(index);
      });

      it('provider → an index led by provider (the event key is one)', async () => {
        // Indexes of webhook_inbox whose first key column is provider.
        const led: string[] = (
          await t.dataSource.query(
            `SELECT c.relname AS name FROM pg_index i
               JOIN pg_class c ON c.oid = i.indexrelid
               JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
              WHERE i.indrelid = 'webhook_inbox'::regclass AND a.attname = 'provider'`,
          )
        ).map((r: { name: string }) => r.name);
        expect(led).toContain('webhook_inbox_event_key');
        const used = await planIndexes([['provider = ?', 'stripe']]);
        expect(used.filter((name) => led.includes(name)).length).toBeGreaterThan(0);
      });

      it('from → webhook_inbox_pkey', async () => {
        const from = new Date(Date.now() - 60_000);
        expect(
          await planIndexes([
            ['received_at >= ?', from],
            ['id >= ?', idFloor(from.getTime())],
          ]),
        ).toContain('webhook_inbox_pkey');
      });

      it('to → webhook_inbox_pkey', async () => {
        const to = new Date(Date.now() - 3_600_000);
        expect(
          await planIndexes([
            ['received_at < ?', to],
            ['id < ?', idFloor(to.getTime() + 1)],
          ]),
        ).toContain('webhook_inbox_pkey');
      });
    });
  });

  describe('GET /admin/webhook-deliveries/{id}', () => {
    async function detail(id: string) {
      const res = await http().get(`/admin/webhook-deliveries/${id}`).set(AUTH);
      expect(res.status).toBe(200);
      return res;
    }

    /** Every signature the sender put in a header: the whole value and each of its parts. */
    function signatureSecrets(value: string): string[] {
      const parts = value.split(/[ ,]/).map((p) => p.replace(/^v1[=,]/, '')).filter((p) => p.length >= 20);
      return [value, ...parts];
    }

    async function listItem(id: string): Promise<Item> {
      const [item] = (await page({ eventId: (await t.dataSource.query(`SELECT event_id FROM webhook_inbox WHERE id = $1`, [id]))[0].event_id })).items;
      return item;
    }

    it('paymos: the item plus headers (x-webhook-signature redacted) and the body as JSON', async () => {
      const sent = paymosB[0];
      const res = await detail(sent.id);
      expect(res.body).toEqual({
        ...(await listItem(sent.id)),
        headers: {
          'x-webhook-id': sent.eventId,
          'x-webhook-timestamp': sent.headers['x-webhook-timestamp'],
          'x-webhook-signature': '[redacted]',
          'content-type': 'application/json',
          'user-agent': UA,
        },
        body: JSON.parse(sent.text),
      });
      expect(res.body.deliveryId).toBeNull();
      for (const s of signatureSecrets(sent.headers['x-webhook-signature'])) expect(res.text).not.toContain(s);
    });

    it('factuarea: factuarea-signature redacted, deliveryId is the Factuarea delivery id', async () => {
      const res = await detail(fa.id);
      expect(res.body).toEqual({
        ...(await listItem(fa.id)),
        headers: {
          'factuarea-signature': '[redacted]',
          'factuarea-event-id': fa.eventId,
          'factuarea-event-type': 'invoice.paid',
          'factuarea-delivery-id': FA_DELIVERY_ID,
          'idempotency-key': fa.eventId,
          'content-type': 'application/json',
          'user-agent': UA,
        },
        body: JSON.parse(fa.text),
      });
      expect(res.body.deliveryId).toBe(FA_DELIVERY_ID);
      for (const s of signatureSecrets(fa.headers['factuarea-signature'])) expect(res.text).not.toContain(s);

      // A Factuarea delivery sent without a delivery id: null.
      const other = await detail(faNoDelivery.id);
      expect(other.body.deliveryId).toBeNull();
      expect(other.body.headers['factuarea-signature']).toBe('[redacted]');
    });

    it('stripe: stripe-signature redacted', async () => {
      const res = await detail(stripe.id);
      expect(res.body).toEqual({
        ...(await listItem(stripe.id)),
        headers: { 'stripe-signature': '[redacted]', 'content-type': 'application/json', 'user-agent': UA },
        body: JSON.parse(stripe.text),
      });
      expect(res.body.deliveryId).toBeNull();
      for (const s of signatureSecrets(stripe.headers['stripe-signature'])) expect(res.text).not.toContain(s);
    });

    it('standard: webhook-signature redacted', async () => {
      const res = await detail(standard.id);
      expect(res.body).toEqual({
        ...(await listItem(standard.id)),
        headers: {
          'webhook-id': standard.eventId,
          'webhook-timestamp': standard.headers['webhook-timestamp'],
          'webhook-signature': '[redacted]',
          'content-type': 'application/json',
          'user-agent': UA,
        },
        body: JSON.parse(standard.text),
      });
      expect(res.body.deliveryId).toBeNull();
      for (const s of signatureSecrets(standard.headers['webhook-signature'])) expect(res.text).not.toContain(s);
    });

    it('a delivery signed with two secrets (a rotation): every signature stays hidden', async () => {
      const { eventId, body } = bodies.paymos('invoice.paid', 'inv_rotation');
      const text = JSON.stringify(body);
      const headers = signedHeaders('paymos', secretOf('paymos-a'), text, { eventId, extraSecrets: ['another-secret'] });
      expect((await http().post('/webhooks/paymos-a').set(headers).send(text)).status).toBe(200);
      const [{ id }] = await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [eventId]);
      const res = await detail(id);
      expect(res.body.headers['x-webhook-signature']).toBe('[redacted]');
      const secrets = signatureSecrets(headers['x-webhook-signature']);
      expect(secrets.length).toBe(3);
      for (const s of secrets) expect(res.text).not.toContain(s);
    });

    it('unknown id: 404 {"error":"not_found"}', async () => {
      const res = await http().get('/admin/webhook-deliveries/0190f5d2-0000-7000-8000-000000000000').set(AUTH);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'not_found' });
    });

    it('not a uuid: 404 not_found (it names no delivery)', async () => {
      const res = await http().get('/admin/webhook-deliveries/not-a-uuid').set(AUTH);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'not_found' });
    });
  });
});
