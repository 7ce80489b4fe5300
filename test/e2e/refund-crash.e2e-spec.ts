import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { signedHeaders } from '../../src/testing/sign';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { CURRENT_API_VERSION, stripeEvent } from '../fixtures/stripe';
import { deleteQueueKeys } from '../support/app';
import { TEST_DATABASE_URL, TEST_REDIS_URL, testPgConnection } from '../support/env';
import { orderHistoryProblems } from '../support/history-check';
import { freePort, ServiceProcess, stopProcesses, waitForHttp, api as adminApi, until } from '../support/process';
import { ProviderApiStub } from '../support/provider-api-stub';
import { addStripeRoutes, paymentIntentObject, STRIPE_STUB_KEY, StripeStub } from '../support/provider-stubs/stripe';

/**
 * CONTRACT §3.1, a refund across a crash of the built service: the provider refunded, and the
 * process died before it committed the answer. A Stripe endpoint whose `apiKey` and `apiBaseUrl`
 * point at a local stand-in of Stripe's API (the official `stripe` client calls it). The order is
 * paid by a signed Stripe webhook; the refund is asked over HTTP; the stub holds its answer AFTER
 * the refund happened; the service is killed (SIGKILL) while it waits; the stub is released; the
 * service starts again: the outbox message's lease lapses, its job is brought back (BullMQ's
 * stalled-job check, or the outbox sweeper; with the job lost from Redis too, the sweeper alone), the
 * same idempotency key is sent again and the stub answers the first result. One refund at the provider,
 * two requests under one key, the refund `submitted` with the first refund's id, and the order's
 * history lists each of the refund's moves once.
 */

const ADMIN = 'e2e-admin-token';
const WEBHOOK_SECRET = 'whsec_ZTJlLXJlZnVuZC1jcmFzaC1zdHJpcGUtMDE=';
const ACCOUNT = 'acct_1RefundCrash00000000000';
const TEST_TIMEOUT = 90_000;

