import { AUTH, createTestApp, TestApp, truncateAll } from '../support/app';
import { createOrder, http, MISSING_ID, registerPayment } from './api-helpers';

const LIMIT_MESSAGE = 'limit must be an integer from 1 to 100';
const CURSOR_ERROR = {
  error: 'validation_failed',
  details: [{ field: 'cursor', message: 'cursor is not a cursor this API issued' }],
};

/** Places `n` orders one after another (so each is newer than the one before); their ids, oldest first. */
async function placeOrders(t: TestApp, n: number, prefix = 'ORD'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await createOrder(t, { reference: `${prefix}-${i}` })).id);
  return ids;
}

interface Page {
  items: Array<{ id: string }>;
  nextCursor: string | null;
}

/** Every page of `path` (which must already carry its query) until nextCursor is null. */
async function allPages(t: TestApp, path: string): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | null = null;
  do {
    const res: { status: number; body: Page } = await http(t)
      .get(cursor === null ? path : `${path}&cursor=${encodeURIComponent(cursor)}`)
      .set(AUTH);
    expect(res.status).toBe(200);
    pages.push(res.body);
    cursor = res.body.nextCursor;
    if (pages.length > 50) throw new Error('paging does not end');
  } while (cursor !== null);
  return pages;
}

describe.each(['/orders', '/payments'])('GET %s: the list shape and its query (CONTRACT §3)', (path) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  it('nothing yet: {items: [], nextCursor: null}', async () => {
    const res = await http(t).get(path).set(AUTH);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [], nextCursor: null });
  });

  it.each([
    ['0', [{ field: 'limit', message: LIMIT_MESSAGE }]],
    ['101', [{ field: 'limit', message: LIMIT_MESSAGE }]],
    ['-1', [{ field: 'limit', message: LIMIT_MESSAGE }]],
    ['1.5', [{ field: 'limit', message: LIMIT_MESSAGE }]],
    // Not a number breaks all three rules of limit: one message for the field all the same.
    ['abc', [{ field: 'limit', message: LIMIT_MESSAGE }]],
    ['', [{ field: 'limit', message: LIMIT_MESSAGE }]],
  ])('limit=%s: 400 validation_failed on limit', async (limit, details) => {
    const res = await http(t).get(`${path}?limit=${limit}`).set(AUTH);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'validation_failed', details });
  });

  it.each(['1', '100'])('limit=%s is accepted', async (limit) => {
    const res = await http(t).get(`${path}?limit=${limit}`).set(AUTH);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [], nextCursor: null });
  });

  it.each([
    ['characters outside base64url', '!!!'],
    ['base64url of something that is not an id', Buffer.from('abc').toString('base64url')],
    ['an id not base64url-encoded', MISSING_ID],
    ['an empty cursor', ''],
  ])('a bad cursor (%s): 400 validation_failed on cursor', async (_name, cursor) => {
    const res = await http(t).get(`${path}?cursor=${encodeURIComponent(cursor)}`).set(AUTH);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(CURSOR_ERROR);
  });

  it('a bad cursor and a bad limit together: one message for each field', async () => {
    const res = await http(t).get(`${path}?limit=abc&cursor=!!`).set(AUTH);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'validation_failed',
      details: [
        { field: 'cursor', message: 'cursor is not a cursor this API issued' },
        { field: 'limit', message: LIMIT_MESSAGE },
      ],
    });
  });

  it('an unknown query parameter: 400 validation_failed naming it', async () => {
    const res = await http(t).get(`${path}?sort=asc`).set(AUTH);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'validation_failed',
      details: [{ field: 'sort', message: 'property sort should not exist' }],
    });
  });
});

