import { randomBytes, randomUUID } from 'node:crypto';
import type { ProviderApiStub, StubAnswer, StubRequest } from '../provider-api-stub';

/**
 * Square's Payments and Refunds API as the stub answers it (developer.squareup.com/reference/square):
 * `GET /v2/payments/{id}` (GetPayment: `{ payment }`, or `404 NOT_FOUND`);
 * `POST /v2/refunds` (RefundPayment), idempotent on the body's `idempotency_key`;
 * `POST /v2/payments/{id}/complete` and `/cancel`, which take no key: they act on the payment's
 * state, so a repeat answers the payment as it is now, and the effect happens once. A request
 * without a bearer token is `401 UNAUTHORIZED`, as Square answers it.
 */
export interface SquareStubPayment {
  id: string;
  status: 'APPROVED' | 'PENDING' | 'COMPLETED' | 'CANCELED' | 'FAILED';
  amount: number;
  currency: string;
  referenceId?: string;
  refundIds: string[];
  refunded: number;
}

export interface SquareStubRefund {
  id: string;
  paymentId: string;
  status: 'PENDING' | 'COMPLETED' | 'REJECTED' | 'FAILED';
  amount: number;
  currency: string;
  reason: string | null;
}

export interface SquareStub {
  payments: Map<string, SquareStubPayment>;
  refunds: SquareStubRefund[];
  /** A payment the API knows (APPROVED: authorized; COMPLETED: captured). */
  addPayment(id: string, fields: Partial<Omit<SquareStubPayment, 'id'>>): SquareStubPayment;
  /** The status RefundPayment answers new refunds with (Square's is PENDING; a card refund may be COMPLETED at once). */
  refundStatus: SquareStubRefund['status'];
}

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const base62 = (n: number) => [...randomBytes(n)].map((b) => BASE62[b % 62]).join('');

/** A Square payment id (29 characters, as Square's). */
export function squarePaymentId(): string {
  return `${base62(27)}ZY`;
}

const LOCATION = 'L88917AVBK2S5';
const error = (status: number, category: string, code: string, detail: string): StubAnswer => ({ status, body: { errors: [{ category, code, detail }] } });

function paymentBody(p: SquareStubPayment): Record<string, unknown> {
  const money = (amount: number) => ({ amount, currency: p.currency });
  return {
    payment: {
      id: p.id,
      status: p.status,
      amount_money: money(p.amount),
      total_money: money(p.amount),
      approved_money: money(p.amount),
      ...(p.refunded > 0 ? { refunded_money: money(p.refunded) } : {}),
      ...(p.refundIds.length > 0 ? { refund_ids: [...p.refundIds] } : {}),
      ...(p.referenceId === undefined ? {} : { reference_id: p.referenceId }),
      location_id: LOCATION,
      source_type: 'CARD',
      // What the card tells: never needed by the service, so never copied out of an answer.
      card_details: {
        status: p.status === 'APPROVED' || p.status === 'PENDING' ? 'AUTHORIZED' : p.status === 'COMPLETED' ? 'CAPTURED' : p.status,
        card: { card_brand: 'VISA', last_4: '1111', exp_month: 11, exp_year: 2030, fingerprint: 'sq-1-stub-fingerprint', bin: '411111' },
        entry_method: 'KEYED',
      },
      version_token: 'TPtNEOBOa6Qq6E3C3IjckSVOM6b3hMbfhjvTxHBQUsB6o',
      created_at: '2026-12-07T10:00:00.000Z',
      updated_at: new Date().toISOString(),
    },
  };
}

function refundBody(r: SquareStubRefund): Record<string, unknown> {
  const now = new Date().toISOString();
  return {
    id: r.id,
    status: r.status,
    amount_money: { amount: r.amount, currency: r.currency },
    payment_id: r.paymentId,
    location_id: LOCATION,
    ...(r.reason === null ? {} : { reason: r.reason }),
    created_at: now,
    updated_at: now,
  };
}

