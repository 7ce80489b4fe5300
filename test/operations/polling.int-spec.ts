import type { EndpointDefinition } from '../../src/config/options';
import type { CarrierAdapter, ShipmentRequest, ShipmentResult } from '../../src/fulfillment/carriers/carrier';
import { POLLS_PER_SECOND, PollingService } from '../../src/operations/polling/polling.service';
import { signedHeaders } from '../../src/testing/sign';
import { AUTH, createTestApp, deleteQueueKeys, eventually, PLATFORMS, TestApp } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';
import { mostInOneSecond, ProviderApiStub } from '../support/provider-api-stub';
import { addMollieApi, mollieHint } from '../support/provider-stubs/mollie';
import { acmePayApi, acmePayProvider } from '../support/acme-pay-provider';
import { addStripeRoutes, STRIPE_STUB_KEY } from '../support/provider-stubs/stripe';

/**
 * Polling (docs/operations.md#when-webhooks-stop), end to end on the real PostgreSQL and Redis with
 * the BullMQ workers, on both HTTP platforms, the providers' APIs local stubs reached through their
 * official clients: a paid order whose webhook never came is paid and fulfilled by the poll, once,
 * and the webhook that comes late is `already_applied`; the schedule (the age, the doubling waits,
 * at most an hour, for 7 days), an operator's poll, the metric, a `429` honoured, and the rate bound
 * under 1,000 open payments across two processes.
 */
const STRIPE_SECRET = 'whsec_polling_test_secret_0123456789';
const MOLLIE_PROFILE = 'pfl_StubProf01';
const AFTER = 30;

/** Ships at once; counts each order's shipments. */
class Carrier implements CarrierAdapter {
  readonly name = 'default';
  readonly shipments = new Map<string, number>();
  async ship(request: ShipmentRequest): Promise<ShipmentResult> {
    this.shipments.set(request.orderId, (this.shipments.get(request.orderId) ?? 0) + 1);
    return { ok: true, shipmentId: `shp_${request.orderId}` };
  }
}

/** Moves the app's clock `seconds` on (it keeps running from there). */
function advance(t: TestApp, seconds: number): void {
  t.clock.setSeconds(t.clock.now() / 1000 + seconds);
}

function stripeEndpoint(id: string, account: string, baseUrl: string, extra: Partial<EndpointDefinition> = {}): EndpointDefinition {
  return { id, provider: 'stripe', secrets: [STRIPE_SECRET], merchantAccountId: account, apiKey: STRIPE_STUB_KEY, apiBaseUrl: baseUrl, ...extra };
}

