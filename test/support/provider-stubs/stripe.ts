import { signedHeaders } from '../../../src/testing/sign';
import { CURRENT_API_VERSION, OLD_API_VERSION, published, stripeId, StripeApiVersion } from '../../fixtures/stripe';
import type { ProviderApiStub, StubAnswer, StubRequest } from '../provider-api-stub';

type Json = Record<string, any>;

/**
 * Stripe's API as the commands use it (docs/commands.md#stripe), on a ProviderApiStub:
 * `POST /v1/refunds`, `POST /v1/payment_intents/{id}/capture` and `/cancel`, keyed by the
 * `Idempotency-Key` header, answering the objects Stripe publishes (test/fixtures/stripe, the
 * current API version) with ids in Stripe's form (`re_…`, `pi_…`, `ch_…`). Bodies arrive
 * form-encoded, as the official client sends them. A Connect payment (`account`) is found only
 * with its `Stripe-Account` header, as on Stripe.
 */
export interface StripeStubPayment {
  id: string;
  chargeId: string;
  /** Integer minor units. */
  amount: number;
  /** Lower case, as Stripe writes it. */
  currency: string;
  status: 'succeeded' | 'requires_capture' | 'canceled' | 'requires_payment_method' | 'processing';
  amountReceived: number;
  /** The connected account that owns it, or null for the platform's own. */
  account: string | null;
  orderId: string | null;
  /** The refunds made, oldest first (Refund objects as answered). */
  refunds: Json[];
}

export interface StripeStub {
  /** The secret key the stub accepts (`Authorization: Bearer …`); anything else answers 401. */
  readonly apiKey: string;
  readonly payments: Map<string, StripeStubPayment>;
  /** Refund objects by id, as last answered. */
  readonly refunds: Map<string, Json>;
  /** The `status` the next refunds are created with (default `succeeded`: a card refund). */
  refundStatus: 'succeeded' | 'pending' | 'failed';
  /** Adds a PaymentIntent: succeeded (captured in full) by default, or `requires_capture` (manual capture). */
  addPayment(opts?: Partial<Pick<StripeStubPayment, 'id' | 'amount' | 'currency' | 'status' | 'account' | 'orderId'>>): StripeStubPayment;
}

export const STRIPE_STUB_KEY = 'sk_test_51StubKey0000000000000000000000000000';

function stripeError(status: number, error: Json): StubAnswer {
  return { status, body: { error: { type: 'invalid_request_error', ...error } }, headers: { 'request-id': stripeId('req') } };
}

/** The form body the official client sends (`metadata[reason]=…`), as flat fields and metadata. */
function formOf(request: StubRequest): { fields: Record<string, string>; metadata: Record<string, string> } {
  const fields: Record<string, string> = {};
  const metadata: Record<string, string> = {};
  for (const [k, v] of new URLSearchParams(request.text)) {
    const m = /^metadata\[(.+)\]$/.exec(k);
    if (m) metadata[m[1]] = v;
    else fields[k] = v;
  }
  return { fields, metadata };
}

function money(minor: number, currency: string): string {
  return `${currency.toUpperCase()} ${(minor / 100).toFixed(2)}`;
}

/** The PaymentIntent as the API answers it (the published object, current version). */
export function paymentIntentObject(p: StripeStubPayment): Json {
  return Object.assign(published(CURRENT_API_VERSION, 'payment_intent'), {
    id: p.id,
    amount: p.amount,
    amount_capturable: p.status === 'requires_capture' ? p.amount : 0,
    amount_received: p.amountReceived,
    canceled_at: p.status === 'canceled' ? Math.floor(Date.now() / 1000) : null,
    capture_method: 'automatic_async',
    currency: p.currency,
    latest_charge: p.chargeId,
    // The stub's payments never had an attempt fail (the published object shows one).
    last_payment_error: null,
    metadata: p.orderId === null ? {} : { order_id: p.orderId },
    status: p.status,
  });
}

