import type { EndpointDefinition } from '../../src/config/options';
import { POLLS_PER_SECOND, PollingService } from '../../src/operations/polling/polling.service';
import { AUTH, createTestApp, eventually, TestApp } from '../support/app';
import { driver } from '../support/domain';
import { mostInOneSecond, ProviderApiStub } from '../support/provider-api-stub';
import { addStripeRoutes, STRIPE_STUB_KEY } from '../support/provider-stubs/stripe';

/**
 * Polling's bounds (docs/operations.md#when-webhooks-stop), each a claim of the docs a review found
 * the first version did not keep: a `429`'s pause across runs, the rate across runs back to back,
 * an operator's poll the provider did not answer, a payment polled very often, and which endpoint
 * polls a payment when endpoints' accounts overlap. Runs are driven directly (no workers), so that
 * nothing else polls.
 */
const STRIPE_SECRET = 'whsec_polling_review_secret_0123456789';
const AFTER = 30;

function stripeEndpoint(id: string, account: string, baseUrl: string, extra: Partial<EndpointDefinition> = {}): EndpointDefinition {
  return { id, provider: 'stripe', secrets: [STRIPE_SECRET], merchantAccountId: account, apiKey: STRIPE_STUB_KEY, apiBaseUrl: baseUrl, ...extra };
}

function advance(t: TestApp, seconds: number): void {
  t.clock.setSeconds(t.clock.now() / 1000 + seconds);
}

describe('polling bounds', () => {
  const stripeApi = new ProviderApiStub();
  const stripe = addStripeRoutes(stripeApi);
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    await stripeApi.start();
    t = await createTestApp({
      endpoints: [
        stripeEndpoint('stripe-retry', 'acct_retry', stripeApi.baseUrl, { pollAfterSeconds: AFTER }),
        stripeEndpoint('stripe-burst', 'acct_burst', stripeApi.baseUrl, { pollAfterSeconds: AFTER }),
        stripeEndpoint('stripe-overflow', 'acct_overflow', stripeApi.baseUrl, { pollAfterSeconds: AFTER }),
        // Credentials, no schedule: polled when an operator asks.
        stripeEndpoint('stripe-manual', 'acct_manual', stripeApi.baseUrl),
      ],
      runWorkers: false,
    });
    d = driver(t);
  });
  afterEach(() => t.clock.reset());
  afterAll(async () => {
    await t?.close();
    await stripeApi.stop();
  });

  async function openPayments(account: string, n: number) {
    const ids: string[] = [];
    const paymentIds: string[] = [];
    for (let i = 0; i < n; i++) {
      const order = await d.createOrder('3.00', 'EUR');
      const pi = stripe.addPayment({ status: 'requires_payment_method', amount: 300, orderId: order.id });
      ids.push(pi.id);
      paymentIds.push((await d.registerPayment(order.id, 'stripe', pi.id, account)).id);
    }
    return { ids, paymentIds };
  }
  const readsOf = (ids: string[]) => stripeApi.requests.filter((r) => r.method === 'GET' && ids.some((id) => r.path.endsWith(`/${id}`)));

  it("honours a 429's Retry-After across runs: a run waits it out, and another run of the endpoint waits for that one", async () => {
    // docs: "a 429 pauses the endpoint for what the provider's Retry-After asks ... at most 15 minutes".
    const { ids } = await openPayments('acct_retry', 25);
    stripeApi.failNext({ status: 429, retryAfter: '3' }, (r) => r.method === 'GET' && ids.some((id) => r.path.endsWith(`/${id}`)));
    advance(t, AFTER + 1);
    const polling = t.get(PollingService);
    const first = polling.run('stripe-retry');
    await eventually(async () => readsOf(ids).length === 1, 10_000, 'the 429');
    // The next sweep (or an operator's poll) starts another run of the same endpoint meanwhile.
    const second = polling.run('stripe-retry');
    await Promise.all([first, second]);
    const reads = readsOf(ids);
    expect(reads.map((r) => r.status)).toEqual([429, ...Array(24).fill(200)]);
    expect(reads[1].at - reads[0].at).toBeGreaterThanOrEqual(3_000);
  }, 60_000);

  it(`at most ${POLLS_PER_SECOND} calls in any second per endpoint, also across two runs back to back`, async () => {
    // A run ends when nothing is due (or after 60 s); the next run (an operator's poll, the next
    // sweep) may start at once, with a fresh window.
    const first = await openPayments('acct_burst', POLLS_PER_SECOND);
    advance(t, AFTER + 1);
    const polling = t.get(PollingService);
    await polling.run('stripe-burst');
    const second = await openPayments('acct_burst', POLLS_PER_SECOND);
    for (const id of second.paymentIds) await d.http().post(`/admin/payments/${id}/poll`).set(AUTH);
    await polling.run('stripe-burst');
    const times = readsOf([...first.ids, ...second.ids]).map((r) => r.at).sort((a, b) => a - b);
    expect(times).toHaveLength(2 * POLLS_PER_SECOND);
    const most = mostInOneSecond(times);
    expect(most).toBeLessThanOrEqual(POLLS_PER_SECOND);
  }, 60_000);

  it("an operator's poll that the provider refused (5xx, 429) is asked again, on an endpoint without a schedule too", async () => {
    // docs: "the refused payment is asked at its next turn"; POST answered 202 queued.
    const { ids, paymentIds } = await openPayments('acct_manual', 1);
    stripeApi.failNext({ status: 503 }, (r) => r.method === 'GET' && r.path.endsWith(`/${ids[0]}`));
    const res = await d.http().post(`/admin/payments/${paymentIds[0]}/poll`).set(AUTH);
    expect(res.status).toBe(202);
    const polling = t.get(PollingService);
    await polling.run('stripe-manual');
    expect(readsOf(ids).map((r) => r.status)).toEqual([503]);
    // Later runs (another operator's poll elsewhere, a restart): nothing asks about it again.
    advance(t, 3_600);
    await polling.run('stripe-manual');
    expect(readsOf(ids).map((r) => r.status)).toEqual([503, 200]);
  }, 60_000);

  it("a payment polled many times (an operator's script asking every minute for a day) does not stop its endpoint's polling", async () => {
    const { ids, paymentIds } = await openPayments('acct_overflow', 2);
    // The state after 1,100 polls of the first payment since its last change (polls counts them;
    // each request while it stays unchanged adds one).
    await t.dataSource.query(
      `INSERT INTO payment_polls (payment_id, since, polls, next_at, requested_at)
       SELECT id, updated_at, 1100, now(), now() FROM payments WHERE id = $1`,
      [paymentIds[0]],
    );
    advance(t, AFTER + 1);
    await t.get(PollingService).run('stripe-overflow');
    expect(readsOf(ids)).toHaveLength(2);
  }, 60_000);
});