/** Adds Square's refund, complete and cancel routes to a stub; its payments are registered with `addPayment`. */
export function addSquareRoutes(stub: ProviderApiStub): SquareStub {
  const square: SquareStub = {
    payments: new Map(),
    refunds: [],
    refundStatus: 'PENDING',
    addPayment(id, fields) {
      const payment: SquareStubPayment = { id, status: 'COMPLETED', amount: 4990, currency: 'EUR', refundIds: [], refunded: 0, ...fields };
      square.payments.set(id, payment);
      return payment;
    },
  };
  const unauthorized = (r: StubRequest) => !/^Bearer .+/.test(String(r.headers.authorization ?? ''));
  const notFound = (id: string) => error(404, 'INVALID_REQUEST_ERROR', 'NOT_FOUND', `Could not find payment with id: ${id}`);
  const UNAUTHORIZED = error(401, 'AUTHENTICATION_ERROR', 'UNAUTHORIZED', 'This request could not be authorized.');

  stub.route({
    method: 'POST',
    path: /^\/v2\/refunds$/,
    key: 'body:idempotency_key',
    handle(request) {
      if (unauthorized(request)) return UNAUTHORIZED;
      const body = (request.json ?? {}) as { payment_id?: string; amount_money?: { amount?: number; currency?: string }; reason?: string };
      if (request.key === null) return error(400, 'INVALID_REQUEST_ERROR', 'MISSING_REQUIRED_PARAMETER', 'Field must be set');
      const payment = square.payments.get(String(body.payment_id));
      if (!payment) return notFound(String(body.payment_id));
      const amount = Number(body.amount_money?.amount);
      if (payment.status !== 'COMPLETED') return error(400, 'INVALID_REQUEST_ERROR', 'PAYMENT_NOT_REFUNDABLE', `Payment ${payment.id} is not completed.`);
      if (!(amount > 0) || amount > payment.amount - payment.refunded) {
        return error(400, 'INVALID_REQUEST_ERROR', 'REFUND_AMOUNT_INVALID', 'The requested refund amount exceeds the amount available to refund.');
      }
      const refund: SquareStubRefund = {
        id: `${payment.id}_${base62(43)}`,
        paymentId: payment.id,
        status: square.refundStatus,
        amount,
        currency: String(body.amount_money?.currency),
        reason: typeof body.reason === 'string' ? body.reason : null,
      };
      square.refunds.push(refund);
      payment.refundIds.push(refund.id);
      if (refund.status === 'COMPLETED') payment.refunded += amount;
      stub.effect('refund', request.key, { ...refund });
      return { status: 200, body: { refund: refundBody(refund) } };
    },
  });

  /** CompletePayment / CancelPayment: the payment's state decides; the same request again answers it as it is. */
  stub.route({
    method: 'GET',
    path: /^\/v2\/payments\/([^/]+)$/,
    handle(request, match) {
      if (unauthorized(request)) return UNAUTHORIZED;
      const payment = square.payments.get(decodeURIComponent(match[1]));
      return payment ? { status: 200, body: paymentBody(payment) } : notFound(decodeURIComponent(match[1]));
    },
  });

  const transition = (kind: 'capture' | 'void', segment: 'complete' | 'cancel', to: 'COMPLETED' | 'CANCELED') =>
    stub.route({
      method: 'POST',
      path: new RegExp(`^/v2/payments/([A-Za-z0-9]+)/${segment}$`),
      handle(request, match) {
        if (unauthorized(request)) return UNAUTHORIZED;
        const payment = square.payments.get(match[1]);
        if (!payment) return notFound(match[1]);
        if (payment.status === to) return { status: 200, body: paymentBody(payment) };
        if (payment.status !== 'APPROVED') {
          return error(400, 'INVALID_REQUEST_ERROR', 'BAD_REQUEST', `Payment ${payment.id} is ${payment.status} and cannot be ${segment === 'complete' ? 'completed' : 'canceled'}.`);
        }
        payment.status = to;
        stub.effect(kind, null, { paymentId: payment.id });
        return { status: 200, body: paymentBody(payment) };
      },
    });
  transition('capture', 'complete', 'COMPLETED');
  transition('void', 'cancel', 'CANCELED');
  return square;
}

/**
 * The notifications Square sends once a refund the stub took has gone through: `refund.updated`
 * with the refund COMPLETED (which confirms it by id), and the `payment.updated` whose
 * `refunded_money` moves the payment. Sign each with `signedHeaders('square', …, { notificationUrl })`.
 */
export function squareRefundWebhooks(square: SquareStub, refund: SquareStubRefund, merchantId: string): { refundUpdated: string; paymentUpdated: string } {
  const payment = square.payments.get(refund.paymentId);
  if (!payment) throw new Error(`no payment ${refund.paymentId} in the stub`);
  if (refund.status !== 'COMPLETED') {
    refund.status = 'COMPLETED';
    payment.refunded += refund.amount;
  }
  const created_at = new Date().toISOString();
  return {
    refundUpdated: JSON.stringify({
      merchant_id: merchantId,
      type: 'refund.updated',
      event_id: randomUUID(),
      created_at,
      data: { type: 'refund', id: refund.id, object: { refund: refundBody(refund) } },
    }),
    paymentUpdated: JSON.stringify({
      merchant_id: merchantId,
      type: 'payment.updated',
      event_id: randomUUID(),
      created_at,
      data: { type: 'payment', id: payment.id, object: paymentBody(payment) },
    }),
  };
}