export function addStripeRoutes(stub: ProviderApiStub, options: { apiKey?: string } = {}): StripeStub {
  const apiKey = options.apiKey ?? STRIPE_STUB_KEY;
  const state: StripeStub = {
    apiKey,
    payments: new Map(),
    refunds: new Map(),
    refundStatus: 'succeeded',
    addPayment(opts = {}) {
      const status = opts.status ?? 'succeeded';
      const amount = opts.amount ?? 4990;
      const p: StripeStubPayment = {
        id: opts.id ?? stripeId('pi'),
        chargeId: stripeId('ch'),
        amount,
        currency: opts.currency ?? 'eur',
        status,
        amountReceived: status === 'succeeded' ? amount : 0,
        account: opts.account ?? null,
        orderId: opts.orderId ?? null,
        refunds: [],
      };
      state.payments.set(p.id, p);
      return p;
    },
  };

  /** The request's key and account checked, the PaymentIntent it names (or the answer that refuses it). */
  const find = (request: StubRequest, id: string | undefined, param: string): StripeStubPayment | StubAnswer => {
    if (request.headers.authorization !== `Bearer ${apiKey}`) {
      const given = String(request.headers.authorization ?? '').replace(/^Bearer /, '');
      return stripeError(401, { message: `Invalid API Key provided: ${given.slice(0, 8)}****${given.slice(-4)}` });
    }
    const p = id === undefined ? undefined : state.payments.get(id);
    const account = typeof request.headers['stripe-account'] === 'string' ? request.headers['stripe-account'] : null;
    if (!p || p.account !== account) {
      return stripeError(404, { code: 'resource_missing', doc_url: 'https://stripe.com/docs/error-codes/resource-missing', message: `No such payment_intent: '${id}'`, param });
    }
    return p;
  };

  stub.route({
    method: 'POST',
    path: /^\/v1\/refunds$/,
    key: 'idempotency-key',
    handle(request) {
      const { fields, metadata } = formOf(request);
      const p = find(request, fields.payment_intent, 'payment_intent');
      if (!('chargeId' in p)) return p;
      if (p.status !== 'succeeded') {
        return stripeError(400, { code: 'charge_not_refundable', message: `This PaymentIntent (${p.id}) does not have a successful charge to refund.` });
      }
      const refunded = p.refunds.filter((r) => r.status !== 'failed').reduce((sum, r) => sum + (r.amount as number), 0);
      const amount = fields.amount === undefined ? p.amountReceived - refunded : Number(fields.amount);
      if (amount > p.amountReceived - refunded) {
        return stripeError(400, {
          code: 'amount_too_large',
          message: `Refund amount (${money(amount, p.currency)}) is greater than unrefunded amount on charge (${money(p.amountReceived - refunded, p.currency)})`,
          param: 'amount',
        });
      }
      const status = state.refundStatus;
      const refund = Object.assign(published(CURRENT_API_VERSION, 'refund'), {
        id: stripeId('re'),
        amount,
        balance_transaction: status === 'failed' ? null : stripeId('txn'),
        charge: p.chargeId,
        created: Math.floor(Date.now() / 1000),
        currency: p.currency,
        metadata,
        payment_intent: p.id,
        reason: null,
        status,
        ...(status === 'failed' ? { failure_reason: 'expired_or_canceled_card' } : {}),
      });
      p.refunds.push(refund);
      state.refunds.set(refund.id, refund);
      stub.effect('refund', request.key, { id: refund.id, paymentIntent: p.id, amount, account: p.account, metadata });
      return { status: 200, body: refund, headers: { 'request-id': stripeId('req') } };
    },
  });

  stub.route({
    method: 'POST',
    path: /^\/v1\/payment_intents\/([^/]+)\/capture$/,
    key: 'idempotency-key',
    handle(request, match) {
      const p = find(request, decodeURIComponent(match[1]), 'intent');
      if (!('chargeId' in p)) return p;
      if (p.status !== 'requires_capture') {
        return stripeError(400, {
          code: 'payment_intent_unexpected_state',
          message: `This PaymentIntent's amount could not be captured because it has a status of ${p.status}. Only a PaymentIntent with one of the following statuses may be captured: requires_capture.`,
        });
      }
      const { fields } = formOf(request);
      const amount = fields.amount_to_capture === undefined ? p.amount : Number(fields.amount_to_capture);
      if (amount > p.amount) {
        return stripeError(400, { code: 'amount_too_large', message: `The amount to capture (${amount}) is greater than the amount capturable (${p.amount}).`, param: 'amount_to_capture' });
      }
      p.status = 'succeeded';
      p.amountReceived = amount;
      stub.effect('capture', request.key, { paymentIntent: p.id, amount, account: p.account });
      return { status: 200, body: paymentIntentObject(p) };
    },
  });

  stub.route({
    method: 'POST',
    path: /^\/v1\/payment_intents\/([^/]+)\/cancel$/,
    key: 'idempotency-key',
    handle(request, match) {
      const p = find(request, decodeURIComponent(match[1]), 'intent');
      if (!('chargeId' in p)) return p;
      if (p.status === 'succeeded' || p.status === 'canceled') {
        return stripeError(400, {
          code: 'payment_intent_unexpected_state',
          message: `You cannot cancel this PaymentIntent because it has a status of ${p.status}. Only a PaymentIntent with one of the following statuses may be canceled: requires_payment_method, requires_capture, requires_confirmation, requires_action, processing.`,
        });
      }
      p.status = 'canceled';
      stub.effect('void', request.key, { paymentIntent: p.id, account: p.account });
      return { status: 200, body: { ...paymentIntentObject(p), cancellation_reason: null } };
    },
  });

  // Polling's read (docs/operations.md#when-webhooks-stop): the PaymentIntent, its latest charge
  // expanded when asked (`expand[]=latest_charge`), as Stripe answers a retrieve.
  stub.route({
    method: 'GET',
    path: /^\/v1\/payment_intents\/([^/]+)$/,
    handle(request, match) {
      const p = find(request, decodeURIComponent(match[1]), 'intent');
      if (!('chargeId' in p)) return p;
      const intent = paymentIntentObject(p);
      const expand = new URLSearchParams(request.url.split('?')[1] ?? '').getAll('expand[]');
      if (expand.includes('latest_charge')) intent.latest_charge = chargeObject(p);
      return { status: 200, body: intent, headers: { 'request-id': stripeId('req') } };
    },
  });

  return state;
}