describe('polling: a Connect endpoint of any account beside a direct endpoint of another Stripe account', () => {
  // The platform's Connect endpoint (["*"], the platform's key) and a direct endpoint of an account
  // that is not one of its connected accounts (its own key): each API a stub of its own.
  const platformApi = new ProviderApiStub();
  addStripeRoutes(platformApi);
  const otherApi = new ProviderApiStub();
  const other = addStripeRoutes(otherApi);
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    await Promise.all([platformApi.start(), otherApi.start()]);
    t = await createTestApp({
      endpoints: [
        // First: the endpoint of acct_other's payments, as commands and POST /admin/payments/{id}/poll route them.
        stripeEndpoint('stripe-other', 'acct_other', otherApi.baseUrl, { pollAfterSeconds: AFTER }),
        { id: 'stripe-connect', provider: 'stripe', secrets: [STRIPE_SECRET], merchantAccountIds: ['*'], apiKey: STRIPE_STUB_KEY, apiBaseUrl: platformApi.baseUrl, pollAfterSeconds: AFTER },
      ],
      runWorkers: false,
    });
    d = driver(t);
  });
  afterEach(() => t.clock.reset());
  afterAll(async () => {
    await t?.close();
    await Promise.all([platformApi.stop(), otherApi.stop()]);
  });

  it("a payment of the direct account is read with the direct endpoint's credentials, whichever endpoint's run comes first", async () => {
    const order = await d.createOrder('49.90', 'EUR');
    const pi = other.addPayment({ status: 'succeeded', amount: 4990, orderId: order.id });
    await d.registerPayment(order.id, 'stripe', pi.id, 'acct_other');
    advance(t, AFTER + 1);
    const polling = t.get(PollingService);
    // The sweep starts both endpoints' runs; the Connect one may claim first.
    await polling.run('stripe-connect');
    await polling.run('stripe-other');
    // POST /admin/payments/{id}/poll and the commands use the first configured endpoint that serves the
    // account (stripe-other); the schedule lets any endpoint whose accounts overlap claim it.
    expect(platformApi.requests.filter((r) => r.method === 'GET')).toHaveLength(0);
    expect(otherApi.requests.filter((r) => r.method === 'GET' && r.path.endsWith(`/${pi.id}`))).toHaveLength(1);
  }, 60_000);
});
