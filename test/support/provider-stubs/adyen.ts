import { randomBytes } from 'node:crypto';
import { adyenNotification, type AdyenNotificationItem } from '../../../src/testing/adyen';
import type { ProviderApiStub, StubAnswer, StubRequest } from '../provider-api-stub';

type Json = Record<string, any>;

/**
 * Adyen's Checkout API as the commands use it (docs/commands.md#adyen), on a ProviderApiStub that
 * serves HTTPS (`new ProviderApiStub({ tls: true })`: the library speaks HTTPS only):
 * `POST /v72/payments/{paymentPspReference}/refunds`, `/captures` and `/cancels`, keyed by the
 * `Idempotency-Key` header, authenticated by `X-API-Key`, answering Adyen's documented shapes
 * (`status: "received"`, a pspReference of 16 characters per modification; errors as
 * `{ status, errorCode, message, errorType }`). As on Adyen, a modification is accepted at once
 * and its outcome comes later, in a webhook (`adyenRefundNotification`): a refund of more than is
 * left is `received`, and its REFUND notification says `success: "false"`.
 */
export interface AdyenStubPayment {
  pspReference: string;
  merchantAccount: string;
  /** Minor units. */
  value: number;
  currency: string;
  status: 'authorised' | 'captured' | 'cancelled';
}

export interface AdyenStubModification {
  kind: 'refund' | 'capture' | 'cancel';
  pspReference: string;
  payment: AdyenStubPayment;
  reference: string | null;
  value: number | null;
  currency: string | null;
  /** What the webhook will say: whether Adyen could make it, and why not. */
  success: boolean;
  reason: string;
}

export interface AdyenStub {
  /** The Checkout API key the stub accepts (`X-API-Key`). */
  readonly apiKey: string;
  readonly payments: Map<string, AdyenStubPayment>;
  /** Modifications by their own pspReference. */
  readonly modifications: Map<string, AdyenStubModification>;
  /** Adds a payment: captured (automatic capture) by default, or `authorised` (manual capture). */
  addPayment(opts?: Partial<AdyenStubPayment>): AdyenStubPayment;
}

export const ADYEN_STUB_KEY = 'AQEyhmfxK4LNbhZFw0m/n3Q5qf3VaY9UCJ14XWZE03G/k2NFikzVGEiYj+4vtN01BchqAcwhNJEQwV1bDb7kfNy1WIxIIkxgBw==-stubkey';

/** A pspReference as Adyen writes them: 16 upper-case letters and digits. */
export function adyenPspReference(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  return [...randomBytes(16)].map((b) => alphabet[b % alphabet.length]).join('');
}

function adyenError(status: number, errorCode: string, message: string, errorType: string): StubAnswer {
  return { status, body: { status, errorCode, message, errorType, pspReference: adyenPspReference() } };
}