/** The payment's charge as the API answers it (current version), its refunds counted. */
export function chargeObject(p: StripeStubPayment): Json {
  const refunded = p.refunds.filter((r) => r.status === 'succeeded').reduce((sum, r) => sum + (r.amount as number), 0);
  return Object.assign(published(CURRENT_API_VERSION, 'charge'), {
    id: p.chargeId,
    amount: p.amount,
    amount_captured: p.amountReceived,
    amount_refunded: refunded,
    captured: p.amountReceived > 0,
    currency: p.currency,
    metadata: p.orderId === null ? {} : { order_id: p.orderId },
    paid: p.status === 'succeeded',
    payment_intent: p.id,
    refunded: p.amountReceived > 0 && refunded === p.amountReceived,
    status: p.status === 'succeeded' ? 'succeeded' : 'pending',
  });
}

/**
 * The webhook Stripe sends once a refund made through the stub is final (for end-to-end tests):
 * - `charge.refunded` (default): the charge with the payment's cumulative `amount_refunded`; on
 *   2020-08-27 it lists its refunds (`refunds.data`), which confirms them; on the current version
 *   it does not, and `refund.updated` is what confirms the refund (send both);
 * - `refund.updated`: the Refund itself, with its status (`succeeded`, or `failed` to fail it);
 * - `refund.failed`: the Refund, failed.
 * The body is a string: send it as is, with `headers` (signed when a `whsec_` secret is given).
 */
export function stripeRefundWebhook(
  state: StripeStub,
  refundId: string,
  opts: { type?: 'charge.refunded' | 'refund.updated' | 'refund.failed'; apiVersion?: StripeApiVersion; secret?: string; eventId?: string } = {},
): { eventId: string; body: string; headers: Record<string, string> } {
  const refund = state.refunds.get(refundId);
  if (!refund) throw new Error(`the Stripe stub made no refund ${refundId}`);
  const p = state.payments.get(refund.payment_intent as string)!;
  const type = opts.type ?? 'charge.refunded';
  const version = opts.apiVersion ?? CURRENT_API_VERSION;
  let object: Json;
  if (type === 'charge.refunded') {
    const done = p.refunds.filter((r) => r.status === 'succeeded');
    const amountRefunded = done.reduce((sum, r) => sum + (r.amount as number), 0);
    object = Object.assign(published(version, 'charge'), {
      id: p.chargeId,
      amount: p.amountReceived,
      amount_captured: p.amountReceived,
      amount_refunded: amountRefunded,
      captured: true,
      currency: p.currency,
      metadata: p.orderId === null ? {} : { order_id: p.orderId },
      paid: true,
      payment_intent: p.id,
      refunded: amountRefunded === p.amountReceived,
      status: 'succeeded',
    });
    if (version === OLD_API_VERSION) {
      object.refunds = { object: 'list', data: [...done].reverse(), has_more: false, total_count: done.length, url: `/v1/charges/${p.chargeId}/refunds` };
    } else delete object.refunds;
  } else {
    object = type === 'refund.failed' ? { ...refund, status: 'failed', failure_reason: refund.failure_reason ?? 'declined' } : { ...refund };
  }
  const eventId = opts.eventId ?? stripeId('evt');
  const event = {
    ...(p.account ? { account: p.account } : {}),
    ...published(version, 'event'),
    api_version: version,
    created: Math.floor(Date.now() / 1000),
    data: { object },
    id: eventId,
    pending_webhooks: 1,
    type,
  };
  const body = JSON.stringify(event);
  return { eventId, body, headers: opts.secret ? signedHeaders('stripe', opts.secret, body) : { 'content-type': 'application/json' } };
}