describe.each(PLATFORMS)('%s: polling a payment whose webhook never came (§4.1)', (platform) => {
  const stripeApi = new ProviderApiStub();
  const stripe = addStripeRoutes(stripeApi);
  const mollieApi = new ProviderApiStub({ tls: true });
  const mollie = addMollieApi(mollieApi);
  const carrier = new Carrier();
  // A host's own provider with a status read (test/support/acme-pay-provider.ts).
  const acmeCharges = new Map<string, Record<string, unknown>>();
  const acmeApi = acmePayApi(new ProviderApiStub(), { charges: acmeCharges });
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  /** The stub's reads of one PaymentIntent. */
  const readsOf = (stub: ProviderApiStub, id: string) => stub.requests.filter((r) => r.method === 'GET' && r.path.endsWith(`/${id}`));
  const pollRow = async (paymentId: string) =>
    (
      await t.dataSource.query(
        `SELECT polls, extract(epoch FROM next_at - last_polled_at)::int AS wait, last_result AS "lastResult", requested_at AS "requestedAt"
           FROM payment_polls WHERE payment_id = $1`,
        [paymentId],
      )
    )[0] as { polls: number; wait: number; lastResult: string | null; requestedAt: Date | null } | undefined;
  const pollRows = (resourceId: string) =>
    t.dataSource.query(`SELECT event_id AS "eventId", event_type AS "eventType", source, status, outcome FROM webhook_inbox WHERE resource_id = $1 AND source = 'poll' ORDER BY received_at`, [
      resourceId,
    ]) as Promise<Array<{ eventId: string; eventType: string; source: string; status: string; outcome: string }>>;

  async function stripeWebhook(endpointId: string, type: string, paymentIntentId: string, orderId: string, amount = 4990) {
    const event = bodies.stripe(type, paymentIntentId, { orderId, amount });
    const text = JSON.stringify(event.body);
    const res = await d.http().post(`/webhooks/${endpointId}`).set(signedHeaders('stripe', STRIPE_SECRET, text)).send(text);
    return { res, eventId: event.eventId };
  }

  beforeAll(async () => {
    await Promise.all([stripeApi.start(), mollieApi.start(), acmeApi.start()]);
    t = await createTestApp(
      {
        providers: [acmePayProvider],
        endpoints: [
          { id: 'acmepay-poll', provider: 'acmepay', secrets: ['acme_sk_polling_0123456789'], merchantAccountId: 'm_poll', apiKey: 'ak_poll_secret', apiBaseUrl: acmeApi.baseUrl, pollAfterSeconds: AFTER },
          stripeEndpoint('stripe-poll', 'acct_poll', stripeApi.baseUrl, { pollAfterSeconds: AFTER }),
          stripeEndpoint('stripe-schedule', 'acct_schedule', stripeApi.baseUrl, { pollAfterSeconds: AFTER }),
          stripeEndpoint('stripe-limited', 'acct_limited', stripeApi.baseUrl, { pollAfterSeconds: AFTER }),
          // A thin event destination, no schedule: polled when Stripe says its events may be lost.
          stripeEndpoint('stripe-thin', 'acct_thin', stripeApi.baseUrl, { payloadStyle: 'thin' }),
          // Credentials, no schedule: polled when an operator asks.
          stripeEndpoint('stripe-manual', 'acct_manual', stripeApi.baseUrl),
          { id: 'stripe-nokey', provider: 'stripe', secrets: [STRIPE_SECRET], merchantAccountId: 'acct_nokey' },
          { id: 'mollie-poll', provider: 'mollie', secrets: [], merchantAccountId: MOLLIE_PROFILE, apiKey: mollie.apiKey, apiBaseUrl: mollieApi.baseUrl, pollAfterSeconds: AFTER },
          { id: 'paymos-a', provider: 'paymos', secrets: ['paymos-secret-old'], merchantAccountId: 'acc_1' },
        ],
        runWorkers: true,
        carriers: [],
        carrierAdapters: [carrier],
        tuning: { pollSweepMs: 100, inboxBackoffMs: 50, sweepIntervalMs: 200, sweepAfterMs: 100 },
      },
      { platform },
    );
    d = driver(t);
  });
  afterEach(() => t.clock.reset());
  afterAll(async () => {
    await t?.close();
    await Promise.all([stripeApi.stop(), mollieApi.stop(), acmeApi.stop()]);
  });

  it("a host's own provider is polled through its adapter's readPayment", async () => {
    const order = await d.createOrder('15.00', 'EUR');
    const chargeId = uniqueId('ch');
    acmeCharges.set(chargeId, { id: chargeId, status: 'paid', amount: '15.00', currency: 'EUR', order_id: order.id });
    await d.registerPayment(order.id, 'acmepay', chargeId, 'm_poll');
    advance(t, AFTER + 1);
    await eventually(async () => (await d.getOrder(order.id)).fulfillment?.status === 'dispatched', 15_000, 'the order fulfilled');
    expect(await pollRows(chargeId)).toEqual([{ eventId: `poll:${chargeId}:paid:0`, eventType: 'charge.paid', source: 'poll', status: 'processed', outcome: 'applied' }]);
    expect(carrier.shipments.get(order.id)).toBe(1);
  });

  it('Stripe: a paid order whose webhook was dropped is paid and fulfilled by the poll, once; the late webhook is already_applied', async () => {
    const order = await d.createOrder('49.90', 'EUR');
    const pi = stripe.addPayment({ status: 'succeeded', amount: 4990, orderId: order.id });
    const payment = await d.registerPayment(order.id, 'stripe', pi.id, 'acct_poll');

    // Younger than pollAfterSeconds: a run asks nothing.
    await t.get(PollingService).run('stripe-poll');
    expect(readsOf(stripeApi, pi.id)).toHaveLength(0);

    advance(t, AFTER + 1);
    await eventually(async () => (await d.getOrder(order.id)).fulfillment?.status === 'dispatched', 15_000, 'the order fulfilled');
    expect(readsOf(stripeApi, pi.id)).toHaveLength(1);
    expect(decodeURIComponent(readsOf(stripeApi, pi.id)[0].url)).toContain('expand[0]=latest_charge');
    expect(await pollRows(pi.id)).toEqual([
      { eventId: `poll:${pi.id}:succeeded:0`, eventType: 'payment_intent.succeeded', source: 'poll', status: 'processed', outcome: 'applied' },
    ]);
    const paid = await d.getOrder(order.id);
    expect(paid.status).toBe('fulfilled');
    expect(paid.payments).toEqual([expect.objectContaining({ id: payment.id, status: 'succeeded' })]);
    expect(carrier.shipments.get(order.id)).toBe(1);
    // Settled: no longer polled.
    advance(t, 3_600);
    await t.get(PollingService).run('stripe-poll');
    expect(readsOf(stripeApi, pi.id)).toHaveLength(1);
    t.clock.reset();

    const late = await stripeWebhook('stripe-poll', 'payment_intent.succeeded', pi.id, order.id);
    expect(late.res.status).toBe(200);
    expect(late.res.body).toEqual({ status: 'accepted', eventId: late.eventId });
    expect(await d.processed(late.eventId)).toMatchObject({ status: 'processed', outcome: 'already_applied' });
    expect(carrier.shipments.get(order.id)).toBe(1);
    expect(await d.count(`SELECT 1 FROM outbox_message WHERE payload->>'orderId' = $1 AND type = 'fulfillment.dispatch'`, [order.id])).toBe(1);
  });

  it('Mollie: the same, through the payment Mollie answers; the late hint is already_applied', async () => {
    const order = await d.createOrder('49.90', 'EUR');
    const id = mollie.addPayment({ status: 'paid', orderId: order.id });
    await d.registerPayment(order.id, 'mollie', id, MOLLIE_PROFILE);
    advance(t, AFTER + 1);
    await eventually(async () => (await d.getOrder(order.id)).fulfillment?.status === 'dispatched', 15_000, 'the order fulfilled');
    expect(await pollRows(id)).toEqual([{ eventId: `poll:${id}:paid:0.00`, eventType: 'payment.paid', source: 'poll', status: 'processed', outcome: 'applied' }]);
    t.clock.reset();

    const late = await d.http().post('/webhooks/mollie-poll').set('content-type', 'application/x-www-form-urlencoded').send(mollieHint(id));
    expect(late.status).toBe(200);
    const [row] = await eventually(
      async () => {
        const rows = await t.dataSource.query(`SELECT status, outcome FROM webhook_inbox WHERE resource_id = $1 AND source = 'webhook' AND status <> 'received'`, [id]);
        return rows.length > 0 ? rows : undefined;
      },
      15_000,
      'the late hint processed',
    );
    expect(row).toEqual({ status: 'processed', outcome: 'already_applied' });
    expect(carrier.shipments.get(order.id)).toBe(1);
  });

  it('asks at the age, then after doubling waits of at most an hour, for 7 days; a status that says nothing records nothing', async () => {
    const order = await d.createOrder('12.00', 'EUR');
    // Waiting for a payment method: nothing to record, the schedule goes on.
    const pi = stripe.addPayment({ status: 'requires_payment_method', amount: 1200, orderId: order.id });
    const payment = await d.registerPayment(order.id, 'stripe', pi.id, 'acct_schedule');
    const registeredAt = t.clock.now() / 1000;

    const waits: number[] = [];
    for (let poll = 1; poll <= 9; poll++) {
      // Just past the time the schedule set (the age for the first).
      const row = await pollRow(payment.id);
      const dueAt = row === undefined ? registeredAt + AFTER : t.clock.now() / 1000 + row.wait;
      t.clock.setSeconds(dueAt + 1);
      const after = (await eventually(async () => {
        const r = await pollRow(payment.id);
        return r && r.polls === poll && r.lastResult !== null ? r : undefined;
      }, 10_000, `poll ${poll}`))!;
      waits.push(after.wait);
      expect(after.lastResult).toBe('unchanged');
    }
    expect(waits).toEqual([30, 60, 120, 240, 480, 960, 1920, 3600, 3600]);
    expect(readsOf(stripeApi, pi.id)).toHaveLength(9);
    expect(await pollRows(pi.id)).toEqual([]);

    // 7 days after its last change it is no longer asked about.
    t.clock.setSeconds(registeredAt + 7 * 86_400 + 1);
    await t.get(PollingService).run('stripe-schedule');
    expect(readsOf(stripeApi, pi.id)).toHaveLength(9);

    // A payment that moves starts a new schedule: processing now, recorded as a fact.
    t.clock.reset();
    pi.status = 'processing';
    await request202(payment.id);
    await eventually(async () => (await pollRows(pi.id))[0]?.status === 'processed', 10_000, 'the processing fact');
    expect(await pollRows(pi.id)).toEqual([
      { eventId: `poll:${pi.id}:processing:0`, eventType: 'payment_intent.processing', source: 'poll', status: 'processed', outcome: 'applied' },
    ]);
    expect((await d.getOrder(order.id)).payments[0].status).toBe('processing');
  });

  async function request202(paymentId: string) {
    const res = await d.http().post(`/admin/payments/${paymentId}/poll`).set(AUTH);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ status: 'queued' });
  }

  it('POST /admin/payments/{id}/poll asks now, whatever the status or the schedule; 404, 422 and 401 as the contract says', async () => {
    const order = await d.createOrder('20.00', 'EUR');
    const pi = stripe.addPayment({ status: 'succeeded', amount: 2000, orderId: order.id });
    const payment = await d.registerPayment(order.id, 'stripe', pi.id, 'acct_manual');
    // Paid by its webhook first: the poll then finds the fact already applied.
    const webhook = await stripeWebhook('stripe-manual', 'payment_intent.succeeded', pi.id, order.id, 2000);
    expect(await d.processed(webhook.eventId)).toMatchObject({ outcome: 'applied' });

    await request202(payment.id);
    await eventually(async () => (await pollRows(pi.id))[0]?.status === 'processed', 10_000, 'the poll recorded');
    expect(await pollRows(pi.id)).toEqual([
      { eventId: `poll:${pi.id}:succeeded:0`, eventType: 'payment_intent.succeeded', source: 'poll', status: 'processed', outcome: 'already_applied' },
    ]);
    expect(readsOf(stripeApi, pi.id)).toHaveLength(1);
    // Asked again: the same fact, recorded once.
    await request202(payment.id);
    await eventually(async () => readsOf(stripeApi, pi.id).length === 2, 10_000, 'the second poll');
    await eventually(async () => (await pollRow(payment.id))?.requestedAt === null, 10_000, 'the request taken');
    expect(await pollRows(pi.id)).toHaveLength(1);
    expect(carrier.shipments.get(order.id)).toBe(1);

    const unknown = await d.http().post('/admin/payments/0193a000-0000-7000-8000-000000000000/poll').set(AUTH);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: 'not_found' });
    // An id that is no payment id is no payment, as on every route of a payment.
    const notUuid = await d.http().post('/admin/payments/pi_123/poll').set(AUTH);
    expect(notUuid.status).toBe(404);
    expect(notUuid.body).toMatchObject({ error: 'not_found' });
    const noAuth = await d.http().post(`/admin/payments/${payment.id}/poll`);
    expect(noAuth.status).toBe(401);

    // No status read (Paymos), and no API credentials: 422 not_supported, nothing asked.
    const paymosOrder = await d.createOrder('5.00', 'EUR');
    const paymos = await d.registerPayment(paymosOrder.id, 'paymos', uniqueId('inv'), 'acc_1');
    const noReader = await d.http().post(`/admin/payments/${paymos.id}/poll`).set(AUTH);
    expect(noReader.status).toBe(422);
    expect(noReader.body).toEqual({ error: 'not_supported', detail: expect.stringContaining('no paymos endpoint of merchant account "acc_1" can read its payments') });
    const keyless = await d.createOrder('5.00', 'EUR');
    const keylessPayment = await d.registerPayment(keyless.id, 'stripe', uniqueId('pi'), 'acct_nokey');
    const noKey = await d.http().post(`/admin/payments/${keylessPayment.id}/poll`).set(AUTH);
    expect(noKey.status).toBe(422);
    expect(noKey.body.error).toBe('not_supported');
    expect(await d.count(`SELECT 1 FROM payment_polls WHERE payment_id IN ($1, $2)`, [paymos.id, keylessPayment.id])).toBe(0);
  });

  it('a poll waiting on the provider never delays the receive path', async () => {
    const order = await d.createOrder('9.00', 'EUR');
    const pi = stripe.addPayment({ status: 'succeeded', amount: 900, orderId: order.id });
    await d.registerPayment(order.id, 'stripe', pi.id, 'acct_poll');
    const held = stripeApi.holdNext('before', (r) => r.method === 'GET' && r.path.endsWith(pi.id));
    advance(t, AFTER + 1);
    await held.arrived;
    // The provider has not answered the poll: a webhook is recorded and answered meanwhile.
    const other = await d.createOrder('49.90', 'EUR');
    const otherPi = stripe.addPayment({ status: 'succeeded', amount: 4990, orderId: other.id });
    await d.registerPayment(other.id, 'stripe', otherPi.id, 'acct_poll');
    t.clock.reset();
    const started = Date.now();
    const webhook = await stripeWebhook('stripe-poll', 'payment_intent.succeeded', otherPi.id, other.id);
    expect(webhook.res.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await d.processed(webhook.eventId)).toMatchObject({ status: 'processed', outcome: 'applied' });
    held.release();
    await eventually(async () => (await d.getOrder(order.id)).fulfillment?.status === 'dispatched', 15_000, 'the polled order fulfilled');
  });

  it("Stripe's event_generation_failure alert makes every open payment of its endpoint due at once, whatever its age", async () => {
    const paidOrder = await d.createOrder('11.00', 'EUR');
    const paid = stripe.addPayment({ status: 'succeeded', amount: 1100, orderId: paidOrder.id });
    await d.registerPayment(paidOrder.id, 'stripe', paid.id, 'acct_thin');
    const waitingOrder = await d.createOrder('12.00', 'EUR');
    const waiting = stripe.addPayment({ status: 'requires_payment_method', amount: 1200, orderId: waitingOrder.id });
    await d.registerPayment(waitingOrder.id, 'stripe', waiting.id, 'acct_thin');
    const id = uniqueId('evt_test');
    const text = JSON.stringify({ id, object: 'v2.core.event', type: 'v2.core.health.event_generation_failure.resolved', livemode: false, created: new Date().toISOString() });
    const res = await d.http().post('/webhooks/stripe-thin').set(signedHeaders('stripe', STRIPE_SECRET, text)).send(text);
    expect(res.body).toEqual({ status: 'accepted', eventId: id });
    await eventually(async () => (await d.getOrder(paidOrder.id)).fulfillment?.status === 'dispatched', 15_000, 'the paid order fulfilled');
    await eventually(async () => readsOf(stripeApi, waiting.id).length === 1, 10_000, 'the waiting payment asked about');
    expect(readsOf(stripeApi, paid.id)).toHaveLength(1);
    expect(await pollRows(paid.id)).toEqual([
      { eventId: `poll:${paid.id}:succeeded:0`, eventType: 'payment_intent.succeeded', source: 'poll', status: 'processed', outcome: 'applied' },
    ]);
    expect(carrier.shipments.get(paidOrder.id)).toBe(1);
  });

  it('retention forgets the schedules of settled payments and keeps those of open ones', async () => {
    const settled = `SELECT 1 FROM payment_polls pp JOIN payments p ON p.id = pp.payment_id WHERE p.status NOT IN ('pending', 'processing', 'authorized') AND pp.requested_at IS NULL`;
    const open = `SELECT 1 FROM payment_polls pp JOIN payments p ON p.id = pp.payment_id WHERE p.status IN ('pending', 'processing', 'authorized')`;
    const openBefore = await d.count(open);
    expect(await d.count(settled)).toBeGreaterThan(0);
    expect(openBefore).toBeGreaterThan(0);
    expect((await d.http().post('/admin/retention/purge').set(AUTH)).status).toBe(200);
    expect(await d.count(settled)).toBe(0);
    expect(await d.count(open)).toBe(openBefore);
  });

  it("honours a 429's Retry-After: the endpoint asks nothing more until then; the metric counts each result", async () => {
    const first = stripe.addPayment({ status: 'requires_payment_method', amount: 700 });
    const second = stripe.addPayment({ status: 'requires_payment_method', amount: 700 });
    for (const pi of [first, second]) {
      const order = await d.createOrder('7.00', 'EUR');
      await d.registerPayment(order.id, 'stripe', pi.id, 'acct_limited');
    }
    stripeApi.failNext({ status: 429, retryAfter: '2' }, (r) => r.method === 'GET' && (r.path.endsWith(first.id) || r.path.endsWith(second.id)));
    advance(t, AFTER + 1);
    const reads = () => stripeApi.requests.filter((r) => r.method === 'GET' && (r.path.endsWith(first.id) || r.path.endsWith(second.id)));
    await eventually(async () => reads().length === 2, 15_000, 'both asked');
    const [refused, next] = reads();
    expect(refused.status).toBe(429);
    expect(next.status).toBe(200);
    expect(next.at - refused.at).toBeGreaterThanOrEqual(2_000);

    const metrics = await d.http().get('/metrics').set(AUTH);
    const value = (result: string) => Number(new RegExp(`^pw_payments_polled_total\\{provider="stripe",result="${result}"\\} (\\d+)$`, 'm').exec(metrics.text)?.[1] ?? 0);
    expect(value('error')).toBeGreaterThanOrEqual(1);
    expect(value('unchanged')).toBeGreaterThanOrEqual(1);
    expect(value('changed')).toBeGreaterThanOrEqual(1);
  });
});