describe('GET /orders: order, paging, filter (CONTRACT §3)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  it('newest first, items in the Order shape (as GET /orders/{id} answers)', async () => {
    const ids = await placeOrders(t, 3);
    const res = await http(t).get('/orders').set(AUTH);
    expect(res.status).toBe(200);
    expect(res.body.items.map((o: { id: string }) => o.id)).toEqual([...ids].reverse());
    expect(res.body.nextCursor).toBeNull();
    const one = await http(t).get(`/orders/${ids[1]}`).set(AUTH);
    expect(res.body.items[1]).toEqual(one.body);
  });

  it('limit defaults to 50', async () => {
    const ids = await placeOrders(t, 51);
    const first = await http(t).get('/orders').set(AUTH);
    expect(first.status).toBe(200);
    expect(first.body.items).toHaveLength(50);
    expect(first.body.items.map((o: { id: string }) => o.id)).toEqual([...ids].reverse().slice(0, 50));
    expect(first.body.nextCursor).toEqual(expect.any(String));

    const last = await http(t).get(`/orders?cursor=${first.body.nextCursor}`).set(AUTH);
    expect(last.body.items.map((o: { id: string }) => o.id)).toEqual([ids[0]]);
    expect(last.body.nextCursor).toBeNull();
  });

  it('25 orders in pages of 7: 7, 7, 7, 4; every id exactly once, newest first, nextCursor null at the end', async () => {
    const ids = await placeOrders(t, 25);
    const pages = await allPages(t, '/orders?limit=7');
    expect(pages.map((p) => p.items.length)).toEqual([7, 7, 7, 4]);
    expect(pages.slice(0, 3).every((p) => typeof p.nextCursor === 'string')).toBe(true);
    expect(pages[3].nextCursor).toBeNull();
    expect(pages.flatMap((p) => p.items.map((o) => o.id))).toEqual([...ids].reverse());
  });

  it('a count that fills the last page exactly: no empty page after it', async () => {
    await placeOrders(t, 14);
    const pages = await allPages(t, '/orders?limit=7');
    expect(pages.map((p) => p.items.length)).toEqual([7, 7]);
    expect(pages[1].nextCursor).toBeNull();
  });

  it('orders placed while paging do not appear in later pages; nothing repeats or is skipped', async () => {
    const ids = await placeOrders(t, 25);
    const first = await http(t).get('/orders?limit=7').set(AUTH);
    const later = await placeOrders(t, 5, 'LATER');

    const seen: string[] = first.body.items.map((o: { id: string }) => o.id);
    let cursor: string | null = first.body.nextCursor;
    while (cursor !== null) {
      const res = await http(t).get(`/orders?limit=7&cursor=${cursor}`).set(AUTH);
      expect(res.status).toBe(200);
      seen.push(...res.body.items.map((o: { id: string }) => o.id));
      cursor = res.body.nextCursor;
      // An order placed mid-way must not be visible on the following pages either.
      if (cursor !== null) later.push(...(await placeOrders(t, 1, `MID-${seen.length}`)));
    }
    expect(seen).toEqual([...ids].reverse());
    expect(seen.filter((id) => later.includes(id))).toEqual([]);
  });

  it('?status= filters, and pages within the filter', async () => {
    const [a, b, c, d, e] = await placeOrders(t, 5);
    for (const id of [a, c, e]) {
      await http(t).post(`/orders/${id}/mark-paid`).set(AUTH).send({ reason: 'test' }).expect(200);
    }
    await http(t).post(`/orders/${b}/cancel`).set(AUTH).expect(200);

    const paid = await http(t).get('/orders?status=paid').set(AUTH);
    expect(paid.status).toBe(200);
    expect(paid.body.items.map((o: { id: string }) => o.id)).toEqual([e, c, a]);
    expect(paid.body.items.every((o: { status: string }) => o.status === 'paid')).toBe(true);
    expect(paid.body.nextCursor).toBeNull();

    const canceled = await http(t).get('/orders?status=canceled').set(AUTH);
    expect(canceled.body).toEqual({ items: [expect.objectContaining({ id: b, status: 'canceled' })], nextCursor: null });
    const awaiting = await http(t).get('/orders?status=awaiting_payment').set(AUTH);
    expect(awaiting.body.items.map((o: { id: string }) => o.id)).toEqual([d]);
    const fulfilled = await http(t).get('/orders?status=fulfilled').set(AUTH);
    expect(fulfilled.body).toEqual({ items: [], nextCursor: null });

    const pages = await allPages(t, '/orders?status=paid&limit=2');
    expect(pages.map((p) => p.items.map((o) => o.id))).toEqual([[e, c], [a]]);
  });

  it('an unknown status: 400 validation_failed on status', async () => {
    const res = await http(t).get('/orders?status=shipped').set(AUTH);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'validation_failed',
      details: [{ field: 'status', message: 'status must be one of awaiting_payment, paid, fulfilled, canceled, refunded' }],
    });
  });
});