describe('a refund whose worker is killed between the provider\'s answer and its commit (the built service, Stripe through its official client)', () => {
  const sim = new CarrierSimulator();
  const stub = new ProviderApiStub();
  let stripe: StripeStub;
  const db = new Client(testPgConnection());
  const prefix = `pw-refund-crash-${randomUUID().slice(0, 8)}`;
  let processes: ServiceProcess[] = [];
  let env: Record<string, string> = {};

  beforeAll(async () => {
    await Promise.all([sim.start(), stub.start(), db.connect()]);
    stripe = addStripeRoutes(stub);
    // A refund Stripe has not finished yet: the answer makes it `submitted`, the webhook would end it.
    stripe.refundStatus = 'pending';
    env = {
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: prefix,
      ADMIN_TOKEN: ADMIN,
      CARRIER_URL: sim.url,
      WEBHOOK_ENDPOINTS: JSON.stringify([
        { id: 'stripe-main', provider: 'stripe', secrets: [WEBHOOK_SECRET], merchantAccountId: ACCOUNT, apiKey: STRIPE_STUB_KEY, apiBaseUrl: stub.baseUrl },
      ]),
      // A dead worker's lease lapses within a second, and the sweeper looks every 300 ms: seconds, not minutes.
      PW_TUNING: JSON.stringify({
        jobLockMs: 1_000,
        stalledIntervalMs: 500,
        sweepIntervalMs: 300,
        sweepAfterMs: 200,
        carrierBackoffBaseMs: 50,
        carrierBackoffCapMs: 500,
        // The held answer is never given up on by the worker waiting for it: only the kill ends the wait.
        providerApiTimeoutMs: 60_000,
      }),
    };
  });

  afterEach(async () => {
    await stopProcesses(processes.splice(0));
  });

  afterAll(async () => {
    await db.end().catch(() => undefined);
    await stub.stop();
    await sim.stop();
    await deleteQueueKeys(prefix);
  });

  /** The whole service (HTTP and workers) on a port of its own, once it answers ready. */
  async function startService(): Promise<{ service: ServiceProcess; port: number }> {
    const port = await freePort();
    const service = new ServiceProcess({ ...env, PORT: String(port) });
    processes.push(service);
    await waitForHttp(service, `http://127.0.0.1:${port}/health/ready`, 30_000);
    return { service, port };
  }

  /** Creates an order and pays it by a signed `payment_intent.succeeded` of a PaymentIntent the stub knows. */
  async function paidOrder(port: number): Promise<{ orderId: string; paymentIntentId: string }> {
    const order = await adminApi(port, ADMIN, 'POST', '/orders', {
      amount: '49.90',
      currency: 'EUR',
      shipTo: { name: 'Grace Hopper', line1: '1 Navy Yard', city: 'Arlington', postalCode: '22202', country: 'US' },
      items: [{ sku: 'SKU-1', quantity: 1 }],
    });
    expect(order.status).toBe(201);
    const orderId = order.body.id as string;
    const p = stripe.addPayment({ amount: 4990, currency: 'eur', orderId });
    const { eventId, body } = stripeEvent(
      { version: CURRENT_API_VERSION, paymentIntentId: p.id, chargeId: p.chargeId, amount: p.amount, currency: p.currency, orderId },
      'payment_intent.succeeded',
      paymentIntentObject(p),
    );
    const text = JSON.stringify(body);
    const res = await fetch(`http://127.0.0.1:${port}/webhooks/stripe-main`, { method: 'POST', headers: signedHeaders('stripe', WEBHOOK_SECRET, text), body: text });
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 200, body: { status: 'accepted', eventId } });
    await until('the order paid by the webhook', async () => ['paid', 'fulfilled'].includes((await adminApi(port, ADMIN, 'GET', `/orders/${orderId}`)).body.status));
    return { orderId, paymentIntentId: p.id };
  }

  it.each([
    ['its job still in Redis (brought back by the stalled-job check or the sweeper)', false],
    ['Redis lost its job too (the queue keys deleted): the outbox sweeper alone brings it', true],
  ])(
    'SIGKILL while the answer is held, then a new process, %s: one refund at the provider, the same key twice, submitted with the first refund\'s id, each move once in the history',
    async (_, redisLost) => {
      const first = await startService();
      const { orderId, paymentIntentId } = await paidOrder(first.port);

      // The provider makes the refund, then holds its answer: the worker waits between the effect and its commit.
      const held = stub.holdNext('after', (r) => r.path === '/v1/refunds');
      const asked = await adminApi(first.port, ADMIN, 'POST', `/orders/${orderId}/refunds`, { amount: '20.00', reason: 'crash test' });
      expect(asked.status).toBe(202);
      expect(asked.body).toMatchObject({ orderId, provider: 'stripe', amount: '20.00', currency: 'EUR', status: 'requested', providerRefundId: null });
      const refundId = asked.body.id as string;
      const request = await held.arrived;
      expect(request.key).toBe(refundId);
      expect(stub.effects.filter((e) => e.key === refundId)).toHaveLength(1);

      first.service.kill('SIGKILL');
      expect((await first.service.exited()).signal).toBe('SIGKILL');
      // Nothing of the attempt committed: the refund is still requested, its message pending and leased by the dead worker.
      const { rows: before } = await db.query<{ status: string }>(`SELECT status FROM refunds WHERE id = $1`, [refundId]);
      expect(before).toEqual([{ status: 'requested' }]);
      const { rows: message } = await db.query<{ status: string; leased: boolean }>(
        `SELECT status, lease_owner IS NOT NULL AS leased FROM outbox_message WHERE idempotency_key = $1`,
        [refundId],
      );
      expect(message).toEqual([{ status: 'pending', leased: true }]);
      held.release();
      if (redisLost) await deleteQueueKeys(prefix);

      // A new process: the lease lapses, the message is brought back, the same key is sent again.
      const restartedAt = Date.now();
      const second = await startService();
      const refundNow = async () => (await adminApi(second.port, ADMIN, 'GET', `/refunds/${refundId}`)).body;
      await until('the refund submitted by the new process', async () => (await refundNow()).status === 'submitted', 30_000);
      const submitted = await refundNow();
      console.log(`refund ${redisLost ? 'swept' : 'taken back'} and submitted ${Date.now() - restartedAt} ms after the new process was started`);

      // One refund at the provider; both requests carried the refund's id as their key; the second got the first's answer.
      const effects = stub.effects.filter((e) => e.detail?.paymentIntent === paymentIntentId);
      const [effect] = effects;
      expect(effects).toEqual([{ kind: 'refund', key: refundId, detail: expect.objectContaining({ paymentIntent: paymentIntentId, amount: 2000 }) }]);
      const refundRequests = stub.requests.filter((r) => r.path === '/v1/refunds' && new URLSearchParams(r.text).get('payment_intent') === paymentIntentId);
      expect(refundRequests.map((r) => r.key)).toEqual([refundId, refundId]);
      expect(refundRequests[1].status).toBe(200);
      expect(submitted).toMatchObject({ id: refundId, status: 'submitted', providerRefundId: effect.detail!.id, failureReason: null });
      expect(stripe.payments.get(paymentIntentId)!.refunds.map((r) => r.id)).toEqual([effect.detail!.id]);
      const { rows: after } = await db.query<{ status: string }>(`SELECT status FROM outbox_message WHERE idempotency_key = $1`, [refundId]);
      expect(after).toEqual([{ status: 'dispatched' }]);
      // The money moves by the provider's word only: nothing refunded yet.
      const order = await adminApi(second.port, ADMIN, 'GET', `/orders/${orderId}`);
      expect(order.body.payments.map((p: { status: string; refundedAmount: string }) => [p.status, p.refundedAmount])).toEqual([['succeeded', '0.00']]);

      // The history: the refund's moves once each, and the whole history sound.
      const history = await adminApi(second.port, ADMIN, 'GET', `/orders/${orderId}/history`);
      const refundMoves = (history.body.items as Array<Record<string, unknown>>).filter((i) => i.entity === 'refund').map(({ at, ...rest }) => rest);
      expect(refundMoves).toEqual([
        { entity: 'refund', entityId: refundId, from: null, to: 'requested', cause: { kind: 'api', action: 'refund' } },
        { entity: 'refund', entityId: refundId, from: 'requested', to: 'submitted', cause: { kind: 'provider-api', commandId: refundId } },
      ]);
      expect(await orderHistoryProblems((path) => adminApi(second.port, ADMIN, 'GET', path), orderId)).toEqual([]);
    },
    TEST_TIMEOUT,
  );
});
