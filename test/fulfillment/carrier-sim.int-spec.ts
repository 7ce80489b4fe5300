import { CarrierSimulator } from '../../tools/carrier-sim';

/**
 * The carrier simulator (tools/carrier-sim.ts) over real HTTP: the carrier side of CONTRACT §5
 * that the dispatch suites and the demo rely on, so its own behaviour is pinned down here.
 */
describe('carrier simulator over HTTP', () => {
  const sim = new CarrierSimulator();
  const secured = new CarrierSimulator({ apiKey: 'sim-key' });

  const BODY = {
    orderId: '01900000-0000-7000-8000-000000000001',
    orderReference: 'ORD-1',
    shipTo: { name: 'Ada Lovelace', line1: '12 Analytical Row', city: 'London', postalCode: 'N1 9GU', country: 'GB' },
    items: [{ sku: 'SKU-1', quantity: 1 }],
  };
  /** The same body with every object's keys in another order. */
  const REORDERED = {
    items: [{ quantity: 1, sku: 'SKU-1' }],
    shipTo: { country: 'GB', postalCode: 'N1 9GU', city: 'London', line1: '12 Analytical Row', name: 'Ada Lovelace' },
    orderReference: 'ORD-1',
    orderId: '01900000-0000-7000-8000-000000000001',
  };
  const SHIPMENT_ID = /^shp_[0-9a-f]{20}$/;

  beforeAll(async () => {
    await sim.start();
    await secured.start();
  });
  afterAll(async () => {
    await sim.stop();
    await secured.stop();
  });
  beforeEach(() => {
    sim.reset();
    secured.reset();
  });

  function ship(
    body: unknown,
    key: string | null,
    opts: { base?: string; auth?: string; signal?: AbortSignal; raw?: string } = {},
  ): Promise<Response> {
    return fetch(`${opts.base ?? sim.url}/shipments`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(key !== null ? { 'idempotency-key': key } : {}),
        ...(opts.auth ? { authorization: opts.auth } : {}),
      },
      body: opts.raw ?? JSON.stringify(body),
      signal: opts.signal ?? AbortSignal.timeout(5_000),
    });
  }
  /** The body of a shipment answer. */
  const answer = async (res: Response) => (await res.json()) as { id: string; orderId: string | null; status: string };
  const control = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const res = await fetch(`${sim.url}${path}`, {
      method,
      ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(5_000),
    });
    return { status: res.status, body: await res.json() };
  };
  const fault = (mode: string, count?: number) => control('POST', '/_sim/faults', count === undefined ? { mode } : { mode, count });
  const calls = async () => (await control('GET', '/_sim/calls')).body as Array<{ at: string; idempotencyKey: string | null; result: string }>;
  const shipments = async () =>
    (await control('GET', '/_sim/shipments')).body as Array<{ id: string; idempotencyKey: string; orderId: string | null }>;

  describe('POST /shipments and Idempotency-Key', () => {
    it('a new key creates a shipment: 201 {id, orderId, status}', async () => {
      const res = await ship(BODY, 'key-1');
      expect(res.status).toBe(201);
      expect(res.headers.get('content-type')).toBe('application/json');
      const body = await answer(res);
      expect(body).toEqual({ id: expect.stringMatching(SHIPMENT_ID), orderId: BODY.orderId, status: 'created' });
      expect(await shipments()).toEqual([
        { id: body.id, idempotencyKey: 'key-1', orderId: BODY.orderId, createdAt: expect.any(String) },
      ]);
      expect(await calls()).toEqual([{ at: expect.any(String), idempotencyKey: 'key-1', traceparent: null, result: 'created' }]);
    });

    it('the same key with the same body answers 200 with the same shipment, keys in another order too', async () => {
      const first = await answer(await ship(BODY, 'key-2'));
      const again = await ship(BODY, 'key-2');
      expect(again.status).toBe(200);
      expect(await again.json()).toEqual({ id: first.id, orderId: BODY.orderId, status: 'created' });
      const reordered = await ship(REORDERED, 'key-2');
      expect(reordered.status).toBe(200);
      expect((await answer(reordered)).id).toBe(first.id);
      expect((await shipments()).map((s) => s.id)).toEqual([first.id]);
      expect((await calls()).map((c) => c.result)).toEqual(['created', 'replayed', 'replayed']);
    });

    it('the same key with another body answers 409 idempotency_key_reused and creates nothing', async () => {
      const first = await answer(await ship(BODY, 'key-3'));
      const other = await ship({ ...BODY, items: [{ sku: 'SKU-1', quantity: 2 }] }, 'key-3');
      expect(other.status).toBe(409);
      expect(await other.json()).toEqual({ error: 'idempotency_key_reused' });
      expect((await shipments()).map((s) => s.id)).toEqual([first.id]);
      expect((await calls()).map((c) => c.result)).toEqual(['created', 'conflict']);
    });

    it('two keys make two shipments', async () => {
      const a = await answer(await ship(BODY, 'key-a'));
      const b = await answer(await ship(BODY, 'key-b'));
      expect(a.id).not.toBe(b.id);
      expect((await shipments()).map((s) => s.idempotencyKey)).toEqual(['key-a', 'key-b']);
    });

    it('a missing key answers 400 and creates nothing', async () => {
      const res = await ship(BODY, null);
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: 'missing_idempotency_key' });
      expect(await shipments()).toEqual([]);
      expect(await calls()).toEqual([{ at: expect.any(String), idempotencyKey: null, traceparent: null, result: 'bad_request' }]);
    });

    it('a body that is not JSON answers 400 invalid_json', async () => {
      const res = await ship(undefined, 'key-4', { raw: '{not json' });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: 'invalid_json' });
      expect(await shipments()).toEqual([]);
    });

    it('another path or method answers 404', async () => {
      const res = await fetch(`${sim.url}/shipments`, { signal: AbortSignal.timeout(5_000) });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: 'not_found' });
      const other = await fetch(`${sim.url}/parcels`, { method: 'POST', body: '{}', signal: AbortSignal.timeout(5_000) });
      expect(other.status).toBe(404);
      expect(await calls()).toEqual([]);
    });
  });

  describe('an apiKey', () => {
    const base = () => secured.url;

    it('answers 401 without the bearer, or with the wrong one, and creates nothing', async () => {
      const none = await ship(BODY, 'key-s', { base: base() });
      expect(none.status).toBe(401);
      expect(await none.json()).toEqual({ error: 'unauthorized' });
      const wrong = await ship(BODY, 'key-s', { base: base(), auth: 'Bearer not-the-key' });
      expect(wrong.status).toBe(401);
      const bare = await ship(BODY, 'key-s', { base: base(), auth: 'sim-key' });
      expect(bare.status).toBe(401);
      expect(secured.shipments).toEqual([]);
      expect(secured.calls.map((c) => c.result)).toEqual(['unauthorized', 'unauthorized', 'unauthorized']);
    });

    it('with "Bearer <apiKey>" creates the shipment', async () => {
      const res = await ship(BODY, 'key-s', { base: base(), auth: 'Bearer sim-key' });
      expect(res.status).toBe(201);
      expect(secured.shipments.map((s) => s.idempotencyKey)).toEqual(['key-s']);
    });
  });

  describe('faults', () => {
    it('fail: 500 and no shipment; the next call creates it', async () => {
      expect(await fault('fail')).toEqual({ status: 200, body: { queued: ['fail'] } });
      const res = await ship(BODY, 'key-f');
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({ error: 'simulated_failure' });
      expect(await shipments()).toEqual([]);
      expect((await ship(BODY, 'key-f')).status).toBe(201);
      expect((await shipments()).length).toBe(1);
      expect((await calls()).map((c) => c.result)).toEqual(['fail', 'created']);
    });

    it('reject: 400 invalid_address and no shipment', async () => {
      await fault('reject');
      const res = await ship(BODY, 'key-r');
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: 'invalid_address' });
      expect(await shipments()).toEqual([]);
      expect((await calls()).map((c) => c.result)).toEqual(['reject']);
    });

    it('drop: the fetch fails, and the shipment exists; the same key then answers it with 200', async () => {
      await fault('drop');
      const err = await ship(BODY, 'key-d').then(
        () => null,
        (e: Error) => e,
      );
      // Undici's TypeError comes from another realm than Jest's: compare by name and message.
      expect({ name: err?.name, message: err?.message }).toEqual({ name: 'TypeError', message: 'fetch failed' });
      const created = await shipments();
      expect(created).toEqual([
        { id: expect.stringMatching(SHIPMENT_ID), idempotencyKey: 'key-d', orderId: BODY.orderId, createdAt: expect.any(String) },
      ]);
      const replay = await ship(BODY, 'key-d');
      expect(replay.status).toBe(200);
      expect((await answer(replay)).id).toBe(created[0].id);
      expect((await calls()).map((c) => c.result)).toEqual(['drop', 'replayed']);
    });

    it('hang: the fetch times out, and the shipment exists', async () => {
      await fault('hang');
      const err = await ship(BODY, 'key-h', { signal: AbortSignal.timeout(200) }).then(
        () => null,
        (e: Error) => e,
      );
      expect(err?.name).toBe('TimeoutError');
      const created = await shipments();
      expect(created.map((s) => s.idempotencyKey)).toEqual(['key-h']);
      const replay = await ship(BODY, 'key-h');
      expect(replay.status).toBe(200);
      expect((await answer(replay)).id).toBe(created[0].id);
      expect((await calls()).map((c) => c.result)).toEqual(['hang', 'replayed']);
    });

    it('apply in the order queued, and only to the next N calls', async () => {
      expect((await fault('fail', 2)).body).toEqual({ queued: ['fail', 'fail'] });
      expect((await fault('reject', 1)).body).toEqual({ queued: ['fail', 'fail', 'reject'] });
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await ship(BODY, 'key-o')).status);
      expect(statuses).toEqual([500, 500, 400, 201, 200]);
      expect((await calls()).map((c) => c.result)).toEqual(['fail', 'fail', 'reject', 'created', 'replayed']);
    });

    it('count 0 queues nothing; calls refused before the fault point (no key) do not use one up', async () => {
      expect((await fault('fail', 0)).body).toEqual({ queued: [] });
      expect((await ship(BODY, 'key-z')).status).toBe(201);
      await fault('fail', 1);
      expect((await ship(BODY, null)).status).toBe(400);
      expect((await ship(BODY, 'key-z')).status).toBe(500);
      expect((await ship(BODY, 'key-z')).status).toBe(200);
    });

    it.each([
      ['an unknown mode', { mode: 'explode' }],
      ['no mode', {}],
      ['a fractional count', { mode: 'fail', count: 1.5 }],
      ['a string count', { mode: 'fail', count: '2' }],
    ])('%s answers 400 and queues nothing', async (_what, body) => {
      const res = await control('POST', '/_sim/faults', body);
      expect(res).toEqual({ status: 400, body: { error: 'mode must be fail, hang, drop or reject; count an integer' } });
      expect((await ship(BODY, 'key-x')).status).toBe(201);
    });
  });

  describe('control endpoints', () => {
    it('GET /_sim/calls records every call with its key and result, in order', async () => {
      await ship(BODY, 'key-c1');
      await ship(BODY, 'key-c1');
      await ship({ ...BODY, orderReference: 'other' }, 'key-c1');
      await ship(BODY, null);
      const recorded = await calls();
      expect(recorded.map(({ idempotencyKey, result }) => ({ idempotencyKey, result }))).toEqual([
        { idempotencyKey: 'key-c1', result: 'created' },
        { idempotencyKey: 'key-c1', result: 'replayed' },
        { idempotencyKey: 'key-c1', result: 'conflict' },
        { idempotencyKey: null, result: 'bad_request' },
      ]);
      for (const call of recorded) expect(Number.isNaN(Date.parse(call.at))).toBe(false);
      expect(sim.calls.length).toBe(4);
    });

    it('GET /_sim/shipments lists the shipments, one per key', async () => {
      const a = await answer(await ship(BODY, 'key-l1'));
      const b = await answer(await ship({ ...BODY, orderId: 'other-order' }, 'key-l2'));
      expect(await shipments()).toEqual([
        { id: a.id, idempotencyKey: 'key-l1', orderId: BODY.orderId, createdAt: expect.any(String) },
        { id: b.id, idempotencyKey: 'key-l2', orderId: 'other-order', createdAt: expect.any(String) },
      ]);
    });

    it('POST /_sim/reset forgets shipments, calls and queued faults', async () => {
      const first = await answer(await ship(BODY, 'key-rs'));
      await fault('fail', 3);
      expect(await control('POST', '/_sim/reset')).toEqual({ status: 200, body: { ok: true } });
      expect(await shipments()).toEqual([]);
      expect(await calls()).toEqual([]);
      const res = await ship(BODY, 'key-rs');
      expect(res.status).toBe(201);
      expect((await answer(res)).id).not.toBe(first.id);
    });

    it('an unknown control path answers 404', async () => {
      expect(await control('GET', '/_sim/nothing')).toEqual({ status: 404, body: { error: 'not_found' } });
    });
  });
});
