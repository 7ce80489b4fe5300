import { AUTH, createTestApp, TestApp, truncateAll } from '../support/app';
import {
  countRows,
  createOrder,
  expectedNewOrder,
  http,
  ISO_INSTANT,
  MISSING_ID,
  orderBody,
  OrderBody,
  registerPayment,
  UUID,
} from './api-helpers';

const SHIP_TO = { name: 'Ada Lovelace', line1: '12 Analytical Row', city: 'London', postalCode: 'N1 9GU', country: 'GB' };
const AMOUNT_MESSAGE = 'amount must be a decimal string such as "49.90"';
const COUNTRY_MESSAGE = 'country must be an ISO 3166-1 alpha-2 code in upper case';

describe('POST /orders (CONTRACT §3)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  it('201 the Order, stored as answered', async () => {
    const body = orderBody({ reference: 'ORD-1', shipTo: { ...SHIP_TO, line2: 'Flat 3' } });
    const res = await http(t).post('/orders').set(AUTH).send(body);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(UUID),
      reference: 'ORD-1',
      status: 'awaiting_payment',
      amount: '49.90',
      currency: 'EUR',
      carrier: 'default',
      merchantAccountId: null,
      shipTo: { ...SHIP_TO, line2: 'Flat 3' },
      items: [{ sku: 'SKU-42', quantity: 2 }],
      payments: [],
      fulfillment: null,
      createdAt: expect.stringMatching(ISO_INSTANT),
      updatedAt: expect.stringMatching(ISO_INSTANT),
    });
    expect(res.body.updatedAt).toBe(res.body.createdAt);
    const rows = await t.dataSource.query(
      `SELECT id, reference, status, amount_minor::text AS minor, currency, carrier FROM orders`,
    );
    expect(rows).toEqual([
      { id: res.body.id, reference: 'ORD-1', status: 'awaiting_payment', minor: '4990', currency: 'EUR', carrier: 'default' },
    ]);

    const read = await http(t).get(`/orders/${res.body.id}`).set(AUTH);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
  });

  it('no reference: reference null; the carrier may be named explicitly', async () => {
    const body = orderBody({ carrier: 'default' });
    const res = await http(t).post('/orders').set(AUTH).send(body);
    expect(res.status).toBe(201);
    expect(res.body).toEqual(expectedNewOrder(body, '49.90'));
    expect(res.body.reference).toBeNull();
  });

  it.each([
    ['JPY', '5000', '5000', '5000'],
    ['EUR', '49.90', '49.90', '4990'],
    ['EUR', '49.9', '49.90', '4990'],
    ['EUR', '49', '49.00', '4900'],
    ['BHD', '1.250', '1.250', '1250'],
    ['BHD', '1.25', '1.250', '1250'],
  ])('%s %s: answered as "%s" (%s minor units stored)', async (currency, amount, answered, minor) => {
    const body = orderBody({ currency, amount });
    const res = await http(t).post('/orders').set(AUTH).send(body);
    expect(res.status).toBe(201);
    expect(res.body).toEqual(expectedNewOrder(body, answered));
    const [row] = await t.dataSource.query(`SELECT amount_minor::text AS minor, currency FROM orders`);
    expect(row).toEqual({ minor, currency });
  });

  it('a reference already taken: 409 reference_taken, no second row', async () => {
    await createOrder(t, { reference: 'ORD-DUP' });
    const res = await http(t).post('/orders').set(AUTH).send(orderBody({ reference: 'ORD-DUP', amount: '10.00' }));
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: 'reference_taken' });
    expect(await countRows(t, 'orders')).toBe(1);
  });

  describe('validation: 400 validation_failed naming the field, nothing written', () => {
    const noShipTo = orderBody();
    delete noShipTo.shipTo;
    const noItems = orderBody();
    delete noItems.items;
    const noCountry: Record<string, unknown> = { ...SHIP_TO };
    delete noCountry.country;

    const cases: Array<[string, OrderBody, Array<{ field: string; message: string }>]> = [
      // A number breaks both rules of amount (a string, the pattern): one message all the same.
      ['amount as a JSON number', orderBody({ amount: 49.9 }), [{ field: 'amount', message: AMOUNT_MESSAGE }]],
      ['a negative amount', orderBody({ amount: '-1.00' }), [{ field: 'amount', message: AMOUNT_MESSAGE }]],
      ['an amount with an exponent', orderBody({ amount: '4.99e1' }), [{ field: 'amount', message: AMOUNT_MESSAGE }]],
      [
        'more decimals than EUR has',
        orderBody({ amount: '49.901' }),
        [{ field: 'amount', message: '"49.901" has 3 decimals; EUR has 2' }],
      ],
      [
        'trailing zeros beyond the exponent',
        orderBody({ amount: '49.900' }),
        [{ field: 'amount', message: '"49.900" has 3 decimals; EUR has 2' }],
      ],
      [
        'decimals in JPY',
        orderBody({ amount: '1.5', currency: 'JPY' }),
        [{ field: 'amount', message: '"1.5" has 1 decimals; JPY has 0' }],
      ],
      [
        'an unknown currency',
        orderBody({ currency: 'EUX' }),
        [{ field: 'currency', message: 'Not an ISO 4217 currency code (upper case): "EUX"' }],
      ],
      [
        'a lower-case currency',
        orderBody({ currency: 'eur' }),
        [{ field: 'currency', message: 'currency must be an ISO 4217 code in upper case' }],
      ],
      ['missing shipTo', noShipTo, [{ field: 'shipTo', message: 'shipTo is required' }]],
      ['shipTo not an object', orderBody({ shipTo: 'London' }), [{ field: 'shipTo', message: 'shipTo must be an object' }]],
      ['shipTo an array', orderBody({ shipTo: [SHIP_TO] }), [{ field: 'shipTo', message: 'shipTo must be an object' }]],
      [
        'a country that is not ISO 3166-1 alpha-2',
        orderBody({ shipTo: { ...SHIP_TO, country: 'XX' } }),
        [{ field: 'shipTo.country', message: COUNTRY_MESSAGE }],
      ],
      [
        'a lower-case country ("gb")',
        orderBody({ shipTo: { ...SHIP_TO, country: 'gb' } }),
        [{ field: 'shipTo.country', message: COUNTRY_MESSAGE }],
      ],
      [
        'a mixed-case country ("Gb")',
        orderBody({ shipTo: { ...SHIP_TO, country: 'Gb' } }),
        [{ field: 'shipTo.country', message: COUNTRY_MESSAGE }],
      ],
      [
        'an alpha-3 country ("GBR")',
        orderBody({ shipTo: { ...SHIP_TO, country: 'GBR' } }),
        [{ field: 'shipTo.country', message: COUNTRY_MESSAGE }],
      ],
      ['a missing country', orderBody({ shipTo: noCountry }), [{ field: 'shipTo.country', message: COUNTRY_MESSAGE }]],
      [
        'an empty shipTo name',
        orderBody({ shipTo: { ...SHIP_TO, name: '' } }),
        [{ field: 'shipTo.name', message: 'name should not be empty' }],
      ],
      [
        'an unknown field inside shipTo',
        orderBody({ shipTo: { ...SHIP_TO, phone: '+44' } }),
        [{ field: 'shipTo.phone', message: 'property phone should not exist' }],
      ],
      ['items empty', orderBody({ items: [] }), [{ field: 'items', message: 'items must have at least one entry' }]],
      [
        'quantity 0',
        orderBody({ items: [{ sku: 'SKU-42', quantity: 0 }] }),
        [{ field: 'items[0].quantity', message: 'quantity must not be less than 1' }],
      ],
      [
        'quantity 1.5 (second item)',
        orderBody({ items: [{ sku: 'SKU-1', quantity: 1 }, { sku: 'SKU-42', quantity: 1.5 }] }),
        [{ field: 'items[1].quantity', message: 'quantity must be an integer' }],
      ],
      [
        // One message per field: the most basic rule it breaks (the type).
        'quantity as a string',
        orderBody({ items: [{ sku: 'SKU-42', quantity: '1' }] }),
        [{ field: 'items[0].quantity', message: 'quantity must be an integer' }],
      ],
      [
        'an unknown field inside an item',
        orderBody({ items: [{ sku: 'SKU-42', quantity: 1, price: '49.90' }] }),
        [{ field: 'items[0].price', message: 'property price should not exist' }],
      ],
      ['shipTo null', orderBody({ shipTo: null }), [{ field: 'shipTo', message: 'shipTo is required' }]],
      ['missing items', noItems, [{ field: 'items', message: 'items is required' }]],
      ['items null', orderBody({ items: null }), [{ field: 'items', message: 'items is required' }]],
      [
        'an item that is not an object',
        orderBody({ items: [null] }),
        [{ field: 'items[0]', message: 'each value in nested property items must be either object or array' }],
      ],
      [
        'an unknown carrier',
        orderBody({ carrier: 'ups' }),
        [{ field: 'carrier', message: 'carrier "ups" is not configured' }],
      ],
      ['an unknown top-level field', orderBody({ discount: '5.00' }), [{ field: 'discount', message: 'property discount should not exist' }]],
      [
        'an empty body: one message for each field',
        {} as OrderBody,
        [
          { field: 'amount', message: AMOUNT_MESSAGE },
          { field: 'currency', message: 'currency must be a string' },
          { field: 'shipTo', message: 'shipTo is required' },
          { field: 'items', message: 'items is required' },
        ],
      ],
    ];

    it.each(cases)('%s', async (_name, body, details) => {
      const res = await http(t).post('/orders').set(AUTH).send(body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'validation_failed', details });
      expect(await countRows(t, 'orders')).toBe(0);
    });

    it('an empty shipTo names every required address field, once each', async () => {
      const res = await http(t).post('/orders').set(AUTH).send(orderBody({ shipTo: {} }));
      expect(res.status).toBe(400);
      // One message per field: the first rule class-validator checks, the last decorator (MaxLength).
      expect(res.body).toEqual({
        error: 'validation_failed',
        details: [
          { field: 'shipTo.name', message: 'name must be a string' },
          { field: 'shipTo.line1', message: 'line1 must be a string' },
          { field: 'shipTo.city', message: 'city must be a string' },
          { field: 'shipTo.postalCode', message: 'postalCode must be a string' },
          { field: 'shipTo.country', message: COUNTRY_MESSAGE },
        ],
      });
      expect(await countRows(t, 'orders')).toBe(0);
    });

    it('a body that is not JSON: field "body"', async () => {
      const res = await http(t).post('/orders').set(AUTH).set('Content-Type', 'application/json').send('{"amount": "49.90",');
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: 'validation_failed',
        details: [{ field: 'body', message: 'the body is not valid JSON' }],
      });
      expect(await countRows(t, 'orders')).toBe(0);
    });

    it('a refused request with an Idempotency-Key stores no key: the key stays usable', async () => {
      const bad = await http(t).post('/orders').set(AUTH).set('Idempotency-Key', 'k-bad').send(orderBody({ carrier: 'ups' }));
      expect(bad.status).toBe(400);
      expect(await countRows(t, 'idempotency_keys')).toBe(0);
      const good = await http(t).post('/orders').set(AUTH).set('Idempotency-Key', 'k-bad').send(orderBody());
      expect(good.status).toBe(201);
      expect(await countRows(t, 'orders')).toBe(1);
    });
  });
});