describe('GET /payments: order, paging, filters (CONTRACT §3)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  /** Two orders; payments registered one after another, oldest first. */
  async function fixture() {
    const o1 = await createOrder(t);
    const o2 = await createOrder(t, { currency: 'JPY', amount: '5000' });
    const p1 = await registerPayment(t, o1.id, { provider: 'stripe', providerPaymentId: 'pi_1' });
    const p2 = await registerPayment(t, o1.id, { provider: 'standard', providerPaymentId: 'pay_1' });
    const p3 = await registerPayment(t, o2.id, { provider: 'stripe', providerPaymentId: 'pi_2' });
    const p4 = await registerPayment(t, o2.id, { provider: 'paymos', providerPaymentId: 'pi_1' });
    const p5 = await registerPayment(t, o2.id, { provider: 'standard', providerPaymentId: 'pay_2' });
    return { o1, o2, p1, p2, p3, p4, p5 };
  }

  it('newest first, items in the Payment shape (as GET /payments/{id} answers)', async () => {
    const { p1, p2, p3, p4, p5 } = await fixture();
    const res = await http(t).get('/payments').set(AUTH);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [p5, p4, p3, p2, p1], nextCursor: null });
  });

  it('pages of 2: every payment exactly once, nextCursor null on the last page', async () => {
    const { p1, p2, p3, p4, p5 } = await fixture();
    const pages = await allPages(t, '/payments?limit=2');
    expect(pages.map((p) => p.items.map((x) => x.id))).toEqual([[p5.id, p4.id], [p3.id, p2.id], [p1.id]]);
    expect(pages[2].nextCursor).toBeNull();
  });

  it('?provider= filters', async () => {
    const { p1, p3 } = await fixture();
    const res = await http(t).get('/payments?provider=stripe').set(AUTH);
    expect(res.body).toEqual({ items: [p3, p1], nextCursor: null });
  });

  it('?providerPaymentId= filters (across providers), and with ?provider= narrows to one', async () => {
    const { p1, p4 } = await fixture();
    const both = await http(t).get('/payments?providerPaymentId=pi_1').set(AUTH);
    expect(both.body).toEqual({ items: [p4, p1], nextCursor: null });
    const one = await http(t).get('/payments?provider=paymos&providerPaymentId=pi_1').set(AUTH);
    expect(one.body).toEqual({ items: [p4], nextCursor: null });
  });

  it('?orderId= filters; all three together', async () => {
    const { o1, o2, p1, p2, p5 } = await fixture();
    const byOrder = await http(t).get(`/payments?orderId=${o1.id}`).set(AUTH);
    expect(byOrder.body).toEqual({ items: [p2, p1], nextCursor: null });
    const all3 = await http(t).get(`/payments?orderId=${o2.id}&provider=standard&providerPaymentId=pay_2`).set(AUTH);
    expect(all3.body).toEqual({ items: [p5], nextCursor: null });
    const none = await http(t).get(`/payments?orderId=${o1.id}&provider=paymos`).set(AUTH);
    expect(none.body).toEqual({ items: [], nextCursor: null });
    const unknownOrder = await http(t).get(`/payments?orderId=${MISSING_ID}`).set(AUTH);
    expect(unknownOrder.body).toEqual({ items: [], nextCursor: null });
  });

  it('filters page too: ?orderId= with limit 2', async () => {
    const { o2, p3, p4, p5 } = await fixture();
    const pages = await allPages(t, `/payments?orderId=${o2.id}&limit=2`);
    expect(pages.map((p) => p.items.map((x) => x.id))).toEqual([[p5.id, p4.id], [p3.id]]);
  });

  it.each([
    ['provider=worldpay', [{ field: 'provider', message: 'provider must be one of paymos, factuarea, stripe, standard, adyen, mollie, paypal, checkout, square, paddle' }]],
    ['orderId=abc', [{ field: 'orderId', message: 'orderId must be a UUID' }]],
    ['providerPaymentId=', [{ field: 'providerPaymentId', message: 'providerPaymentId should not be empty' }]],
  ])('%s: 400 validation_failed', async (query, details) => {
    const res = await http(t).get(`/payments?${query}`).set(AUTH);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'validation_failed', details });
  });
});
