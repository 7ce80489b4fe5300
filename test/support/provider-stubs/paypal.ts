import { randomBytes, randomUUID } from 'node:crypto';
import type { ProviderApiStub, StubAnswer, StubRequest } from '../provider-api-stub';

/**
 * PayPal's REST API as the payment commands use it, on a ProviderApiStub (serve it with
 * `new ProviderApiStub({ tls: true })`: a paypal endpoint's `apiBaseUrl` must be https). Shapes
 * as documented at https://developer.paypal.com/docs/api/payments/v2/ and /orders/v2/ (the default
 * `Prefer: return=minimal` representations); the key is the `PayPal-Request-Id` header on every write.
 *
 * - `POST /v1/oauth2/token` (Basic client id and secret, `grant_type=client_credentials`) → a Bearer token;
 * - `GET /v2/checkout/orders/{id}` ("Show order details") → the order with its purchase unit's
 *   authorizations, captures and refunds (`404 RESOURCE_NOT_FOUND` for an unknown id);
 * - `POST /v2/payments/captures/{id}/refund` → `201` a refund (`COMPLETED` by default);
 *   `422 REFUND_AMOUNT_EXCEEDED` past what is left of the capture;
 * - `POST /v2/payments/authorizations/{id}/capture` → `201` a capture; `…/void` → `204`;
 * - `POST /v2/checkout/orders/{id}/capture` → `201` the order `COMPLETED`.
 *
 * A wrong client secret answers `401 invalid_client`, a wrong token `401 INVALID_TOKEN`.
 */