describe.each(PLATFORMS)('%s: polling at most 10 calls a second per endpoint, under 1,000 open payments, across two processes', (platform) => {
  const stripeApi = new ProviderApiStub();
  const stripe = addStripeRoutes(stripeApi);
  const apps: TestApp[] = [];
  const OPEN = 1_000;

  beforeAll(async () => {
    await stripeApi.start();
    const options = {
      endpoints: [stripeEndpoint('stripe-busy', `acct_busy_${platform}`, stripeApi.baseUrl, { pollAfterSeconds: AFTER })],
      runWorkers: true,
      tuning: { pollSweepMs: 100 },
    };
    apps.push(await createTestApp(options, { platform }));
    apps.push(await createTestApp({ ...options, queuePrefix: apps[0].queuePrefix, migrationsRun: false }, { platform }));
  });
  afterAll(async () => {
    // Both processes stop before their shared queue's keys go.
    await Promise.all(apps.map((a) => a.app.close()));
    if (apps.length > 0) await deleteQueueKeys(apps[0].queuePrefix);
    await stripeApi.stop();
  });

  it(`asks about ${OPEN} open payments at most ${POLLS_PER_SECOND} a second, and each once per turn`, async () => {
    const d = driver(apps[0]);
    const ids: string[] = [];
    for (let i = 0; i < OPEN; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, OPEN - i) }, async () => {
          const order = await d.createOrder('3.00', 'EUR');
          const pi = stripe.addPayment({ status: 'requires_payment_method', amount: 300, orderId: order.id });
          ids.push(pi.id);
          await d.registerPayment(order.id, 'stripe', pi.id, `acct_busy_${platform}`);
        }),
      );
    }
    for (const app of apps) advance(app, AFTER + 1);
    const reads = () => stripeApi.requests.filter((r) => r.method === 'GET');
    await eventually(async () => reads().length >= 50, 20_000, '50 polls');
    const times = reads().map((r) => r.at).sort((a, b) => a - b);
    const most = mostInOneSecond(times);
    expect(most).toBeLessThanOrEqual(POLLS_PER_SECOND);
    // The bound is what limits them, not a slow poller (on a machine that is not starved).
    expect(most).toBeGreaterThanOrEqual(4);
    // No payment asked twice in its turn, whichever process asked.
    const asked = reads().map((r) => r.path);
    expect(new Set(asked).size).toBe(asked.length);
    expect(asked.every((path) => ids.some((id) => path.endsWith(id)))).toBe(true);
  }, 120_000);
});
