import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { CliExit, EXIT } from '../context';
import { PaymentRef, providerEvent, stripeEvent, thinTwin } from './events';
import { addressUrl, ObjectServer, parseListenAddress, serveObjects } from './objects-server';

/**
 * The Stripe API stand-in `simulate` and `conformance` serve with `--payload-style thin`: what a
 * thin endpoint (its apiBaseUrl pointed here) reads the objects of its notifications from.
 */

const KEY = 'sk_test_objectsServerKey_51NqZ8cQ2x7Lm';
const PAYMENT: PaymentRef = { resourceId: 'pi_0123456789abcdef01234567', orderId: 'ord-1', amount: '49.90', currency: 'EUR' };

describe('parseListenAddress (--serve-objects)', () => {
  it.each([
    ['127.0.0.1:8787', { host: '127.0.0.1', port: 8787 }],
    ['0.0.0.0:1', { host: '0.0.0.0', port: 1 }],
    ['localhost:65535', { host: 'localhost', port: 65535 }],
    ['[::1]:8787', { host: '::1', port: 8787 }],
  ])('%s', (value, address) => {
    expect(parseListenAddress(value)).toEqual(address);
    expect(addressUrl(address)).toBe(`http://${value}`);
  });

  it.each(['8787', '127.0.0.1', '127.0.0.1:', ':8787', '127.0.0.1:0', '127.0.0.1:65536', 'http://127.0.0.1:8787', '127.0.0.1:8787/v1', 'user@host:80', '::1:8787', 'host:80x'])(
    '%s is not one',
    (value) => expect(parseListenAddress(value)).toBeUndefined(),
  );
});

describe('thinTwin and stripeEvent (the notifications and the objects they name)', () => {
  it('the thin twin of a snapshot event: v1.<type>, a fresh evt_test_ id, related_object at its API path, the object served as the event carries it', () => {
    const snapshot = providerEvent('stripe', 'succeeded', PAYMENT);
    const twin = thinTwin(snapshot);
    expect(twin.eventId).toMatch(/^evt_test_[A-Za-z0-9]{24}$/);
    expect(twin.eventId).not.toBe(snapshot.eventId);
    expect(twin.type).toBe('v1.payment_intent.succeeded');
    expect(twin.body).toEqual({
      id: twin.eventId,
      object: 'v2.core.event',
      type: 'v1.payment_intent.succeeded',
      livemode: false,
      created: new Date((snapshot.body.created as number) * 1000).toISOString(),
      related_object: { id: PAYMENT.resourceId, type: 'payment_intent', url: `/v1/payment_intents/${PAYMENT.resourceId}` },
    });
    expect(twin.served).toEqual({ path: `/v1/payment_intents/${PAYMENT.resourceId}`, account: '', object: (snapshot.body.data as { object: unknown }).object });
    expect(twin.served!.object).toMatchObject({ amount: 4990, amount_received: 4990, status: 'succeeded', metadata: { order_id: 'ord-1' } });
  });

  it("a connected account: the snapshot's account is the notification's context and the object's account", () => {
    const twin = stripeEvent('thin', 'early', { ...PAYMENT, account: 'acct_1Connected' });
    expect(twin.body).toMatchObject({ context: 'acct_1Connected', type: 'v1.payment_intent.processing' });
    expect(twin.served).toMatchObject({ account: 'acct_1Connected', object: { status: 'processing', amount_received: 0 } });
  });

  it('a type the service does not act on (a customer): named at /v1/customers, nothing served', () => {
    const twin = stripeEvent('thin', 'ignored', PAYMENT);
    expect(twin.type).toBe('v1.customer.created');
    expect((twin.body.related_object as { url: string }).url).toMatch(/^\/v1\/customers\/cus_/);
    expect(twin.served).toBeUndefined();
  });

  it('snapshot: the event as it was', () => {
    const event = stripeEvent('snapshot', 'succeeded', PAYMENT);
    expect(event.body).toMatchObject({ object: 'event', type: 'payment_intent.succeeded' });
    expect(event.served).toBeUndefined();
  });
});

