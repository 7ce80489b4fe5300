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
