import { Writable } from 'node:stream';
import { createLogger } from '../../src/observability/logger';
import { signedHeaders } from '../../src/testing/sign';
import { DEFAULT_TUNING } from '../../src/config/options';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { CURRENT_API_VERSION, stripeEvents, stripePayment } from '../fixtures/stripe';
import { publishedThinNotifications, thinNotification, thinTwin } from '../fixtures/stripe/thin';
import { ProviderApiError } from '../../src/providers';
import { DeliveryProcessingService } from '../../src/webhooks/delivery-processing.service';
import { InboxStore } from '../../src/webhooks/inbox.store';
import { AUTH, createTestApp, eventually, Platform, PLATFORMS, TestApp, truncateAll } from '../support/app';
import { useCarrierSimulator } from '../support/carrier-suite';
import { driver } from '../support/domain';
import { StripeEventsStub } from '../support/stripe-events-stub';

/**
 * Stripe event destinations that send thin event notifications (CONTRACT §1 `payloadStyle`, §2.3,
 * §4 `resource_not_found`), through the whole service: a notification is verified with the same
 * scheme and recorded under its own id, with no API call on the request path; processing reads the
 * object it names from the Stripe API (a local stub, reached through the official `stripe` package)
 * and applies it as the snapshot event of the same type would be applied.
 */
const PLATFORM_ACCOUNT = 'acct_1ThinPlatform';
const THIN_SECRET = 'whsec_thin_destination_test_secret_1';
const CONNECT_SECRET = 'whsec_thin_connect_destination_secret_2';
const SNAPSHOT_SECRET = 'whsec_snapshot_destination_secret_3';
const BADKEY_SECRET = 'whsec_thin_badkey_destination_secret_4';
const BAD_KEY = 'sk_test_refusedKey51NqZ8cQ2x7LmTt0pVw9Ysd3';
/** Every line the app logs (the express suite captures them, at debug level). */
const logLines: string[] = [];

const stub = new StripeEventsStub();
const endpoints = () => [
  { id: 'stripe-thin', provider: 'stripe' as const, secrets: [THIN_SECRET], merchantAccountId: PLATFORM_ACCOUNT, payloadStyle: 'thin', apiKey: stub.apiKey, apiBaseUrl: stub.url },
  {
    id: 'stripe-thin-connect',
    provider: 'stripe' as const,
    secrets: [CONNECT_SECRET],
    merchantAccountIds: ['acct_1ConnectedA', 'acct_1ConnectedB'],
    payloadStyle: 'thin',
    apiKey: stub.apiKey,
    apiBaseUrl: stub.url,
  },
  // A key the API refuses (401), for the test that the key never gets out.
  { id: 'stripe-thin-badkey', provider: 'stripe' as const, secrets: [BADKEY_SECRET], merchantAccountId: PLATFORM_ACCOUNT, payloadStyle: 'thin', apiKey: BAD_KEY, apiBaseUrl: stub.url },
  // The destination a live integration had before it moved to thin events: same account, its own secret.
  { id: 'stripe-snapshot', provider: 'stripe' as const, secrets: [SNAPSHOT_SECRET], merchantAccountId: PLATFORM_ACCOUNT },
];
const SECRETS: Record<string, string> = {
  'stripe-thin': THIN_SECRET,
  'stripe-thin-connect': CONNECT_SECRET,
  'stripe-thin-badkey': BADKEY_SECRET,
  'stripe-snapshot': SNAPSHOT_SECRET,
};
/** Six attempts, 200 ms doubling (about 6 s in all): what the production budget (10 from 1 s) is to a minute-long outage. */
const TUNING = { inboxAttempts: 6, inboxBackoffMs: 200, unmatchedAfterAttempts: 3, providerApiTimeoutMs: 500 };

beforeAll(() => stub.start());
afterAll(() => stub.stop());