describe('ObjectServer', () => {
  let server: ObjectServer;
  afterEach(() => server?.close());

  const get = async (path: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${server.url}${path}`, { headers });
    return { status: res.status, body: (await res.json()) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
  };
  const served = (account = '') => stripeEvent('thin', 'succeeded', { ...PAYMENT, ...(account ? { account } : {}) }).served!;

  it('serves an object put in at its path; anything else 404 resource_missing; every request counted by path', async () => {
    server = await ObjectServer.start({ host: '127.0.0.1', port: 0 });
    const object = served();
    server.put(object);
    expect(await get(object.path, { authorization: 'Bearer anything' })).toEqual({ status: 200, body: object.object });
    const gone = await get('/v1/payment_intents/pi_never');
    expect(gone).toEqual({
      status: 404,
      body: { error: { code: 'resource_missing', doc_url: 'https://stripe.com/docs/error-codes/resource-missing', message: "No such payment_intent: 'pi_never'", param: 'id', type: 'invalid_request_error' } },
    });
    // The same id at another kind's route is not that object.
    expect((await get(`/v1/charges/${PAYMENT.resourceId}`)).body.error).toMatchObject({ code: 'resource_missing', message: `No such charge: '${PAYMENT.resourceId}'` });
    expect((await get('/v1/customers/cus_1')).body.error).toMatchObject({ code: 'resource_missing', message: expect.stringMatching(/^Unrecognized request URL \(GET: \/v1\/customers\/cus_1\)/) });
    expect(server.fetches(object.path)).toBe(1);
    expect([...server.byPath()]).toEqual([
      [object.path, 1],
      ['/v1/payment_intents/pi_never', 1],
      [`/v1/charges/${PAYMENT.resourceId}`, 1],
      ['/v1/customers/cus_1', 1],
    ]);
    expect(server.byStatus()).toEqual({ '200': 1, '404': 3 });
  });

  it("a connected account's object is found with its Stripe-Context (or Stripe-Account) only", async () => {
    server = await ObjectServer.start({ host: '127.0.0.1', port: 0 });
    const object = served('acct_1Connected');
    server.put(object);
    expect((await get(object.path)).status).toBe(404);
    expect((await get(object.path, { 'stripe-context': 'acct_1Other' })).status).toBe(404);
    expect((await get(object.path, { 'stripe-context': 'acct_1Connected' })).status).toBe(200);
    expect((await get(object.path, { 'stripe-account': 'acct_1Connected' })).status).toBe(200);
    expect(server.requests.map((r) => [r.account, r.status])).toEqual([
      ['', 404],
      ['acct_1Other', 404],
      ['acct_1Connected', 200],
      ['acct_1Connected', 200],
    ]);
  });

  it('with a key: a missing or other bearer answers 401 with a body that quotes no key; the key answers', async () => {
    server = await ObjectServer.start({ host: '127.0.0.1', port: 0 }, KEY);
    const object = served();
    server.put(object);
    for (const headers of [{}, { authorization: 'Bearer sk_test_other' }, { authorization: KEY }] as Array<Record<string, string>>) {
      const answer = await get(object.path, headers);
      expect(answer).toEqual({ status: 401, body: { error: { type: 'invalid_request_error', message: 'Invalid API Key provided: not the key of --stripe-api-key-file' } } });
      expect(JSON.stringify(answer)).not.toContain('sk_test');
    }
    expect((await get(object.path, { authorization: `Bearer ${KEY}` })).status).toBe(200);
    expect(server.byStatus()).toEqual({ '200': 1, '401': 3 });
  });

  it("put replaces the object's state, unless the state held is of a later rank (a notification sent out of order)", async () => {
    server = await ObjectServer.start({ host: '127.0.0.1', port: 0 });
    const processing = stripeEvent('thin', 'early', PAYMENT).served!;
    const succeeded = served();
    server.put(succeeded, 1);
    server.put(processing, 0);
    expect((await get(succeeded.path)).body.status).toBe('succeeded');
    // Without ranks (the conformance checks): the last put is the state.
    server.put(processing);
    server.put({ ...succeeded, object: { ...succeeded.object, amount_received: 499 } }, 1);
    expect((await get(succeeded.path)).body).toMatchObject({ status: 'succeeded', amount_received: 499 });
  });

  it('serveObjects: an address in use ends the command with exit 2 naming it', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const err = await serveObjects('simulate', { host: '127.0.0.1', port }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(CliExit);
      expect({ code: (err as CliExit).code, message: (err as CliExit).message }).toEqual({
        code: EXIT.couldNotRun,
        message: `simulate: --serve-objects 127.0.0.1:${port}: cannot listen there (EADDRINUSE, the port is in use)`,
      });
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
