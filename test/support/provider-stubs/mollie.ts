import { randomBytes } from 'node:crypto';
import type { ProviderApiStub, StubAnswer, StubRequest } from '../provider-api-stub';

/**
 * Mollie's Payments API as the payment commands use it, on a ProviderApiStub (serve it with
 * `new ProviderApiStub({ tls: true })`: the client speaks HTTPS only). Shapes as documented at
 * https://docs.mollie.com/reference/create-refund, /create-capture, /cancel-payment and
 * /get-payment; the key is Mollie's `Idempotency-Key` header on every write.
 *
 * - `POST /v2/payments/{id}/refunds` → `201` a Refund (`re_…`, `pending`); `422` when the amount
 *   exceeds what remains, `404` for an unknown payment;
 * - `POST /v2/payments/{id}/captures` → `201` a Capture (`cpt_…`) of an `authorized` payment;
 * - `DELETE /v2/payments/{id}` → `200` the payment `canceled`, when it is cancelable;
 * - `GET /v2/payments/{id}?embed=refunds` → the payment with its refunds, as the provider's hint
 *   fetch reads it (what confirms a refund: `mollieRefundSettled` then a hint, `mollieHint`).
 *
 * A wrong key answers `401`, as Mollie does.
 */
export interface MollieApi {
  readonly apiKey: string;
  /** Adds a payment (default `paid`, 49.90 EUR) and returns its id (`tr_…`). */
  addPayment(options?: { id?: string; value?: string; currency?: string; status?: 'open' | 'authorized' | 'paid' | 'canceled'; orderId?: string }): string;
  /** The payment as `GET /v2/payments/{id}?embed=refunds` answers it. */
  payment(id: string): Record<string, unknown>;
  /** Refunds made through the stub, by id. */
  readonly refunds: Map<string, Record<string, any>>;
  /** The status a new refund is answered with (Mollie's default `pending`; `refunded` when it went back at once). */
  newRefundStatus: 'queued' | 'pending' | 'processing' | 'refunded';
}

const PROFILE = 'pfl_StubProf01';
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** An id in Mollie's form: a prefix and ten letters or digits (`re_4qqhO89gsT`). */
export function mollieId(prefix: string): string {
  return `${prefix}_${[...randomBytes(10)].map((b) => ALPHABET[b % ALPHABET.length]).join('')}`;
}

/** A Mollie error body (https://docs.mollie.com/overview/handling-errors). */
function mollieError(status: number, title: string, detail: string, field?: string): StubAnswer {
  return {
    status,
    headers: { 'content-type': 'application/hal+json' },
    body: { status, title, detail, ...(field ? { field } : {}), _links: { documentation: { href: 'https://docs.mollie.com/overview/handling-errors', type: 'text/html' } } },
  };
}

/** Cents of a decimal string ("49.90" → 4990), for the stub's arithmetic. */
function cents(value: string): number {
  const [whole, fraction = ''] = value.split('.');
  return Number(whole) * 100 + Number(fraction.padEnd(2, '0').slice(0, 2));
}

function decimal(cent: number): string {
  return (cent / 100).toFixed(2);
}

const link = (href: string, type = 'application/hal+json') => ({ href: `https://api.mollie.com/v2/${href}`, type });

