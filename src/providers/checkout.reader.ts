import { checkoutBaseUrl, checkoutClientFor, hasSecretKey, withoutSecret } from './checkout-client';
import { checkoutFailure } from './checkout.commands';
import { readFailure } from './command-answers';
import { watchRead } from './keyed-call';
import { asObject, PaymentReader, PaymentReading, ProviderApiError, text } from './provider';

/**
 * A payment's `status` (Checkout.com's own words) as the webhook of the same fact names it
 * (docs/webhooks.md#checkoutcom); a status not listed (`Card Verified`, `Retry Scheduled`, a new
 * one) says nothing the module acts on.
 */
const EVENTS: ReadonlyMap<string, string> = new Map([
  ['Pending', 'payment_pending'],
  ['Authorized', 'payment_approved'],
  ['Captured', 'payment_captured'],
  ['Partially Captured', 'payment_captured'],
  ['Paid', 'payment_captured'],
  // The money was taken; what went back since is left to the refunds' own webhooks (each its action id).
  ['Refunded', 'payment_captured'],
  ['Partially Refunded', 'payment_captured'],
  ['Voided', 'payment_voided'],
  ['Declined', 'payment_declined'],
  ['Canceled', 'payment_canceled'],
  ['Expired', 'payment_expired'],
]);

const minorUnits = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/**
 * What a payment (as `GET /payments/{id}` answers it) says: `status` Checkout.com's word, `refunded`
 * its `balances.total_refunded` in minor units, and the webhook `data` its event would carry — the
 * payment's id, amount (for a capture, what was captured: `balances.total_captured`), currency,
 * reference and metadata (docs/operations.md#when-webhooks-stop).
 */
export function checkoutPaymentReading(payment: Record<string, unknown>): PaymentReading {
  const status = String(payment.status);
  const balances = asObject(payment.balances);
  const refunded = minorUnits(balances?.total_refunded) ? String(balances!.total_refunded) : '0';
  const eventType = EVENTS.get(status);
  if (eventType === undefined) return { found: true, status, refunded, event: null };
  const captured = eventType === 'payment_captured' && minorUnits(balances?.total_captured) && balances!.total_captured > 0;
  const data: Record<string, unknown> = {
    id: payment.id,
    amount: captured ? balances!.total_captured : payment.amount,
    currency: payment.currency,
    ...(text(payment.reference) === null ? {} : { reference: payment.reference }),
    ...(asObject(payment.metadata) ? { metadata: payment.metadata } : {}),
    // A card payout is no order's payment: normalize ignores it, as it does its webhooks.
    ...(payment.destination === undefined ? {} : { destination: payment.destination }),
  };
  return { found: true, status, refunded, event: { eventType, body: { type: eventType, data } } };
}

/**
 * Polling through `checkout-sdk-node` (docs/operations.md#when-webhooks-stop): `payments.get(id)`
 * with the endpoint's secret key, a client per read as the commands make it. The SDK keeps no
 * answer's headers, so the `Retry-After` of a `429` is read from the answer itself as it arrives
 * (keyed-call.ts). A `404` is a payment Checkout.com does not know; any other failure a
 * ProviderApiError, its message free of the key.
 */
export const checkoutReader: PaymentReader = {
  ready: hasSecretKey,

  async read(target, { endpoint, timeoutMs }): Promise<PaymentReading> {
    if (!hasSecretKey(endpoint)) throw new ProviderApiError(`endpoint "${endpoint.id}" has no Checkout.com secret key (apiKey)`);
    const client = checkoutClientFor(endpoint, timeoutMs);
    if (typeof client === 'string') throw new ProviderApiError(client);
    const paymentId = target.providerPaymentId;
    const url = new URL(`${checkoutBaseUrl(endpoint)}/payments/${paymentId}`);
    const watched = watchRead(url.hostname, `${url.pathname}${url.search}`);
    let payment: Record<string, unknown>;
    try {
      payment = await client.payments.get(paymentId);
    } catch (err) {
      if ((err as { http_code?: unknown } | null)?.http_code === 404) return { found: false };
      const answer = watched.answer;
      const retryAfter = answer !== undefined && answer.status === (err as { http_code?: unknown } | null)?.http_code ? answer.retryAfter : null;
      throw readFailure(checkoutFailure(err, endpoint.apiKey, retryAfter), `Checkout.com payment ${paymentId} could not be read`);
    } finally {
      watched.end();
    }
    if (asObject(payment)?.id !== paymentId) {
      throw new ProviderApiError(withoutSecret(`Checkout.com answered the read of payment ${paymentId} with another object`, endpoint.apiKey));
    }
    return checkoutPaymentReading(payment);
  },
};