describe('POST /orders with an Idempotency-Key (CONTRACT §3)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  const post = (key: string, body: object | string) => {
    const req = http(t).post('/orders').set(AUTH).set('Idempotency-Key', key);
    return typeof body === 'string' ? req.set('Content-Type', 'application/json').send(body) : req.send(body);
  };

  it('the same key and body answer the first response again: 201, same id, same body', async () => {
    const body = orderBody({ reference: 'ORD-IDEM' });
    const first = await post('key-1', body);
    expect(first.status).toBe(201);
    expect(first.body).toEqual(expectedNewOrder(body, '49.90'));

    const again = await post('key-1', body);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(await countRows(t, 'orders')).toBe(1);
  });

  it('a replay is byte-identical to the first response', async () => {
    const body = orderBody({ reference: 'ORD-BYTES', shipTo: { ...SHIP_TO, line2: 'Flat "3" – Ærø ✓' } });
    const first = await post('key-bytes', body);
    expect(first.status).toBe(201);
    const again = await post('key-bytes', body);
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers['content-type']).toBe(first.headers['content-type']);
    expect(JSON.parse(first.text)).toEqual(expectedNewOrder(body, '49.90'));
    const [row] = await t.dataSource.query(`SELECT response_body FROM idempotency_keys WHERE key = 'key-bytes'`);
    expect(row.response_body).toBe(first.text);
  });

  it('a replay is the first response even after the order moved on', async () => {
    const body = orderBody();
    const first = await post('key-moved', body);
    expect(first.status).toBe(201);
    await http(t).post(`/orders/${first.body.id}/cancel`).set(AUTH).expect(200);

    const again = await post('key-moved', body);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.body.status).toBe('awaiting_payment');
  });

  it('the same body with keys in another order (at every level) is the same request', async () => {
    const first = await post('key-order', orderBody());
    expect(first.status).toBe(201);
    const reordered =
      '{"items":[{"quantity":2,"sku":"SKU-42"}],"shipTo":{"country":"GB","postalCode":"N1 9GU","city":"London",' +
      '"line1":"12 Analytical Row","name":"Ada Lovelace"},"currency":"EUR","amount":"49.90"}';
    const again = await post('key-order', reordered);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(await countRows(t, 'orders')).toBe(1);
  });

  it.each([
    ['another amount', orderBody({ amount: '50.00' })],
    ['the same amount written differently', orderBody({ amount: '49.9' })],
    ['another item order', orderBody({ items: [{ sku: 'B', quantity: 1 }, { sku: 'A', quantity: 1 }] })],
    ['a reference added', orderBody({ reference: 'ORD-X' })],
  ])('the same key with %s: 422 idempotency_key_reused, nothing written', async (_name, other) => {
    const first = await post('key-reused', orderBody({ items: [{ sku: 'A', quantity: 1 }, { sku: 'B', quantity: 1 }] }));
    expect(first.status).toBe(201);
    const res = await post('key-reused', other);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error: 'idempotency_key_reused' });
    expect(await countRows(t, 'orders')).toBe(1);
  });

  it('another key with the same body is another order', async () => {
    const a = await post('key-a', orderBody());
    const b = await post('key-b', orderBody());
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.id).not.toBe(b.body.id);
    expect(await countRows(t, 'orders')).toBe(2);
  });

  it('10 concurrent requests with one key and one body: exactly one order, every answer identical', async () => {
    const body = orderBody({ reference: 'ORD-RACE' });
    const answers = await Promise.all(Array.from({ length: 10 }, () => post('key-race', body)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(201));
    for (const a of answers) expect(a.text).toBe(answers[0].text);
    expect(answers[0].body).toEqual(expectedNewOrder(body, '49.90'));
    expect(await countRows(t, 'orders')).toBe(1);
    expect(await countRows(t, 'idempotency_keys')).toBe(1);
    const [row] = await t.dataSource.query(`SELECT id FROM orders`);
    expect(row.id).toBe(answers[0].body.id);
  });

  it('a key of 255 characters is accepted; 256 is 400 validation_failed and writes nothing', async () => {
    const long = await post('k'.repeat(256), orderBody());
    expect(long.status).toBe(400);
    expect(long.body).toEqual({
      error: 'validation_failed',
      details: [{ field: 'Idempotency-Key', message: 'must be 1 to 255 characters' }],
    });
    expect(await countRows(t, 'orders')).toBe(0);
    expect(await countRows(t, 'idempotency_keys')).toBe(0);

    const max = await post('k'.repeat(255), orderBody());
    expect(max.status).toBe(201);
    expect(await countRows(t, 'idempotency_keys')).toBe(1);
  });

  it('a key older than 24 hours is new again: a second order is created, and then replayed', async () => {
    const body = orderBody();
    const first = await post('key-old', body);
    expect(first.status).toBe(201);
    await t.dataSource.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours'`);

    const second = await post('key-old', body);
    expect(second.status).toBe(201);
    expect(second.body).toEqual(expectedNewOrder(body, '49.90'));
    expect(second.body.id).not.toBe(first.body.id);
    expect(await countRows(t, 'orders')).toBe(2);

    const third = await post('key-old', body);
    expect(third.status).toBe(201);
    expect(third.body).toEqual(second.body);
    expect(await countRows(t, 'orders')).toBe(2);
  });

  it('a key younger than 24 hours still replays', async () => {
    const body = orderBody();
    const first = await post('key-young', body);
    await t.dataSource.query(`UPDATE idempotency_keys SET created_at = now() - interval '23 hours'`);
    const again = await post('key-young', body);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(await countRows(t, 'orders')).toBe(1);
  });
});