/** Adds Mollie's routes to `stub`; returns its payments and refunds. */
export function addMollieApi(stub: ProviderApiStub, options: { apiKey?: string } = {}): MollieApi {
  const apiKey = options.apiKey ?? 'test_cmdStubKey7Hq2Lm9Xw4Rt8Zp3';
  const payments = new Map<string, Record<string, any>>();
  const refunds = new Map<string, Record<string, any>>();

  const authorized = (request: StubRequest) => request.headers.authorization === `Bearer ${apiKey}`;
  const unauthorized = () => mollieError(401, 'Unauthorized Request', 'Missing authentication, or failed to authenticate');
  const notFound = (id: string) => mollieError(404, 'Not Found', `No payment exists with token ${id}.`);

  function refundedCents(paymentId: string): number {
    let sum = 0;
    for (const r of refunds.values()) if (r.paymentId === paymentId && r.status !== 'failed' && r.status !== 'canceled') sum += cents(r.amount.value);
    return sum;
  }

  function present(payment: Record<string, any>, embedRefunds: boolean): Record<string, unknown> {
    const own = [...refunds.values()].filter((r) => r.paymentId === payment.id);
    const refunded = refundedCents(payment.id);
    const money = (cent: number) => ({ value: decimal(cent), currency: payment.amount.currency });
    return {
      ...payment,
      ...(payment.status === 'paid' ? { amountRefunded: money(refunded), amountRemaining: money(cents(payment.amount.value) - refunded) } : {}),
      ...(embedRefunds && own.length > 0 ? { _embedded: { refunds: own } } : {}),
    };
  }

  const api: MollieApi = {
    apiKey,
    refunds,
    newRefundStatus: 'pending',
    addPayment(opts = {}) {
      const id = opts.id ?? mollieId('tr');
      const status = opts.status ?? 'paid';
      payments.set(id, {
        resource: 'payment',
        id,
        mode: 'test',
        createdAt: '2026-12-01T10:00:00+00:00',
        amount: { value: opts.value ?? '49.90', currency: opts.currency ?? 'EUR' },
        description: `Order ${opts.orderId ?? id}`,
        method: 'creditcard',
        metadata: opts.orderId ? { order_id: opts.orderId } : null,
        status,
        isCancelable: status === 'open' || status === 'authorized',
        ...(status === 'paid' ? { paidAt: '2026-12-01T10:02:00+00:00' } : {}),
        ...(status === 'authorized' ? { authorizedAt: '2026-12-01T10:01:00+00:00', captureMode: 'manual' } : {}),
        profileId: PROFILE,
        sequenceType: 'oneoff',
        redirectUrl: 'https://shop.example.org/return',
        webhookUrl: 'https://shop.example.org/webhooks/mollie-main',
        _links: { self: link(`payments/${id}`), documentation: { href: 'https://docs.mollie.com/reference/get-payment', type: 'text/html' } },
      });
      return id;
    },
    payment(id) {
      const payment = payments.get(id);
      if (!payment) throw new Error(`the stub has no payment ${id}`);
      return present(payment, true);
    },
  };

  stub.route({
    method: 'POST',
    path: /^\/v2\/payments\/([^/]+)\/refunds$/,
    key: 'idempotency-key',
    handle(request, [, paymentId]) {
      if (!authorized(request)) return unauthorized();
      const payment = payments.get(paymentId);
      if (!payment) return notFound(paymentId);
      const amount = request.json?.amount;
      if (typeof amount?.value !== 'string' || amount.currency !== payment.amount.currency) {
        return mollieError(422, 'Unprocessable Entity', 'The amount is invalid or its currency is not the payment\'s', 'amount');
      }
      if (payment.status !== 'paid') return mollieError(422, 'Unprocessable Entity', 'The payment cannot be refunded', 'paymentId');
      if (cents(amount.value) > cents(payment.amount.value) - refundedCents(paymentId)) {
        return mollieError(422, 'Unprocessable Entity', 'The amount requested for refund exceeds the amount remaining', 'amount');
      }
      const id = mollieId('re');
      const refund = {
        resource: 'refund',
        id,
        mode: 'test',
        description: typeof request.json.description === 'string' ? request.json.description : '',
        amount: { value: amount.value, currency: amount.currency },
        status: api.newRefundStatus,
        metadata: null,
        paymentId,
        createdAt: '2026-12-01T11:00:00+00:00',
        _links: { self: link(`payments/${paymentId}/refunds/${id}`), payment: link(`payments/${paymentId}`), documentation: { href: 'https://docs.mollie.com/reference/create-refund', type: 'text/html' } },
      };
      refunds.set(id, refund);
      stub.effect('refund', request.key, { paymentId, refundId: id, amount: amount.value, currency: amount.currency, description: refund.description });
      return { status: 201, headers: { 'content-type': 'application/hal+json' }, body: refund };
    },
  });

  stub.route({
    method: 'POST',
    path: /^\/v2\/payments\/([^/]+)\/captures$/,
    key: 'idempotency-key',
    handle(request, [, paymentId]) {
      if (!authorized(request)) return unauthorized();
      const payment = payments.get(paymentId);
      if (!payment) return notFound(paymentId);
      if (payment.status !== 'authorized') return mollieError(422, 'Unprocessable Entity', 'The payment is not authorized and cannot be captured', 'paymentId');
      const amount = request.json?.amount ?? payment.amount;
      const id = mollieId('cpt');
      payment.status = 'paid';
      payment.paidAt = '2026-12-01T10:30:00+00:00';
      payment.isCancelable = false;
      stub.effect('capture', request.key, { paymentId, captureId: id, amount: amount.value, currency: amount.currency });
      return {
        status: 201,
        headers: { 'content-type': 'application/hal+json' },
        body: {
          resource: 'capture',
          id,
          mode: 'test',
          amount,
          status: 'pending',
          paymentId,
          createdAt: '2026-12-01T10:30:00+00:00',
          _links: { self: link(`payments/${paymentId}/captures/${id}`), payment: link(`payments/${paymentId}`), documentation: { href: 'https://docs.mollie.com/reference/create-capture', type: 'text/html' } },
        },
      };
    },
  });

  stub.route({
    method: 'DELETE',
    path: /^\/v2\/payments\/([^/]+)$/,
    key: 'idempotency-key',
    handle(request, [, paymentId]) {
      if (!authorized(request)) return unauthorized();
      const payment = payments.get(paymentId);
      if (!payment) return notFound(paymentId);
      if (!payment.isCancelable) return mollieError(422, 'Unprocessable Entity', 'The payment cannot be canceled', 'id');
      payment.status = 'canceled';
      payment.canceledAt = '2026-12-01T10:40:00+00:00';
      payment.isCancelable = false;
      stub.effect('void', request.key, { paymentId });
      return { status: 200, headers: { 'content-type': 'application/hal+json' }, body: present(payment, false) };
    },
  });

  stub.route({
    method: 'GET',
    path: /^\/v2\/payments\/([^/]+)$/,
    handle(request, [, paymentId]) {
      if (!authorized(request)) return unauthorized();
      const payment = payments.get(paymentId);
      if (!payment) return notFound(paymentId);
      const embed = new URL(request.url, 'https://stub').searchParams.get('embed') ?? '';
      return { status: 200, headers: { 'content-type': 'application/hal+json' }, body: present(payment, embed.split(',').includes('refunds')) };
    },
  });

  return api;
}

/** Moves a refund made through the stub to where Mollie ends it (`refunded`, `failed`, `canceled`). */
export function mollieRefundSettled(api: MollieApi, refundId: string, status: 'refunded' | 'failed' | 'canceled'): void {
  const refund = api.refunds.get(refundId);
  if (!refund) throw new Error(`the stub made no refund ${refundId}`);
  refund.status = status;
}

/**
 * The webhook body that confirms a refund made through the stub: Mollie's hint `id=tr_…` (Mollie
 * signs nothing; the provider fetches the payment, whose embedded refund then says `refunded`).
 * Settle the refund first (`mollieRefundSettled`).
 */
export function mollieHint(paymentId: string): string {
  return `id=${paymentId}`;
}