export function addAdyenRoutes(stub: ProviderApiStub, options: { apiKey?: string } = {}): AdyenStub {
  const apiKey = options.apiKey ?? ADYEN_STUB_KEY;
  const state: AdyenStub = {
    apiKey,
    payments: new Map(),
    modifications: new Map(),
    addPayment(opts = {}) {
      const p: AdyenStubPayment = {
        pspReference: opts.pspReference ?? adyenPspReference(),
        merchantAccount: opts.merchantAccount ?? 'ShopEU',
        value: opts.value ?? 4990,
        currency: opts.currency ?? 'EUR',
        status: opts.status ?? 'captured',
      };
      state.payments.set(p.pspReference, p);
      return p;
    },
  };

  const refunded = (p: AdyenStubPayment) =>
    [...state.modifications.values()].filter((m) => m.kind === 'refund' && m.payment === p && m.success).reduce((sum, m) => sum + (m.value ?? 0), 0);

  /** The request authenticated, its payment and merchant account checked: the payment, or the answer that refuses it. */
  const find = (request: StubRequest, psp: string): AdyenStubPayment | StubAnswer => {
    if (request.headers['x-api-key'] !== apiKey) return adyenError(401, '000', 'HTTP Status Response - Unauthorized', 'security');
    const body = (request.json ?? {}) as Json;
    if (typeof body.merchantAccount !== 'string' || body.merchantAccount === '') return adyenError(422, '14_007', 'Required field "merchantAccount" is not provided.', 'validation');
    const p = state.payments.get(psp);
    if (!p) return adyenError(422, '167', 'Original pspReference required for this operation', 'validation');
    if (p.merchantAccount !== body.merchantAccount) return adyenError(403, '901', 'Invalid Merchant Account', 'security');
    return p;
  };

  /** The `amount` of a refund or capture request, or the answer that refuses it. */
  const amountOf = (request: StubRequest, p: AdyenStubPayment): { value: number; currency: string } | StubAnswer => {
    const amount = (request.json ?? {}).amount as Json | undefined;
    if (!amount || !Number.isInteger(amount.value) || amount.value <= 0) return adyenError(422, '137', 'Invalid amount specified', 'validation');
    if (amount.currency !== p.currency) return adyenError(422, '137', 'Invalid amount specified', 'validation');
    return { value: amount.value, currency: amount.currency };
  };

  const modification = (kind: AdyenStubModification['kind'], request: StubRequest, p: AdyenStubPayment, amount: { value: number; currency: string } | null, success: boolean, reason: string) => {
    const m: AdyenStubModification = {
      kind,
      pspReference: adyenPspReference(),
      payment: p,
      reference: typeof request.json?.reference === 'string' ? request.json.reference : null,
      value: amount?.value ?? null,
      currency: amount?.currency ?? null,
      success,
      reason,
    };
    state.modifications.set(m.pspReference, m);
    const effect = kind === 'cancel' ? 'void' : kind;
    stub.effect(effect, request.key, { pspReference: m.pspReference, payment: p.pspReference, merchantAccount: p.merchantAccount, reference: m.reference, ...(amount ?? {}) });
    const answer: Json = { merchantAccount: p.merchantAccount, paymentPspReference: p.pspReference, pspReference: m.pspReference, ...(m.reference === null ? {} : { reference: m.reference }), status: 'received' };
    if (amount) answer.amount = amount;
    return { status: 201, body: answer };
  };

  stub.route({
    method: 'POST',
    path: /^\/v72\/payments\/([^/]+)\/refunds$/,
    key: 'idempotency-key',
    handle(request, match) {
      const p = find(request, decodeURIComponent(match[1]));
      if (!('merchantAccount' in p)) return p;
      const amount = amountOf(request, p);
      if (!('value' in amount)) return amount;
      // Adyen takes the request and tells the outcome in the REFUND notification.
      const left = p.status === 'captured' ? p.value - refunded(p) : 0;
      const success = amount.value <= left;
      const reason = success ? '' : p.status === 'captured' ? 'Insufficient balance on payment' : "Transaction hasn't been captured, refund not possible";
      return modification('refund', request, p, amount, success, reason);
    },
  });

  stub.route({
    method: 'POST',
    path: /^\/v72\/payments\/([^/]+)\/captures$/,
    key: 'idempotency-key',
    handle(request, match) {
      const p = find(request, decodeURIComponent(match[1]));
      if (!('merchantAccount' in p)) return p;
      const amount = amountOf(request, p);
      if (!('value' in amount)) return amount;
      const success = p.status === 'authorised' && amount.value <= p.value;
      if (success) {
        p.status = 'captured';
        p.value = amount.value;
      }
      return modification('capture', request, p, amount, success, success ? '' : 'Insufficient balance on payment');
    },
  });

  stub.route({
    method: 'POST',
    path: /^\/v72\/payments\/([^/]+)\/cancels$/,
    key: 'idempotency-key',
    handle(request, match) {
      const p = find(request, decodeURIComponent(match[1]));
      if (!('merchantAccount' in p)) return p;
      const success = p.status === 'authorised';
      if (success) p.status = 'cancelled';
      return modification('cancel', request, p, null, success, success ? '' : 'Transaction already captured');
    },
  });

  return state;
}

/**
 * The notification Adyen sends with the outcome of a refund made through the stub (for end-to-end
 * tests): `REFUND` with `success` as the stub decided (or as given), or `REFUND_FAILED` (a refund
 * that failed after it succeeded, `success: "true"`), signed with the endpoint's HMAC key. Send the
 * body as is, with `headers`.
 */
export function adyenRefundNotification(
  state: AdyenStub,
  refundPspReference: string,
  opts: { hmacKey: string; eventCode?: 'REFUND' | 'REFUND_FAILED'; success?: boolean; reason?: string },
): { body: string; headers: Record<string, string>; item: AdyenNotificationItem } {
  const m = state.modifications.get(refundPspReference);
  if (!m || m.kind !== 'refund') throw new Error(`the Adyen stub made no refund ${refundPspReference}`);
  const eventCode = opts.eventCode ?? 'REFUND';
  const success = eventCode === 'REFUND_FAILED' ? true : (opts.success ?? m.success);
  const reason = opts.reason ?? (eventCode === 'REFUND_FAILED' ? 'Refund Failed' : success ? '' : m.reason);
  const item: AdyenNotificationItem = {
    additionalData: { paymentMethodVariant: 'visa' },
    amount: { currency: m.currency, value: m.value },
    eventCode,
    eventDate: new Date().toISOString().replace(/\.\d{3}Z$/, '+00:00'),
    merchantAccountCode: m.payment.merchantAccount,
    merchantReference: m.reference ?? '',
    originalReference: m.payment.pspReference,
    paymentMethod: 'visa',
    pspReference: m.pspReference,
    reason,
    success: success ? 'true' : 'false',
  };
  const { body, headers } = adyenNotification({ hmacKey: opts.hmacKey, items: [item] });
  return { body, headers, item: JSON.parse(body).notificationItems[0].NotificationRequestItem };
}