/** Everything a suite needs: the app on a platform, the carrier simulator, the stub reset before each test. */
function useThinApp(platform: Platform) {
  const sim = new CarrierSimulator();
  const ctx = {} as { t: TestApp; d: ReturnType<typeof driver>; sim: CarrierSimulator };
  ctx.sim = sim;
  useCarrierSimulator(
    sim,
    (url) => ({
      endpoints: endpoints(),
      carriers: [{ name: 'default', url, timeoutMs: 1_000 }],
      tuning: TUNING,
      ...(platform === 'express'
        ? { logger: createLogger({ level: 'debug', destination: new Writable({ write: (chunk, _e, done) => (logLines.push(String(chunk)), done()) }) }) }
        : {}),
    }),
    (app) => {
      ctx.t = app;
      ctx.d = driver(app);
    },
    { platform },
  );
  beforeEach(() => stub.reset());
  return ctx;
}

/** The helpers a test uses, on its suite's app. */
function helpers(ctx: ReturnType<typeof useThinApp>) {
  async function send(endpointId: string, body: Record<string, unknown>) {
    const text = JSON.stringify(body);
    return ctx.d.http().post(`/webhooks/${endpointId}`).set(signedHeaders('stripe', SECRETS[endpointId], text)).send(text);
  }
  /** Sends a notification, expects it accepted, and returns its archive item once processed. */
  async function deliver(endpointId: string, body: Record<string, unknown>, timeoutMs = 15_000) {
    const res = await send(endpointId, body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId: body.id });
    await ctx.d.processed(body.id as string, timeoutMs);
    return archived(body.id as string);
  }
  async function archived(eventId: string) {
    const list = await ctx.d.http().get('/admin/webhook-deliveries').query({ eventId }).set(AUTH);
    expect(list.status).toBe(200);
    expect(list.body.items.length).toBe(1);
    return list.body.items[0];
  }
  const decimal = (minor: number) => (minor / 100).toFixed(2);
  const shipmentsFor = (orderId: string) => ctx.sim.shipments.filter((s) => s.orderId === orderId);
  /** An order and the snapshot events of its payment (the objects the stub serves are theirs). */
  async function order(account?: string) {
    const base = stripePayment(CURRENT_API_VERSION, account ? { account } : {});
    const created = await ctx.d.createOrder(decimal(base.amount), base.currency.toUpperCase(), account ? { merchantAccountId: account } : {});
    const events = stripeEvents({ ...base, orderId: created.id });
    return { order: created, events, payment: events.payment };
  }
  return { send, deliver, archived, decimal, shipmentsFor, order };
}

describe.each(PLATFORMS)('thin notifications fulfil a paid order once (%s)', (platform) => {
  const ctx = useThinApp(platform);
  const h = helpers(ctx);

  it('a single account: v1.payment_intent.succeeded is fetched once, applied, and the order shipped once; a resend changes nothing', async () => {
    const { order, events, payment } = await h.order();
    const { notification, object } = thinTwin(events.succeeded().body);
    stub.putObject(object);

    const item = await h.deliver('stripe-thin', notification);
    expect(item).toMatchObject({
      endpointId: 'stripe-thin',
      provider: 'stripe',
      merchantAccountId: PLATFORM_ACCOUNT,
      eventId: notification.id,
      eventType: 'v1.payment_intent.succeeded',
      resourceId: payment.paymentIntentId,
      apiVersion: null,
      status: 'processed',
      outcome: 'applied',
    });
    await eventually(async () => (await ctx.d.getOrder(order.id)).status === 'fulfilled', 15_000, 'order fulfilled');
    expect(h.shipmentsFor(order.id).length).toBe(1);
    expect(stub.objectRequests.map((r) => [r.path, r.authorization, r.stripeContext ?? null, r.stripeAccount ?? null, r.status])).toEqual([
      [`/v1/payment_intents/${payment.paymentIntentId}`, `Bearer ${stub.apiKey}`, null, null, 200],
    ]);
    const view = await ctx.d.getOrder(order.id);
    expect(view.payments.length).toBe(1);
    expect(view.payments[0]).toMatchObject({ provider: 'stripe', providerPaymentId: payment.paymentIntentId, merchantAccountId: PLATFORM_ACCOUNT, status: 'succeeded' });

    // The archive keeps the notification as it came, not the object fetched for it.
    const detail = await ctx.d.http().get(`/admin/webhook-deliveries/${item.id}`).set(AUTH);
    expect(detail.body.body).toEqual(notification);

    // Stripe resending the notification: a duplicate, no fetch, nothing shipped again.
    const again = await h.send('stripe-thin', notification);
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ status: 'duplicate', eventId: notification.id });
    expect(stub.objectRequests.length).toBe(1);
    expect(h.shipmentsFor(order.id).length).toBe(1);
    // The read is counted and timed (the first of this suite's app).
    const metrics = (await ctx.d.http().get('/metrics').set(AUTH)).text.split('\n');
    expect(metrics).toContain('pw_provider_api_calls_total{provider="stripe",result="found"} 1');
    expect(metrics).toContain('pw_provider_api_duration_seconds_count{provider="stripe"} 1');
  });

  it('a connected account on a merchantAccountIds endpoint: fetched in its context (Stripe-Context), keyed and paid on that account', async () => {
    const { order, events, payment } = await h.order('acct_1ConnectedB');
    const { notification, object } = thinTwin(events.succeeded().body);
    expect(notification.context).toBe('acct_1ConnectedB');
    stub.putObject(object, 'acct_1ConnectedB');

    const item = await h.deliver('stripe-thin-connect', notification);
    expect(item).toMatchObject({ merchantAccountId: 'acct_1ConnectedB', status: 'processed', outcome: 'applied', resourceId: payment.paymentIntentId });
    await eventually(async () => (await ctx.d.getOrder(order.id)).status === 'fulfilled', 15_000, 'order fulfilled');
    expect(h.shipmentsFor(order.id).length).toBe(1);
    expect(stub.objectRequests.map((r) => [r.path, r.stripeContext, r.status])).toEqual([[`/v1/payment_intents/${payment.paymentIntentId}`, 'acct_1ConnectedB', 200]]);
    expect((await ctx.d.getOrder(order.id)).payments[0]).toMatchObject({ merchantAccountId: 'acct_1ConnectedB', status: 'succeeded' });
  });
});