describe('order transitions and reads (CONTRACT §3)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());
  beforeEach(() => truncateAll(t.dataSource));

  const markPaid = (id: string, body: object = { reason: 'Bank transfer, ticket #4411' }) =>
    http(t).post(`/orders/${id}/mark-paid`).set(AUTH).send(body);
  const cancel = (id: string) => http(t).post(`/orders/${id}/cancel`).set(AUTH);

  describe('POST /orders/{id}/mark-paid', () => {
    it('200 the order, paid, with a requested fulfillment and one outbox message', async () => {
      const order = await createOrder(t);
      const res = await markPaid(order.id);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        ...order,
        status: 'paid',
        fulfillment: { id: expect.stringMatching(UUID), status: 'requested', carrier: 'default', shipmentId: null },
        updatedAt: expect.stringMatching(ISO_INSTANT),
      });
      expect(await countRows(t, 'fulfillments', 'order_id = $1', [order.id])).toBe(1);
      const messages = await t.dataSource.query(`SELECT type, status, idempotency_key AS key FROM outbox_message`);
      expect(messages).toEqual([{ type: 'fulfillment.dispatch', status: 'pending', key: res.body.fulfillment.id }]);
    });

    it('5 at once: every answer 200 and paid, one fulfillment, one outbox message', async () => {
      const order = await createOrder(t);
      const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => markPaid(order.id, { reason: `agent ${i}` })));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
      for (const a of answers) expect(a.body).toEqual(answers[0].body);
      expect(answers[0].body.status).toBe('paid');
      expect(await countRows(t, 'fulfillments')).toBe(1);
      expect(await countRows(t, 'outbox_message')).toBe(1);
    });

    it('again: 200, the order unchanged, still one fulfillment and one outbox message', async () => {
      const order = await createOrder(t);
      const first = await markPaid(order.id);
      expect(first.status).toBe(200);
      const again = await markPaid(order.id, { reason: 'a second agent' });
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      expect(await countRows(t, 'fulfillments')).toBe(1);
      expect(await countRows(t, 'outbox_message')).toBe(1);
    });

    it('a canceled order: 409 illegal_transition with a detail, nothing written', async () => {
      const order = await createOrder(t);
      await cancel(order.id).expect(200);
      const res = await markPaid(order.id);
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: 'illegal_transition', detail: 'a canceled order cannot be marked paid' });
      const read = await http(t).get(`/orders/${order.id}`).set(AUTH);
      expect(read.body.status).toBe('canceled');
      expect(await countRows(t, 'fulfillments')).toBe(0);
      expect(await countRows(t, 'outbox_message')).toBe(0);
    });

    it.each(['fulfilled', 'refunded'])('a %s order: 409 illegal_transition', async (status) => {
      const order = await createOrder(t);
      await t.dataSource.query(`UPDATE orders SET status = $2 WHERE id = $1`, [order.id, status]);
      const res = await markPaid(order.id);
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: 'illegal_transition', detail: `a ${status} order cannot be marked paid` });
      expect(await countRows(t, 'fulfillments')).toBe(0);
    });

    it.each([
      // One message per field: the most basic rule it breaks (the type).
      ['missing reason', {}, [{ field: 'reason', message: 'reason must be a string' }]],
      [
        'a reason over 500 characters',
        { reason: 'x'.repeat(501) },
        [{ field: 'reason', message: 'reason must be shorter than or equal to 500 characters' }],
      ],
      ['an empty reason', { reason: '' }, [{ field: 'reason', message: 'reason should not be empty' }]],
      [
        'an unknown field',
        { reason: 'ok', amount: '49.90' },
        [{ field: 'amount', message: 'property amount should not exist' }],
      ],
    ])('%s: 400 validation_failed, the order stays awaiting_payment', async (_name, body, details) => {
      const order = await createOrder(t);
      const res = await markPaid(order.id, body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'validation_failed', details });
      expect(await countRows(t, 'orders', `status = 'awaiting_payment'`)).toBe(1);
      expect(await countRows(t, 'fulfillments')).toBe(0);
    });

    it('an unknown id: 404 not_found', async () => {
      const res = await markPaid(MISSING_ID);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'not_found' });
    });

    it('an id that is not a UUID: 404 not_found', async () => {
      const res = await markPaid('ord-1');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'not_found' });
    });

    it('a registered payment is left as it is (pending): the order alone is paid', async () => {
      const order = await createOrder(t);
      const payment = await registerPayment(t, order.id, { provider: 'stripe', providerPaymentId: 'pi_support' });
      const res = await markPaid(order.id);
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('paid');
      expect(res.body.payments).toEqual([payment]);
    });
  });

  describe('POST /orders/{id}/cancel', () => {
    it('200 the order, canceled', async () => {
      const order = await createOrder(t);
      const res = await cancel(order.id);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ...order, status: 'canceled', updatedAt: expect.stringMatching(ISO_INSTANT) });
      expect(await countRows(t, 'orders', `status = 'canceled'`)).toBe(1);
    });

    it('again: 409 illegal_transition', async () => {
      const order = await createOrder(t);
      await cancel(order.id).expect(200);
      const res = await cancel(order.id);
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: 'illegal_transition', detail: 'a canceled order cannot be canceled' });
    });

    it('a paid order: 409 illegal_transition, it stays paid', async () => {
      const order = await createOrder(t);
      await markPaid(order.id).expect(200);
      const res = await cancel(order.id);
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: 'illegal_transition', detail: 'a paid order cannot be canceled' });
      expect(await countRows(t, 'orders', `status = 'paid'`)).toBe(1);
    });

    it('cancel and mark-paid at once: exactly one wins, the other is 409', async () => {
      const order = await createOrder(t);
      const [canceled, paid] = await Promise.all([cancel(order.id), markPaid(order.id)]);
      expect([canceled.status, paid.status].sort()).toEqual([200, 409]);
      const read = await http(t).get(`/orders/${order.id}`).set(AUTH);
      if (canceled.status === 200) {
        expect(read.body.status).toBe('canceled');
        expect(paid.body).toEqual({ error: 'illegal_transition', detail: 'a canceled order cannot be marked paid' });
        expect(await countRows(t, 'fulfillments')).toBe(0);
      } else {
        expect(read.body.status).toBe('paid');
        expect(canceled.body).toEqual({ error: 'illegal_transition', detail: 'a paid order cannot be canceled' });
        expect(await countRows(t, 'fulfillments')).toBe(1);
      }
    });

    it('an unknown id, or one that is not a UUID: 404 not_found', async () => {
      const missing = await cancel(MISSING_ID);
      expect(missing.status).toBe(404);
      expect(missing.body).toEqual({ error: 'not_found' });
      const bad = await cancel('not-a-uuid');
      expect(bad.status).toBe(404);
      expect(bad.body).toEqual({ error: 'not_found' });
    });
  });

  describe('GET /orders/{id}', () => {
    it('200 the order with its payments (oldest first) and fulfillment', async () => {
      const order = await createOrder(t, { currency: 'JPY', amount: '5000' });
      const p1 = await registerPayment(t, order.id, { provider: 'stripe', providerPaymentId: 'pi_1' });
      const p2 = await registerPayment(t, order.id, { provider: 'standard', providerPaymentId: 'pay_2' });
      const paid = await markPaid(order.id);
      const res = await http(t).get(`/orders/${order.id}`).set(AUTH);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(paid.body);
      expect(res.body).toEqual({
        ...order,
        status: 'paid',
        payments: [p1, p2],
        fulfillment: { id: expect.stringMatching(UUID), status: 'requested', carrier: 'default', shipmentId: null },
        updatedAt: expect.stringMatching(ISO_INSTANT),
      });
    });

    it('an unknown id: 404 not_found', async () => {
      const res = await http(t).get(`/orders/${MISSING_ID}`).set(AUTH);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'not_found' });
    });

    it.each(['abc', '01a22a2b-0fe2-7961-9348-af33610c382', `${MISSING_ID}0`])('a bad uuid %s: 404 not_found', async (id) => {
      const res = await http(t).get(`/orders/${id}`).set(AUTH);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'not_found' });
    });
  });
});
