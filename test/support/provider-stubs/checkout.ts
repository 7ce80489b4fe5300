import { randomBytes } from 'node:crypto';
import type { ProviderApiStub, StubAnswer, StubRequest } from '../provider-api-stub';

/**
 * Checkout.com's payment actions as the stub answers them (api-reference.checkout.com): `POST
 * /payments/{id}/refunds`, `/captures`, `/voids`, each idempotent on `Cko-Idempotency-Key`, each
 * answered `202 { action_id, reference, _links }`. A request without `Authorization` is `401`
 * with no body, as Checkout.com answers it.
 */
export interface CheckoutStubAction {
  kind: 'refund' | 'capture' | 'void';
  paymentId: string;
  actionId: string;
  amount: number | null;
  reference: string | null;
}

/** A Checkout.com id: its prefix and 26 lower-case base32 characters (`act_…`, `evt_…`). */
export function checkoutId(prefix: string): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  return `${prefix}_${[...randomBytes(26)].map((b) => alphabet[b % 32]).join('')}`;
}

const PATHS: Array<{ kind: CheckoutStubAction['kind']; segment: string }> = [
  { kind: 'refund', segment: 'refunds' },
  { kind: 'capture', segment: 'captures' },
  { kind: 'void', segment: 'voids' },
];

/** Adds Checkout.com's payment action routes; returns every action taken, in order. */
export function addCheckoutRoutes(stub: ProviderApiStub): CheckoutStubAction[] {
  const actions: CheckoutStubAction[] = [];
  for (const { kind, segment } of PATHS) {
    stub.route({
      method: 'POST',
      path: new RegExp(`^/payments/(pay_[a-z0-9]+)/${segment}$`),
      key: 'cko-idempotency-key',
      handle(request: StubRequest, match): StubAnswer {
        if (!request.headers.authorization) return { status: 401 };
        const paymentId = match[1];
        const body = (request.json ?? {}) as { amount?: unknown; reference?: unknown };
        const action: CheckoutStubAction = {
          kind,
          paymentId,
          actionId: checkoutId('act'),
          amount: typeof body.amount === 'number' ? body.amount : null,
          reference: typeof body.reference === 'string' ? body.reference : null,
        };
        actions.push(action);
        stub.effect(kind, request.key, { ...action });
        return {
          status: 202,
          body: {
            action_id: action.actionId,
            ...(action.reference === null ? {} : { reference: action.reference }),
            _links: { payment: { href: `https://api.checkout.com/payments/${paymentId}` } },
          },
        };
      },
    });
  }
  return actions;
}

/**
 * The `payment_refunded` webhook body Checkout.com sends once a refund the stub took has gone
 * through (sign it with `signedHeaders('checkout', body, secret)` from the testing kit).
 * `paymentReference`: the payment's own reference, which the adapter reads as the order's.
 */
export function checkoutRefundedWebhook(action: CheckoutStubAction, options: { currency: string; orderId?: string; paymentReference?: string }): string {
  return JSON.stringify({
    id: checkoutId('evt'),
    type: 'payment_refunded',
    version: '1.0.33',
    created_on: new Date().toISOString(),
    data: {
      id: action.paymentId,
      action_id: action.actionId,
      amount: action.amount,
      currency: options.currency,
      ...(options.paymentReference === undefined ? {} : { reference: options.paymentReference }),
      response_code: '10000',
      response_summary: 'Approved',
      ...(options.orderId === undefined ? {} : { metadata: { order_id: options.orderId } }),
    },
  });
}

/** A payment as the stub keeps it: what `GET /payments/{id}` answers. */
export interface CheckoutStubPayment {
  id: string;
  /** Checkout.com's words: `Pending`, `Authorized`, `Card Verified`, `Captured`, `Partially Captured`, `Refunded`, `Partially Refunded`, `Voided`, `Declined`, `Canceled`, `Expired`, `Paid`. */
  status: string;
  amount: number;
  currency: string;
  reference: string | null;
  metadata: Record<string, unknown> | null;
  totalCaptured: number;
  totalRefunded: number;
  totalVoided: number;
}