describe('thin notifications (express)', () => {
  const ctx = useThinApp('express');
  const h = helpers(ctx);

  async function paidAndFulfilled(account?: string) {
    const o = await h.order(account);
    const { notification, object } = thinTwin(o.events.succeeded().body);
    stub.putObject(object, account);
    await h.deliver(account ? 'stripe-thin-connect' : 'stripe-thin', notification);
    await eventually(async () => (await ctx.d.getOrder(o.order.id)).status === 'fulfilled', 15_000, 'order fulfilled');
    return o;
  }

  it('refunds move the payment as their snapshot twins do: v1.charge.refunded fetches the charge and learns its PaymentIntent', async () => {
    const { order, events, payment } = await paidAndFulfilled();
    const partial = thinTwin(events.refunded(500).body);
    expect(partial.notification.related_object).toEqual({ id: payment.chargeId, type: 'charge', url: `/v1/charges/${payment.chargeId}` });
    stub.putObject(partial.object);
    const first = await h.deliver('stripe-thin', partial.notification);
    // The row learnt the PaymentIntent from the charge (a thin charge notification names only the charge).
    expect(first).toMatchObject({ eventType: 'v1.charge.refunded', status: 'processed', outcome: 'applied', resourceId: payment.paymentIntentId });
    expect((await ctx.d.getOrder(order.id)).payments[0]).toMatchObject({ status: 'partially_refunded', refundedAmount: '5.00' });

    const rest = thinTwin(events.refunded(payment.amount - 500).body);
    stub.putObject(rest.object);
    expect(await h.deliver('stripe-thin', rest.notification)).toMatchObject({ status: 'processed', outcome: 'applied' });
    const view = await ctx.d.getOrder(order.id);
    expect(view.status).toBe('refunded');
    expect(view.payments[0]).toMatchObject({ status: 'refunded', refundedAmount: h.decimal(payment.amount) });
    expect(h.shipmentsFor(order.id).length).toBe(1);
    expect(stub.objectRequests.map((r) => r.path)).toEqual([
      `/v1/payment_intents/${payment.paymentIntentId}`,
      `/v1/charges/${payment.chargeId}`,
      `/v1/charges/${payment.chargeId}`,
    ]);
  });

  it('disputes move the payment as their snapshot twins do: created → disputed, closed won → succeeded (the dispute fetched at /v1/disputes)', async () => {
    const { order, events, payment } = await paidAndFulfilled();
    const created = thinTwin(events.disputeCreated().body);
    stub.putObject(created.object);
    expect(await h.deliver('stripe-thin', created.notification)).toMatchObject({
      eventType: 'v1.charge.dispute.created',
      status: 'processed',
      outcome: 'applied',
      resourceId: payment.paymentIntentId,
    });
    expect((await ctx.d.getOrder(order.id)).payments[0].status).toBe('disputed');
    const closed = thinTwin(events.disputeClosed('won').body);
    stub.putObject(closed.object);
    expect(await h.deliver('stripe-thin', closed.notification)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect((await ctx.d.getOrder(order.id)).payments[0].status).toBe('succeeded');
    expect(stub.objectRequests.filter((r) => r.path.startsWith('/v1/disputes/')).length).toBe(2);
    expect(h.shipmentsFor(order.id).length).toBe(1);
  });

  it('a late notification of an earlier change applies only what the lifecycle allows: processing after succeeded is stale; a first refund read after the second applies the total, and the second is then already applied', async () => {
    const { order, events, payment } = await paidAndFulfilled();
    // `processing` of the same PaymentIntent, arriving now: the object is succeeded, the change lies behind.
    const late = thinNotification({
      type: 'v1.payment_intent.processing',
      relatedObject: { id: payment.paymentIntentId, type: 'payment_intent', url: `/v1/payment_intents/${payment.paymentIntentId}` },
    });
    expect(await h.deliver('stripe-thin', late)).toMatchObject({ status: 'processed', outcome: 'stale' });

    // Two refunds happen; the first one's notification is processed only after both: the charge says 10.00 refunded in all.
    const first = thinTwin(events.refunded(500).body);
    const second = thinTwin(events.refunded(payment.amount - 500).body);
    stub.putObject(second.object);
    expect(await h.deliver('stripe-thin', first.notification)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect((await ctx.d.getOrder(order.id)).payments[0]).toMatchObject({ status: 'refunded', refundedAmount: h.decimal(payment.amount) });
    expect(await h.deliver('stripe-thin', second.notification)).toMatchObject({ status: 'processed', outcome: 'already_applied' });
    expect(h.shipmentsFor(order.id).length).toBe(1);
  });

  it('a notification whose object no longer exists (404 resource_missing) ends rejected/resource_not_found and changes nothing', async () => {
    const { order, events, payment } = await h.order();
    const { notification } = thinTwin(events.succeeded().body);
    const item = await h.deliver('stripe-thin', notification);
    expect(item).toMatchObject({ status: 'rejected', outcome: 'resource_not_found' });
    expect(stub.objectRequests.map((r) => [r.path, r.status])).toEqual([[`/v1/payment_intents/${payment.paymentIntentId}`, 404]]);
    expect(await ctx.d.count('SELECT 1 FROM payments')).toBe(0);
    expect((await ctx.d.getOrder(order.id)).status).toBe('awaiting_payment');
    expect(h.shipmentsFor(order.id).length).toBe(0);
  });

  it('the API failing for a while (503): each attempt fails and is retried with backoff, the delivery applies once the API is back', async () => {
    const { order, events } = await h.order();
    const { notification, object } = thinTwin(events.succeeded().body);
    stub.putObject(object);
    stub.failObjectsUntil(Date.now() + 2_500, { status: 503 });
    const res = await h.send('stripe-thin', notification);
    // Answered at once: no API call on the request path.
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'accepted', eventId: notification.id });
    const row = await ctx.d.processed(notification.id as string, 20_000);
    expect(row).toMatchObject({ status: 'processed', outcome: 'applied', lastError: null });
    const failed = stub.objectRequests.filter((r) => r.status === 503).length;
    expect(failed).toBeGreaterThanOrEqual(2);
    expect(stub.objectRequests.filter((r) => r.status === 200).length).toBe(1);
    expect(row.attempts).toBeGreaterThanOrEqual(2);
    await eventually(async () => (await ctx.d.getOrder(order.id)).status === 'fulfilled', 15_000, 'order fulfilled');
    expect(h.shipmentsFor(order.id).length).toBe(1);
  });

  it('429 with Retry-After: the next attempt waits as long as Stripe asked (2 s), far past the 200 ms backoff', async () => {
    const { events } = await h.order();
    const { notification, object } = thinTwin(events.succeeded().body);
    stub.putObject(object);
    stub.failObjects(1, { status: 429, retryAfterSeconds: 2 });
    const item = await h.deliver('stripe-thin', notification, 20_000);
    expect(item).toMatchObject({ status: 'processed', outcome: 'applied' });
    const [limited, next] = stub.objectRequests;
    expect([limited.status, next.status, stub.objectRequests.length]).toEqual([429, 200, 2]);
    // Not before Stripe said, and not much later either: the backoff that honours it was the one used
    // (a worker that could not compute it would leave the job to the stalled-job check, 12 s on).
    expect(next.at! - limited.at!).toBeGreaterThanOrEqual(1_950);
    expect(next.at! - limited.at!).toBeLessThan(4_000);
  });

  it('an API that answers too slowly: the attempt times out (providerApiTimeoutMs) and is retried; it applies once the API answers in time', async () => {
    const { events } = await h.order();
    const { notification, object } = thinTwin(events.succeeded().body);
    stub.putObject(object);
    stub.slowObjects(1_500);
    expect((await h.send('stripe-thin', notification)).status).toBe(200);
    await eventually(async () => {
      const [row] = await ctx.t.dataSource.query(`SELECT last_error FROM webhook_inbox WHERE event_id = $1`, [notification.id]);
      return typeof row?.last_error === 'string' && row.last_error.startsWith('provider_api_unavailable:');
    }, 10_000, 'a timed-out attempt recorded');
    stub.slowObjects(0);
    const row = await ctx.d.processed(notification.id as string, 20_000);
    expect(row).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(row.attempts).toBeGreaterThanOrEqual(2);
  });

  it('an API that stays down: the attempts are bounded, the delivery ends failed (replayable) and a replay applies it once the API is back', async () => {
    const { events } = await h.order();
    const { notification, object } = thinTwin(events.succeeded().body);
    stub.putObject(object);
    stub.failObjectsUntil(Date.now() + 60_000, { status: 500 });
    expect((await h.send('stripe-thin', notification)).status).toBe(200);
    const row = await ctx.d.processed(notification.id as string, 30_000);
    expect(row).toMatchObject({ status: 'failed', outcome: 'provider_api_unavailable', attempts: TUNING.inboxAttempts });
    expect(row.lastError).toMatch(/^provider_api_unavailable: Stripe API answered 500 for \/v1\/payment_intents\//);
    stub.failObjectsUntil(0, { status: 500 });
    const replay = await ctx.d.http().post(`/admin/webhook-deliveries/${row.id}/reprocess`).set(AUTH);
    expect(replay.status).toBe(202);
    await eventually(async () => (await h.archived(notification.id as string)).status === 'processed', 15_000, 'replayed');
    expect((await h.archived(notification.id as string)).outcome).toBe('applied');
  });

  it('the production budget outlasts a minute-long outage: the backoff of 10 attempts from 1 s waits at least 4 minutes in all', () => {
    let least = 0;
    for (let n = 1; n < DEFAULT_TUNING.inboxAttempts; n++) least += 2 ** (n - 1) * DEFAULT_TUNING.inboxBackoffMs * 0.5;
    expect(least).toBeGreaterThanOrEqual(60_000 * 4);
  });

  it('a notification of an account the endpoint does not serve: recorded and answered 200, rejected/account_mismatch, and nothing is fetched in that account\'s name', async () => {
    const { events } = await h.order('acct_1Stranger');
    const stranger = thinTwin(events.succeeded().body);
    stub.putObject(stranger.object, 'acct_1Stranger');
    expect(await h.deliver('stripe-thin-connect', stranger.notification)).toMatchObject({
      merchantAccountId: 'acct_1Stranger',
      status: 'rejected',
      outcome: 'account_mismatch',
    });
    // The same on a single-account endpoint: a context that is not its account.
    const other = thinTwin(events.succeeded().body, { context: 'acct_1Stranger' });
    expect(await h.deliver('stripe-thin', other.notification)).toMatchObject({ status: 'rejected', outcome: 'account_mismatch' });
    expect(stub.objectRequests.length).toBe(0);
    expect(await ctx.d.count('SELECT 1 FROM payments')).toBe(0);
  });

  it('a connected account cannot reach another account\'s payment: its notification naming that PaymentIntent is fetched in its own context and not found there', async () => {
    const victim = await paidAndFulfilled('acct_1ConnectedA');
    const forged = thinTwin(victim.events.refunded(victim.payment.amount).body, { context: 'acct_1ConnectedB' });
    // Stripe never sends it so; were it sent, the object is read as account B, where it does not exist.
    const item = await h.deliver('stripe-thin-connect', forged.notification);
    expect(item).toMatchObject({ merchantAccountId: 'acct_1ConnectedB', status: 'rejected', outcome: 'resource_not_found' });
    expect(stub.objectRequests.at(-1)).toMatchObject({ path: `/v1/charges/${victim.payment.chargeId}`, stripeContext: 'acct_1ConnectedB', status: 404 });
    expect((await ctx.d.getOrder(victim.order.id)).payments[0].status).toBe('succeeded');
  });

  it('both styles on one account during a migration: the snapshot event and the notification of one change move the payment once, ship once, and the archive shows both', async () => {
    const { order, events, payment } = await h.order();
    const snapshot = events.succeeded();
    const { notification, object } = thinTwin(snapshot.body);
    stub.putObject(object);
    const viaSnapshot = await h.deliver('stripe-snapshot', snapshot.body);
    const viaThin = await h.deliver('stripe-thin', notification);
    expect([viaSnapshot.outcome, viaThin.outcome]).toEqual(['applied', 'already_applied']);
    await eventually(async () => (await ctx.d.getOrder(order.id)).status === 'fulfilled', 15_000, 'order fulfilled');
    expect(h.shipmentsFor(order.id).length).toBe(1);
    expect(await ctx.d.count('SELECT 1 FROM payments')).toBe(1);
    const both = await ctx.d.http().get('/admin/webhook-deliveries').query({ resourceId: payment.paymentIntentId }).set(AUTH);
    expect(both.body.items.map((i: { endpointId: string; eventType: string }) => `${i.endpointId} ${i.eventType}`).sort()).toEqual([
      'stripe-snapshot payment_intent.succeeded',
      'stripe-thin v1.payment_intent.succeeded',
    ]);
  });

  it('each endpoint reads its own style: a classic event on the thin endpoint is applied as the classic event it is; a notification on the snapshot endpoint is recorded and ignored, nothing fetched', async () => {
    const { order, events } = await h.order();
    const snapshot = events.succeeded();
    const { notification, object } = thinTwin(snapshot.body);
    stub.putObject(object);
    expect(await h.deliver('stripe-snapshot', notification)).toMatchObject({ eventType: 'v1.payment_intent.succeeded', status: 'ignored', outcome: 'no_handler' });
    expect(stub.objectRequests.length).toBe(0);
    expect(await h.deliver('stripe-thin', snapshot.body)).toMatchObject({ eventType: 'payment_intent.succeeded', status: 'processed', outcome: 'applied' });
    expect(stub.objectRequests.length).toBe(0);
    await eventually(async () => (await ctx.d.getOrder(order.id)).status === 'fulfilled', 15_000, 'order fulfilled');
    expect(h.shipmentsFor(order.id).length).toBe(1);
  });

  it('what is fetched is what was checked: another envelope inside the body (a cloud provider\'s `detail`, naming another path and account) is never read', async () => {
    const { events, payment } = await h.order();
    const { notification, object } = thinTwin(events.succeeded().body);
    stub.putObject(object);
    const smuggled = {
      ...notification,
      detail: {
        ...notification,
        context: 'acct_1ConnectedA',
        related_object: { id: payment.paymentIntentId, type: 'payment_intent', url: `/v1/payment_intents/${payment.paymentIntentId}?expand[]=customer` },
      },
    };
    expect(await h.deliver('stripe-thin', smuggled)).toMatchObject({ status: 'processed', outcome: 'applied' });
    expect(stub.objectRequests.map((r) => [r.path, r.query, r.stripeContext ?? null, r.stripeAccount ?? null])).toEqual([
      [`/v1/payment_intents/${payment.paymentIntentId}`, {}, null, null],
    ]);
  });

  it("Stripe's published notifications of types the service does not act on (billing meters, an event destination's ping) are recorded and ignored, with no fetch", async () => {
    const published = publishedThinNotifications();
    const meter = { ...published.v1BillingMeterPayload, context: undefined, id: 'evt_test_published_meter_1' };
    delete meter.context;
    const ping = thinNotification({ type: 'v2.core.event_destination.ping', relatedObject: { id: 'ed_test_1', type: 'v2.core.event_destination', url: '/v2/core/event_destinations/ed_test_1' } });
    for (const body of [meter, ping]) expect(await h.deliver('stripe-thin', body)).toMatchObject({ status: 'ignored', outcome: 'no_handler' });
    expect(stub.objectRequests.length).toBe(0);
  });

  it('a related_object that is not the object its type names (another path, another kind) is never fetched: ignored', async () => {
    const { payment } = await h.order();
    const wrongPath = thinNotification({
      type: 'v1.payment_intent.succeeded',
      relatedObject: { id: payment.paymentIntentId, type: 'payment_intent', url: `/v1/customers/${payment.paymentIntentId}` },
    });
    const wrongKind = thinNotification({ type: 'v1.charge.refunded', relatedObject: { id: payment.paymentIntentId, type: 'payment_intent', url: `/v1/payment_intents/${payment.paymentIntentId}` } });
    for (const body of [wrongPath, wrongKind]) expect(await h.deliver('stripe-thin', body)).toMatchObject({ status: 'ignored', outcome: 'no_handler' });
    expect(stub.objectRequests.length).toBe(0);
  });

  it('the API key never reaches a log, the archive, a recorded error or an answer, even when the API refuses it (401) or fails (500)', async () => {
    const { events } = await h.order();
    const refused = thinTwin(events.succeeded().body);
    stub.putObject(refused.object);
    const failing = thinTwin(events.succeeded().body);
    const answers = [await h.send('stripe-thin-badkey', refused.notification)];
    const rows = [await ctx.d.processed(refused.notification.id as string, 30_000)];
    stub.failObjectsUntil(Date.now() + 60_000, { status: 500 });
    answers.push(await h.send('stripe-thin', failing.notification));
    rows.push(await ctx.d.processed(failing.notification.id as string, 30_000));
    expect(rows.map((r) => r.status)).toEqual(['failed', 'failed']);
    expect(rows[0].lastError).toMatch(/^provider_api_unavailable: Stripe API answered 401 for \/v1\/payment_intents\//);
    expect(stub.objectRequests.some((r) => r.authorization === `Bearer ${BAD_KEY}` && r.status === 401)).toBe(true);
    const texts = [
      ...answers.map((a) => JSON.stringify(a.body)),
      ...rows.map((r) => r.lastError),
      JSON.stringify((await ctx.d.http().get('/admin/webhook-deliveries').set(AUTH)).body),
      ...(await Promise.all(rows.map(async (r) => JSON.stringify((await ctx.d.http().get(`/admin/webhook-deliveries/${r.id}`).set(AUTH)).body)))),
      JSON.stringify(await ctx.t.dataSource.query('SELECT * FROM webhook_inbox')),
      logLines.join(''),
    ];
    expect(logLines.length).toBeGreaterThan(0);
    for (const text of texts) {
      expect(text).not.toContain(stub.apiKey);
      expect(text).not.toContain(BAD_KEY);
    }
  });
});

describe('thin notifications in one processing batch with others (express, no workers: the test submits)', () => {
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  beforeAll(async () => {
    t = await createTestApp({ endpoints: endpoints(), runWorkers: false, tuning: { ...TUNING, providerApiTimeoutMs: 5_000 } });
    d = driver(t);
  });
  afterAll(() => t?.close());
  beforeEach(async () => {
    await truncateAll(t.dataSource);
    stub.reset();
  });

  it('the batch answers its snapshot deliveries without waiting for the fetches; each thin one is read outside it and decided after, a failed read failing that delivery alone', async () => {
    const orderOf = async () => {
      const base = stripePayment(CURRENT_API_VERSION);
      const order = await d.createOrder((base.amount / 100).toFixed(2), base.currency.toUpperCase());
      return stripeEvents({ ...base, orderId: order.id }).succeeded().body;
    };
    const found = thinTwin(await orderOf());
    stub.putObject(found.object);
    const gone = thinTwin(await orderOf());
    const refused = thinTwin(await orderOf());
    stub.putObject(refused.object);
    const snapshots = [await orderOf(), await orderOf()];
    const sent: Array<[string, Record<string, unknown>]> = [
      ['stripe-thin', found.notification],
      ['stripe-thin', gone.notification],
      ['stripe-thin-badkey', refused.notification],
      ['stripe-snapshot', snapshots[0]],
      ['stripe-snapshot', snapshots[1]],
    ];
    for (const [endpoint, body] of sent) {
      const text = JSON.stringify(body);
      const res = await d.http().post(`/webhooks/${endpoint}`).set(signedHeaders('stripe', SECRETS[endpoint], text)).send(text);
      expect(res.status).toBe(200);
    }
    const ids: string[] = [];
    for (const [, body] of sent) ids.push((await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = $1`, [body.id]))[0].id);

    stub.slowObjects(1_500);
    const store = t.get(InboxStore);
    const locks = jest.spyOn(store, 'lockForProcessing');
    const processing = t.get(DeliveryProcessingService);
    const settledAt: number[] = [];
    const started = Date.now();
    // Submitted in one tick: one batch.
    const outcomes = await Promise.all(
      ids.map((inboxId, i) =>
        processing.submit({ inboxId, finalAttempt: false, parkUnmatched: false }).then(
          (r) => ((settledAt[i] = Date.now() - started), r),
          (e: Error) => ((settledAt[i] = Date.now() - started), e),
        ),
      ),
    );
    const lockCalls = locks.mock.calls.map((call) => [...(call[1] as string[])]);
    locks.mockRestore();
    expect(outcomes.slice(0, 2)).toEqual([
      { status: 'processed', outcome: 'applied' },
      { status: 'rejected', outcome: 'resource_not_found' },
    ]);
    expect(outcomes[2]).toBeInstanceOf(ProviderApiError);
    expect((outcomes[2] as Error).message).toMatch(/^Stripe API answered 401 for \/v1\/payment_intents\//);
    expect(outcomes.slice(3)).toEqual([
      { status: 'processed', outcome: 'applied' },
      { status: 'processed', outcome: 'applied' },
    ]);
    // The first transaction took all five; the snapshot ones were answered long before the slow API answered the others.
    expect(lockCalls[0].sort()).toEqual([...ids].sort());
    expect(Math.max(settledAt[3], settledAt[4])).toBeLessThan(1_000);
    expect(Math.min(settledAt[0], settledAt[1], settledAt[2])).toBeGreaterThanOrEqual(1_480);
    // Decided after their read, in transactions of only those that had read.
    expect(lockCalls.length).toBeGreaterThanOrEqual(2);
    for (const call of lockCalls.slice(1)) for (const id of call) expect([ids[0], ids[1]]).toContain(id);
    const rows = await t.dataSource.query(
      `SELECT event_id AS "eventId", status, outcome, attempts, split_part(last_error, ':', 1) AS code FROM webhook_inbox WHERE id = ANY($1)`,
      [ids],
    );
    const byEvent = new Map(rows.map((r: { eventId: string }) => [r.eventId, r]));
    expect(sent.map(([, body]) => byEvent.get(body.id as string))).toEqual([
      { eventId: found.notification.id, status: 'processed', outcome: 'applied', attempts: 1, code: null },
      { eventId: gone.notification.id, status: 'rejected', outcome: 'resource_not_found', attempts: 1, code: null },
      { eventId: refused.notification.id, status: 'received', outcome: null, attempts: 1, code: 'provider_api_unavailable' },
      { eventId: snapshots[0].id, status: 'processed', outcome: 'applied', attempts: 1, code: null },
      { eventId: snapshots[1].id, status: 'processed', outcome: 'applied', attempts: 1, code: null },
    ]);
    expect(stub.objectRequests.length).toBe(3);
  });
});