export interface PaypalApi {
  readonly clientId: string;
  readonly clientSecret: string;
  /** Tokens handed out (each `POST /v1/oauth2/token` that succeeded). */
  readonly tokens: string[];
  /**
   * Adds an order and returns its ids: a capture for `captured`, an authorization for `authorized`,
   * none for `created` (not approved by the buyer yet) and `approved`. `customId`: the merchant's
   * `custom_id` of the purchase unit (its order id or reference).
   */
  addOrder(options?: { state?: 'captured' | 'authorized' | 'approved' | 'created'; intent?: 'CAPTURE' | 'AUTHORIZE'; value?: string; currency?: string; customId?: string }): { orderId: string; captureId?: string; authorizationId?: string };
  /** An order as the stub keeps it, to move it on as PayPal would (a capture declined, an authorization voided…). */
  order(orderId: string): StubOrder;
  /** Refunds made through the stub, by id. */
  readonly refunds: Map<string, { id: string; captureId: string; value: string; currency: string; status: string; noteToPayer: string | null }>;
  /** The status a new refund is answered with (`COMPLETED` as PayPal mostly does; `PENDING` when the money is on its way). */
  newRefundStatus: 'COMPLETED' | 'PENDING' | 'FAILED';
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** An id in PayPal's form: 17 upper-case letters and digits (`1JU08902781691411`). */
export function paypalId(): string {
  return [...randomBytes(17)].map((b) => ALNUM[b % ALNUM.length]).join('');
}

const api = (path: string, rel: string, method = 'GET') => ({ href: `https://api.paypal.com${path}`, rel, method });

/** A PayPal error body (https://developer.paypal.com/api/rest/responses/). */
function paypalError(status: number, name: string, message: string, issue?: string, description?: string): StubAnswer {
  return {
    status,
    body: {
      name,
      message,
      debug_id: randomBytes(7).toString('hex'),
      ...(issue ? { details: [{ issue, description }] } : {}),
      links: [{ href: `https://developer.paypal.com/docs/api/payments/v2/#error-${issue ?? name}`, rel: 'information_link' }],
    },
  };
}

/** Cents of a decimal string ("49.90" → 4990). */
function cents(value: string): number {
  const [whole, fraction = ''] = value.split('.');
  return Number(whole) * 100 + Number(fraction.padEnd(2, '0').slice(0, 2));
}

export interface StubOrder {
  id: string;
  intent: 'CAPTURE' | 'AUTHORIZE';
  /** Orders v2 statuses: `CREATED`, `PAYER_ACTION_REQUIRED`, `APPROVED`, `COMPLETED`, `VOIDED`. */
  status: string;
  value: string;
  currency: string;
  customId: string | null;
  /** `CREATED`, `CAPTURED`, `PARTIALLY_CAPTURED`, `VOIDED`, `DENIED`, `EXPIRED`, `PENDING`. */
  authorizations: Array<{ id: string; status: string }>;
  /** `COMPLETED`, `PENDING`, `DECLINED`, `FAILED`, `PARTIALLY_REFUNDED`, `REFUNDED`. */
  captures: Array<{ id: string; status: string; value: string }>;
}

/** Adds PayPal's routes to `stub`; returns its orders and refunds. */
export function addPaypalApi(stub: ProviderApiStub, options: { clientId?: string; clientSecret?: string } = {}): PaypalApi {
  const clientId = options.clientId ?? 'AeStubClientId0rSbxKx3m9Q1cW7vL2pT8yN4';
  const clientSecret = options.clientSecret ?? 'EKstubSecret5Hh2Jq8Rz1Vb6Nm3Xc9Lp4Tw7Gd0Fs';
  const orders = new Map<string, StubOrder>();
  const byCapture = new Map<string, StubOrder>();
  const byAuthorization = new Map<string, StubOrder>();
  const tokens: string[] = [];

  const bearer = (request: StubRequest) => {
    const value = request.headers.authorization;
    return typeof value === 'string' && value.startsWith('Bearer ') && tokens.includes(value.slice(7));
  };
  const invalidToken = () => ({ status: 401, body: { name: 'AUTHENTICATION_FAILURE', message: 'Authentication failed due to invalid authentication credentials or a missing Authorization header.', links: [] } });
  const notFound = () => paypalError(404, 'RESOURCE_NOT_FOUND', 'The specified resource does not exist.', 'INVALID_RESOURCE_ID', 'Specified resource ID does not exist. Please check the resource ID and try again.');

  /**
   * The order as "Show order details" answers it: its purchase unit's `payments` list the
   * authorizations, captures and refunds (each refund with its `up` link to the capture it refunds).
   */
  function presentOrder(order: StubOrder): Record<string, unknown> {
    const amount = { currency_code: order.currency, value: order.value };
    const times = { create_time: '2026-12-01T10:00:00Z', update_time: '2026-12-01T10:00:05Z' };
    const payments: Record<string, unknown> = {};
    if (order.authorizations.length > 0) {
      payments.authorizations = order.authorizations.map((a) => ({
        id: a.id,
        status: a.status,
        amount,
        seller_protection: { status: 'ELIGIBLE', dispute_categories: ['ITEM_NOT_RECEIVED', 'UNAUTHORIZED_TRANSACTION'] },
        expiration_time: '2026-12-30T10:00:05Z',
        links: [api(`/v2/payments/authorizations/${a.id}`, 'self'), api(`/v2/payments/authorizations/${a.id}/capture`, 'capture', 'POST'), api(`/v2/payments/authorizations/${a.id}/void`, 'void', 'POST'), api(`/v2/checkout/orders/${order.id}`, 'up')],
        ...times,
      }));
    }
    if (order.captures.length > 0) {
      payments.captures = order.captures.map((c) => ({
        id: c.id,
        status: c.status,
        ...(c.status === 'PENDING' ? { status_details: { reason: 'PENDING_REVIEW' } } : {}),
        amount: { currency_code: order.currency, value: c.value },
        final_capture: true,
        seller_protection: { status: 'ELIGIBLE', dispute_categories: ['ITEM_NOT_RECEIVED', 'UNAUTHORIZED_TRANSACTION'] },
        seller_receivable_breakdown: { gross_amount: { currency_code: order.currency, value: c.value }, paypal_fee: { currency_code: order.currency, value: '0.35' }, net_amount: { currency_code: order.currency, value: (Math.max(cents(c.value) - 35, 0) / 100).toFixed(2) } },
        links: [api(`/v2/payments/captures/${c.id}`, 'self'), api(`/v2/payments/captures/${c.id}/refund`, 'refund', 'POST'), api(`/v2/checkout/orders/${order.id}`, 'up')],
        ...times,
      }));
    }
    const refunds = [...state.refunds.values()].filter((r) => order.captures.some((c) => c.id === r.captureId));
    if (refunds.length > 0) {
      payments.refunds = refunds.map((r) => ({
        id: r.id,
        status: r.status,
        amount: { currency_code: r.currency, value: r.value },
        links: [api(`/v2/payments/refunds/${r.id}`, 'self'), api(`/v2/payments/captures/${r.captureId}`, 'up')],
        ...times,
      }));
    }
    return {
      id: order.id,
      intent: order.intent,
      status: order.status,
      ...(order.status === 'CREATED' ? {} : { payment_source: { paypal: { email_address: 'buyer@example.com', account_id: 'QYR5Z8XDVJNXQ', account_status: 'VERIFIED', name: { given_name: 'John', surname: 'Doe' }, address: { country_code: 'DE' } } } }),
      purchase_units: [
        {
          reference_id: 'default',
          amount,
          payee: { email_address: 'merchant@example.com', merchant_id: '7KNGBPH2U58GQ' },
          ...(order.customId === null ? {} : { custom_id: order.customId }),
          ...(Object.keys(payments).length > 0 ? { payments } : {}),
        },
      ],
      create_time: '2026-12-01T10:00:00Z',
      ...(order.status === 'CREATED' ? {} : { update_time: '2026-12-01T10:00:05Z' }),
      links: [api(`/v2/checkout/orders/${order.id}`, 'self')],
    };
  }

  const state: PaypalApi = {
    clientId,
    clientSecret,
    tokens,
    refunds: new Map(),
    newRefundStatus: 'COMPLETED',
    order(orderId) {
      const order = orders.get(orderId);
      if (!order) throw new Error(`the stub has no order ${orderId}`);
      return order;
    },
    addOrder(opts = {}) {
      const stateOf = opts.state ?? 'captured';
      const intent = opts.intent ?? (stateOf === 'authorized' ? 'AUTHORIZE' : 'CAPTURE');
      const status = stateOf === 'approved' ? 'APPROVED' : stateOf === 'created' ? 'CREATED' : 'COMPLETED';
      const order: StubOrder = { id: paypalId(), intent, status, value: opts.value ?? '49.90', currency: opts.currency ?? 'EUR', customId: opts.customId ?? null, authorizations: [], captures: [] };
      orders.set(order.id, order);
      if (stateOf === 'authorized') {
        const authorizationId = paypalId();
        order.authorizations.push({ id: authorizationId, status: 'CREATED' });
        byAuthorization.set(authorizationId, order);
        return { orderId: order.id, authorizationId };
      }
      if (stateOf === 'captured') {
        const captureId = paypalId();
        order.captures.push({ id: captureId, status: 'COMPLETED', value: order.value });
        byCapture.set(captureId, order);
        return { orderId: order.id, captureId };
      }
      return { orderId: order.id };
    },
  };

  stub.route({
    method: 'POST',
    path: /^\/v1\/oauth2\/token$/,
    handle(request) {
      const expected = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
      if (request.headers.authorization !== expected) return { status: 401, body: { error: 'invalid_client', error_description: 'Client Authentication failed' } };
      if (!/(^|&)grant_type=client_credentials(&|$)/.test(request.text)) return { status: 400, body: { error: 'unsupported_grant_type', error_description: 'Grant Type is NULL' } };
      const token = `A21AA${randomBytes(24).toString('base64url')}`;
      tokens.push(token);
      return {
        status: 200,
        body: { scope: 'https://uri.paypal.com/services/payments/refund https://uri.paypal.com/services/payments/payment/authcapture', access_token: token, token_type: 'Bearer', app_id: 'APP-80W284485P519543T', expires_in: 32400, nonce: `2026-12-01T10:00:00Z${randomBytes(8).toString('hex')}` },
      };
    },
  });

  stub.route({
    method: 'GET',
    path: /^\/v2\/checkout\/orders\/([^/]+)$/,
    handle(request, [, orderId]) {
      if (!bearer(request)) return invalidToken();
      const order = orders.get(orderId);
      return order ? { status: 200, body: presentOrder(order) } : notFound();
    },
  });

  stub.route({
    method: 'POST',
    path: /^\/v2\/payments\/captures\/([^/]+)\/refund$/,
    key: 'paypal-request-id',
    handle(request, [, captureId]) {
      if (!bearer(request)) return invalidToken();
      const order = byCapture.get(captureId);
      if (!order) return notFound();
      const amount = request.json?.amount;
      const value = typeof amount?.value === 'string' ? amount.value : order.value;
      if (amount && amount.currency_code !== order.currency) {
        return paypalError(422, 'UNPROCESSABLE_ENTITY', 'The requested action could not be performed, semantically incorrect, or failed business validation.', 'REFUND_CURRENCY_MISMATCH', 'Refund must be in the same currency as the capture.');
      }
      const refunded = [...state.refunds.values()].filter((r) => r.captureId === captureId && r.status !== 'FAILED').reduce((sum, r) => sum + cents(r.value), 0);
      if (cents(value) > cents(order.value) - refunded) {
        return paypalError(422, 'UNPROCESSABLE_ENTITY', 'The requested action could not be performed, semantically incorrect, or failed business validation.', 'REFUND_AMOUNT_EXCEEDED', 'The refund amount must be less than or equal to the capture amount that has not yet been refunded.');
      }
      const id = paypalId();
      const noteToPayer = typeof request.json?.note_to_payer === 'string' ? request.json.note_to_payer : null;
      state.refunds.set(id, { id, captureId, value, currency: order.currency, status: state.newRefundStatus, noteToPayer });
      // PayPal moves the capture on with a refund that went through.
      const capture = order.captures.find((c) => c.id === captureId);
      if (capture && state.newRefundStatus === 'COMPLETED') capture.status = refunded + cents(value) >= cents(capture.value) ? 'REFUNDED' : 'PARTIALLY_REFUNDED';
      stub.effect('refund', request.key, { captureId, refundId: id, amount: value, currency: order.currency, noteToPayer });
      return {
        status: 201,
        body: {
          id,
          status: state.newRefundStatus,
          ...(state.newRefundStatus === 'FAILED' ? { status_details: { reason: 'ECHECK' } } : {}),
          links: [api(`/v2/payments/refunds/${id}`, 'self'), api(`/v2/payments/captures/${captureId}`, 'up')],
        },
      };
    },
  });

  stub.route({
    method: 'POST',
    path: /^\/v2\/payments\/authorizations\/([^/]+)\/capture$/,
    key: 'paypal-request-id',
    handle(request, [, authorizationId]) {
      if (!bearer(request)) return invalidToken();
      const order = byAuthorization.get(authorizationId);
      const authorization = order?.authorizations.find((a) => a.id === authorizationId);
      if (!order || !authorization) return notFound();
      if (authorization.status !== 'CREATED' && authorization.status !== 'PARTIALLY_CAPTURED') {
        return paypalError(422, 'UNPROCESSABLE_ENTITY', 'The requested action could not be performed, semantically incorrect, or failed business validation.', 'AUTHORIZATION_ALREADY_CAPTURED', 'Authorization has been previously captured and hence cannot be captured again.');
      }
      const value = request.json?.amount?.value ?? order.value;
      const id = paypalId();
      authorization.status = 'CAPTURED';
      order.captures.push({ id, status: 'COMPLETED', value });
      byCapture.set(id, order);
      stub.effect('capture', request.key, { authorizationId, captureId: id, amount: value, finalCapture: request.json?.final_capture });
      return { status: 201, body: { id, status: 'COMPLETED', links: [api(`/v2/payments/captures/${id}`, 'self'), api(`/v2/payments/captures/${id}/refund`, 'refund', 'POST'), api(`/v2/payments/authorizations/${authorizationId}`, 'up')] } };
    },
  });

  stub.route({
    method: 'POST',
    path: /^\/v2\/payments\/authorizations\/([^/]+)\/void$/,
    key: 'paypal-request-id',
    handle(request, [, authorizationId]) {
      if (!bearer(request)) return invalidToken();
      const authorization = byAuthorization.get(authorizationId)?.authorizations.find((a) => a.id === authorizationId);
      if (!authorization) return notFound();
      if (authorization.status !== 'CREATED') {
        return paypalError(422, 'UNPROCESSABLE_ENTITY', 'The requested action could not be performed, semantically incorrect, or failed business validation.', 'PREVIOUSLY_VOIDED', 'Authorization has been previously voided and hence cannot be voided again.');
      }
      authorization.status = 'VOIDED';
      stub.effect('void', request.key, { authorizationId });
      return { status: 204 };
    },
  });

  stub.route({
    method: 'POST',
    path: /^\/v2\/checkout\/orders\/([^/]+)\/capture$/,
    key: 'paypal-request-id',
    handle(request, [, orderId]) {
      if (!bearer(request)) return invalidToken();
      const order = orders.get(orderId);
      if (!order) return notFound();
      if (order.status !== 'APPROVED' || order.intent !== 'CAPTURE') {
        return paypalError(422, 'UNPROCESSABLE_ENTITY', 'The requested action could not be performed, semantically incorrect, or failed business validation.', 'ORDER_ALREADY_CAPTURED', 'Order already captured.If \'intent=CAPTURE\' only one capture per order is allowed.');
      }
      const id = paypalId();
      order.status = 'COMPLETED';
      order.captures.push({ id, status: 'COMPLETED', value: order.value });
      byCapture.set(id, order);
      stub.effect('capture', request.key, { orderId, captureId: id, amount: order.value });
      return { status: 201, body: presentOrder(order) };
    },
  });

  return state;
}

/**
 * The webhook body that confirms a refund made through the stub: PayPal's
 * `PAYMENT.CAPTURE.REFUNDED` event (https://developer.paypal.com/api/rest/webhooks/event-names/),
 * its resource the refund with its `up` link to the capture. Sign it with `paypalHeaders` (src/testing).
 */
export function paypalRefundWebhook(paypal: PaypalApi, refundId: string, options: { status?: 'COMPLETED' | 'FAILED' | 'CANCELLED' } = {}): Record<string, unknown> {
  const refund = paypal.refunds.get(refundId);
  if (!refund) throw new Error(`the stub made no refund ${refundId}`);
  const status = options.status ?? 'COMPLETED';
  return {
    id: `WH-${paypalId()}`,
    event_version: '1.0',
    create_time: '2026-12-01T11:00:05.000Z',
    resource_type: 'refund',
    resource_version: '2.0',
    event_type: 'PAYMENT.CAPTURE.REFUNDED',
    summary: `A ${refund.value} ${refund.currency} capture payment was refunded`,
    resource: {
      id: refund.id,
      amount: { currency_code: refund.currency, value: refund.value },
      ...(refund.noteToPayer ? { note_to_payer: refund.noteToPayer } : {}),
      status,
      ...(status === 'COMPLETED' ? {} : { status_details: { reason: 'ECHECK' } }),
      create_time: '2026-12-01T11:00:00Z',
      update_time: '2026-12-01T11:00:05Z',
      links: [api(`/v2/payments/refunds/${refund.id}`, 'self'), api(`/v2/payments/captures/${refund.captureId}`, 'up')],
    },
    links: [api(`/v1/notifications/webhooks-events/WH-${randomUUID()}`, 'self')],
  };
}