/**
 * Adds Checkout.com's "Get payment details" (`GET /payments/{id}`, api-reference.checkout.com): the
 * payment with its `status`, `balances` and `_links`; `404` with no body for an unknown id, `401`
 * with no body without `Authorization`. Returns the payments to add to or move on.
 */
export function addCheckoutPayments(stub: ProviderApiStub): Map<string, CheckoutStubPayment> {
  const payments = new Map<string, CheckoutStubPayment>();
  stub.route({
    method: 'GET',
    path: /^\/payments\/((?:pay|sid)_[a-z0-9]+)$/,
    handle(request: StubRequest, match): StubAnswer {
      if (!request.headers.authorization) return { status: 401 };
      const payment = payments.get(match[1]);
      return payment ? { status: 200, body: presentPayment(payment) } : { status: 404 };
    },
  });
  return payments;
}

/** A payment of `amount` in `status`, with the balances that status implies (a capture or refund of the whole unless given). */
export function checkoutPayment(status: string, options: Partial<Omit<CheckoutStubPayment, 'status'>> = {}): CheckoutStubPayment {
  const amount = options.amount ?? 4990;
  const captured = ['Captured', 'Paid', 'Refunded', 'Partially Refunded'].includes(status) ? amount : 0;
  const refunded = status === 'Refunded' ? amount : 0;
  return {
    id: options.id ?? checkoutId('pay'),
    status,
    amount,
    currency: options.currency ?? 'EUR',
    reference: options.reference === undefined ? 'ORD-5023-4E89' : options.reference,
    metadata: options.metadata === undefined ? null : options.metadata,
    totalCaptured: options.totalCaptured ?? captured,
    totalRefunded: options.totalRefunded ?? refunded,
    totalVoided: options.totalVoided ?? (status === 'Voided' ? amount : 0),
  };
}

function presentPayment(p: CheckoutStubPayment): Record<string, unknown> {
  const authorized = ['Authorized', 'Captured', 'Partially Captured', 'Paid', 'Refunded', 'Partially Refunded', 'Voided'].includes(p.status) ? p.amount : 0;
  const open = p.status === 'Authorized' || p.status === 'Partially Captured';
  const self = `https://api.checkout.com/payments/${p.id}`;
  return {
    id: p.id,
    requested_on: '2026-12-01T10:00:00.000Z',
    source: {
      type: 'card',
      id: 'src_wmlfc3zyhqzehihu7giusaaawu',
      billing_address: { country: 'GB' },
      expiry_month: 6,
      expiry_year: 2030,
      scheme: 'Visa',
      last4: '4242',
      fingerprint: 'B16D9C2E7F299C2C6E3D7D2D8E1A1F5B6C5C2F3A1B9E8D7C6B5A4F3E2D1C0B9A',
      bin: '424242',
      card_type: 'CREDIT',
      issuer_country: 'GB',
    },
    amount: p.amount,
    currency: p.currency,
    payment_type: 'Regular',
    ...(p.reference === null ? {} : { reference: p.reference }),
    status: p.status,
    approved: !['Declined', 'Pending', 'Expired', 'Canceled'].includes(p.status),
    balances: {
      total_authorized: authorized,
      total_voided: p.totalVoided,
      available_to_void: open ? p.amount - p.totalCaptured : 0,
      total_captured: p.totalCaptured,
      available_to_capture: open ? p.amount - p.totalCaptured : 0,
      total_refunded: p.totalRefunded,
      available_to_refund: p.totalCaptured - p.totalRefunded,
    },
    risk: { flagged: false },
    customer: { id: 'cus_y3oqhf46pyzuxjbcn2giaqnb44', email: 'buyer@example.com' },
    ...(p.metadata === null ? {} : { metadata: p.metadata }),
    eci: '05',
    scheme_id: '489341065491658',
    _links: {
      self: { href: self },
      actions: { href: `${self}/actions` },
      ...(open ? { capture: { href: `${self}/captures` }, void: { href: `${self}/voids` } } : {}),
      ...(p.totalCaptured > p.totalRefunded ? { refund: { href: `${self}/refunds` } } : {}),
    },
  };
}
