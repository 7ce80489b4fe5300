import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { ShipmentRequest } from './carrier';
import { HttpCarrierAdapter } from './http-carrier';

/**
 * The HTTP carrier (docs/carriers.md#the-carrier-contract) against a real local HTTP server (the
 * "carrier"), so the request on the wire and every class of answer are observed as a carrier would
 * send them.
 */

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

const REQUEST: ShipmentRequest = {
  orderId: '01900000-0000-7000-8000-0000000000aa',
  orderReference: 'ORD-2026-0042',
  shipTo: { name: 'Ada Lovelace', line1: '12 Analytical Row', city: 'London', postalCode: 'N1 9GU', country: 'GB' },
  items: [
    { sku: 'SKU-1', quantity: 2 },
    { sku: 'SKU-2', quantity: 1 },
  ],
};
const KEY = '01900000-0000-7000-8000-0000000000ff';

describe('HttpCarrierAdapter (docs/carriers.md#the-carrier-contract) against a local HTTP carrier', () => {
  let server: Server;
  let base: string;
  const sockets = new Set<Socket>();
  let seen: Seen[] = [];
  let handler: Handler;

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        handler(req, res, body);
      });
    });
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  beforeEach(() => {
    seen = [];
    handler = (_req, res) => answer(res, 201, { id: 'shp_default' });
  });

  function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(text);
  }

  const carrier = (extra: { apiKey?: string; timeoutMs?: number; path?: string } = {}, defaultTimeoutMs = 5_000) =>
    new HttpCarrierAdapter(
      { name: 'acme', url: `${base}${extra.path ?? ''}`, apiKey: extra.apiKey, timeoutMs: extra.timeoutMs },
      defaultTimeoutMs,
    );

  describe('the request', () => {
    it('is POST {url}/shipments with JSON, the idempotency key, the exact body, and no authorization without an apiKey', async () => {
      const adapter = carrier();
      expect(adapter.name).toBe('acme');
      await adapter.ship(REQUEST, KEY);
      expect(seen.length).toBe(1);
      const [call] = seen;
      expect(call.method).toBe('POST');
      expect(call.url).toBe('/shipments');
      expect(call.headers['content-type']).toBe('application/json');
      expect(call.headers['idempotency-key']).toBe(KEY);
      expect(call.headers.authorization).toBeUndefined();
      expect(call.body).toBe(JSON.stringify(REQUEST));
      expect(JSON.parse(call.body)).toEqual({
        orderId: '01900000-0000-7000-8000-0000000000aa',
        orderReference: 'ORD-2026-0042',
        shipTo: { name: 'Ada Lovelace', line1: '12 Analytical Row', city: 'London', postalCode: 'N1 9GU', country: 'GB' },
        items: [
          { sku: 'SKU-1', quantity: 2 },
          { sku: 'SKU-2', quantity: 1 },
        ],
      });
    });

    it('carries "authorization: Bearer <apiKey>" when an apiKey is configured', async () => {
      await carrier({ apiKey: 'k-123' }).ship(REQUEST, KEY);
      expect(seen.length).toBe(1);
      expect(seen[0].headers.authorization).toBe('Bearer k-123');
    });

    it('appends /shipments to a base URL with a path', async () => {
      await carrier({ path: '/v2' }).ship(REQUEST, KEY);
      expect(seen.map((s) => s.url)).toEqual(['/v2/shipments']);
    });

    it('sends a null orderReference as null, and the same key on a second call', async () => {
      const adapter = carrier();
      await adapter.ship({ ...REQUEST, orderReference: null }, KEY);
      await adapter.ship({ ...REQUEST, orderReference: null }, KEY);
      expect(seen.length).toBe(2);
      expect(JSON.parse(seen[0].body).orderReference).toBeNull();
      expect(seen.map((s) => s.headers['idempotency-key'])).toEqual([KEY, KEY]);
    });
  });

  describe('a shipment id', () => {
    it.each([200, 201])('%i with {id} is a success with that id', async (status) => {
      handler = (_req, res) => answer(res, status, { id: `shp_${status}`, orderId: REQUEST.orderId, status: 'created' });
      await expect(carrier().ship(REQUEST, KEY)).resolves.toEqual({ ok: true, shipmentId: `shp_${status}`, status: String(status) });
    });

    it.each([
      [200, '{}'],
      [201, '{"id":""}'],
      [200, '{"id":42}'],
      [201, 'created'],
      [200, ''],
    ])('%i with body %j (no usable id) is a retryable failure', async (status, body) => {
      handler = (_req, res) => answer(res, status, body);
      await expect(carrier().ship(REQUEST, KEY)).resolves.toEqual({
        ok: false,
        retryable: true,
        reason: `carrier answered ${status} without a shipment id`,
        status: String(status),
        mayHaveShipped: true,
      });
    });
  });

  describe('another 2xx', () => {
    // A 2xx with a shipment id is a shipment; a 2xx without one is a retryable failure (the carrier
    // may have created the shipment: the same key finds it later). Never a final failure.
    it('202 with an id is a shipment', async () => {
      handler = (_req, res) => answer(res, 202, '{"id":"shp_accepted"}');
      await expect(carrier().ship(REQUEST, KEY)).resolves.toEqual({ ok: true, shipmentId: 'shp_accepted', status: '202' });
    });

    it('204 without a body is a retryable failure, not a final one', async () => {
      handler = (_req, res) => answer(res, 204, '');
      await expect(carrier().ship(REQUEST, KEY)).resolves.toEqual({
        ok: false,
        retryable: true,
        reason: 'carrier answered 204 without a shipment id',
        status: '204',
        mayHaveShipped: true,
      });
    });

    it('a redirect is reported as retryable, and not followed', async () => {
      let calls = 0;
      handler = (_req, res) => {
        calls++;
        res.writeHead(302, { location: '/elsewhere' });
        res.end();
      };
      await expect(carrier().ship(REQUEST, KEY)).resolves.toEqual({
        ok: false,
        retryable: true,
        reason: 'carrier answered 302 (a redirect; check its url)',
        status: '302',
      });
      expect(calls).toBe(1);
    });
  });

  describe('retryable answers', () => {
    it.each([500, 502, 503, 408, 425, 429])('%i is retryable, reason "carrier answered <status>"', async (status) => {
      handler = (_req, res) => answer(res, status, 'oops');
      const result = await carrier().ship(REQUEST, KEY);
      expect(result).toEqual({ ok: false, retryable: true, reason: `carrier answered ${status}`, status: String(status) });
      expect(result).not.toHaveProperty('retryAfterMs', expect.any(Number));
    });

    it.each([
      [503, { error: 'maintenance' }, 'carrier answered 503 maintenance'],
      [429, { code: 'rate_limited' }, 'carrier answered 429 rate_limited'],
      [500, { error: 'db.down-1' }, 'carrier answered 500 db.down-1'],
    ])('%i with %j names the carrier error code', async (status, body, reason) => {
      handler = (_req, res) => answer(res, status, body);
      await expect(carrier().ship(REQUEST, KEY)).resolves.toEqual({ ok: false, retryable: true, reason, status: String(status) });
    });

    it('Retry-After in seconds becomes retryAfterMs', async () => {
      handler = (_req, res) => answer(res, 503, { error: 'busy' }, { 'retry-after': '3' });
      await expect(carrier().ship(REQUEST, KEY)).resolves.toEqual({
        ok: false,
        retryable: true,
        reason: 'carrier answered 503 busy',
        retryAfterMs: 3000,
        status: '503',
      });
    });

    it('Retry-After as an HTTP date becomes the time until that date', async () => {
      const at = new Date(Date.now() + 10_000).toUTCString(); // whole seconds: 9–10 s from now
      handler = (_req, res) => answer(res, 429, '', { 'retry-after': at });
      const before = Date.now();
      const result = await carrier().ship(REQUEST, KEY);
      const after = Date.now();
      expect(result).toMatchObject({ ok: false, retryable: true, reason: 'carrier answered 429', status: '429' });
      const ms = (result as { retryAfterMs?: number }).retryAfterMs as number;
      expect(typeof ms).toBe('number');
      expect(ms).toBeLessThanOrEqual(Date.parse(at) - before);
      expect(ms).toBeGreaterThanOrEqual(Date.parse(at) - after);
      expect(ms).toBeGreaterThan(8_000);
      expect(ms).toBeLessThanOrEqual(10_000);
    });

    it('Retry-After as a past HTTP date is 0; an unreadable one is ignored', async () => {
      handler = (_req, res) => answer(res, 503, '', { 'retry-after': new Date(Date.now() - 60_000).toUTCString() });
      await expect(carrier().ship(REQUEST, KEY)).resolves.toEqual({
        ok: false,
        retryable: true,
        reason: 'carrier answered 503',
        retryAfterMs: 0,
        status: '503',
      });
      handler = (_req, res) => answer(res, 503, '', { 'retry-after': 'soon' });
      const result = await carrier().ship(REQUEST, KEY);
      expect(result).toEqual({ ok: false, retryable: true, reason: 'carrier answered 503', status: '503' });
      expect((result as { retryAfterMs?: number }).retryAfterMs).toBeUndefined();
    });
  });

  describe('final answers', () => {
    it.each([400, 401, 404, 409, 422])('%i is not retryable, reason "carrier answered <status>"', async (status) => {
      handler = (_req, res) => answer(res, status, '', { 'retry-after': '3' });
      const result = await carrier().ship(REQUEST, KEY);
      expect(result).toEqual({ ok: false, retryable: false, reason: `carrier answered ${status}`, status: String(status) });
      expect(result).not.toHaveProperty('retryAfterMs');
    });

    it('{"error":"invalid_address"} gives the reason "carrier answered 400 invalid_address"', async () => {
      handler = (_req, res) => answer(res, 400, { error: 'invalid_address' });
      await expect(carrier().ship(REQUEST, KEY)).resolves.toEqual({
        ok: false,
        retryable: false,
        reason: 'carrier answered 400 invalid_address',
        status: '400',
      });
    });

    it.each([
      ['a message echoing the address', { message: 'bad address 12 Analytical Row' }],
      ['an error field echoing the address', { error: 'bad address 12 Analytical Row' }],
      ['a code field echoing the address', { code: '12 Analytical Row, N1 9GU' }],
      ['a plain-text body echoing the address', 'bad address 12 Analytical Row'],
    ])('%s never reaches the reason', async (_what, body) => {
      handler = (_req, res) => answer(res, 400, body);
      const result = await carrier().ship(REQUEST, KEY);
      expect(result).toEqual({ ok: false, retryable: false, reason: 'carrier answered 400', status: '400' });
      expect(JSON.stringify(result)).not.toContain('Analytical');
    });

    it('an overlong error code (more than 64 characters) is left out', async () => {
      handler = (_req, res) => answer(res, 422, { error: 'x'.repeat(65) });
      await expect(carrier().ship(REQUEST, KEY)).resolves.toEqual({
        ok: false,
        retryable: false,
        reason: 'carrier answered 422',
        status: '422',
      });
    });
  });

  describe('no answer', () => {
    it('a carrier that never answers is a retryable "no answer within <timeoutMs> ms"', async () => {
      handler = () => undefined; // keeps the request open forever
      const started = Date.now();
      const result = await carrier({ timeoutMs: 100 }).ship(REQUEST, KEY);
      expect(result).toEqual({ ok: false, retryable: true, reason: 'no answer within 100 ms', status: 'timeout', mayHaveShipped: true });
      expect(Date.now() - started).toBeGreaterThanOrEqual(90);
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(seen.length).toBe(1);
    });

    it('the default timeout applies when the carrier has none of its own', async () => {
      handler = () => undefined;
      await expect(carrier({}, 150).ship(REQUEST, KEY)).resolves.toEqual({
        ok: false,
        retryable: true,
        reason: 'no answer within 150 ms',
        status: 'timeout',
        mayHaveShipped: true,
      });
    });

    it("a carrier's own timeoutMs overrides the default", async () => {
      handler = () => undefined;
      const started = Date.now();
      await expect(carrier({ timeoutMs: 100 }, 60_000).ship(REQUEST, KEY)).resolves.toEqual({
        ok: false,
        retryable: true,
        reason: 'no answer within 100 ms',
        status: 'timeout',
        mayHaveShipped: true,
      });
      expect(Date.now() - started).toBeLessThan(3_000);
    });

    it('a refused connection is a retryable "network error: ECONNREFUSED"', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise((resolve) => closed.close(resolve));
      const adapter = new HttpCarrierAdapter({ name: 'gone', url: `http://127.0.0.1:${port}` }, 2_000);
      await expect(adapter.ship(REQUEST, KEY)).resolves.toEqual({
        ok: false,
        retryable: true,
        reason: 'network error: ECONNREFUSED',
        status: 'network',
        mayHaveShipped: true,
      });
    });
  });
});
