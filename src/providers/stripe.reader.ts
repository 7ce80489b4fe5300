import type Stripe from 'stripe';
import { asObject, type PaymentReader, type PaymentReading, ProviderApiError, RATE_LIMITED, type ProviderEndpoint, type ReadContext } from './provider';
import { endpointStripeClient, retryAfterMs, withoutKey } from './stripe-api';

/** The most bytes of one answer read: a PaymentIntent with its latest charge takes a few KiB. */
const ANSWER_READ_LIMIT_BYTES = 1024 * 1024;

function clientFor(endpoint: ProviderEndpoint & { apiKey: string }, timeoutMs: number): Stripe {
  // The poller asks again on its own schedule: the client never retries.
  return endpointStripeClient(endpoint, { maxNetworkRetries: 0, timeoutMs, readLimitBytes: ANSWER_READ_LIMIT_BYTES, appName: 'payment-polling' });
}

/**
 * The event a PaymentIntent's status is, as a snapshot webhook would carry it, or null for a status
 * that says nothing the service acts on (`requires_payment_method` before any attempt failed,
 * `requires_confirmation`, `requires_action`).
 */
export function stripePollEvent(intent: Record<string, unknown>, account: string | null): { eventType: string; body: Record<string, unknown> } | null {
  const charge = asObject(intent.latest_charge);
  const envelope = (eventType: string, object: Record<string, unknown>) => ({
    eventType,
    body: { object: 'event', type: eventType, ...(account === null ? {} : { account }), data: { object } },
  });
  switch (intent.status) {
    case 'succeeded':
      // The money arrived: what a poll is for. Refunds after it are the charge's events (a webhook, a
      // backfill); a PaymentIntent the module holds as pending could not take a refund first.
      return envelope('payment_intent.succeeded', { ...intent, latest_charge: charge?.id ?? intent.latest_charge });
    case 'processing':
      return envelope('payment_intent.processing', intent);
    case 'requires_capture':
      return envelope('payment_intent.amount_capturable_updated', intent);
    case 'canceled':
      return envelope('payment_intent.canceled', intent);
    case 'requires_payment_method':
      // Back to asking for a method after an attempt failed: the attempt's failure.
      return intent.last_payment_error ? envelope('payment_intent.payment_failed', intent) : null;
    default:
      return null;
  }
}

/**
 * Stripe's payment read for polling (docs/operations.md#when-webhooks-stop): the PaymentIntent,
 * its latest charge expanded (what it says of refunds), through the official `stripe` package with
 * the endpoint's key; on a Connect endpoint (one of many accounts) as the connected account
 * (`Stripe-Account`). The status is the PaymentIntent's, the refunded amount the charge's
 * `amount_refunded` in minor units.
 */
export const stripeReader: PaymentReader = {
  ready: (endpoint) => typeof endpoint.apiKey === 'string' && endpoint.apiKey !== '',

  async read(target, context: ReadContext): Promise<PaymentReading> {
    const { endpoint, timeoutMs } = context;
    if (!stripeReader.ready(endpoint)) throw new ProviderApiError(`endpoint "${endpoint.id}" has no Stripe apiKey`, null, 'endpoint_not_configured');
    const apiKey = endpoint.apiKey!;
    const connected = endpoint.merchantAccountId === null;
    let intent: Record<string, unknown> | undefined;
    try {
      const answer = await clientFor(endpoint as ProviderEndpoint & { apiKey: string }, timeoutMs).paymentIntents.retrieve(
        target.providerPaymentId,
        { expand: ['latest_charge'] },
        { maxNetworkRetries: 0, timeout: timeoutMs, ...(connected ? { stripeAccount: target.merchantAccountId } : {}) },
      );
      intent = asObject(answer);
    } catch (err) {
      const failure = err as { statusCode?: number; message?: string; headers?: Record<string, unknown> };
      if (failure.statusCode === 404) return { found: false };
      const what = `Stripe API ${failure.statusCode ? `answered ${failure.statusCode}` : 'failed'} for payment_intents/${target.providerPaymentId}`;
      throw new ProviderApiError(
        withoutKey(`${what}: ${failure.message ?? String(err)}`, apiKey),
        retryAfterMs(failure.headers?.['retry-after']),
        failure.statusCode === 429 ? RATE_LIMITED : undefined,
      );
    }
    if (!intent || intent.id !== target.providerPaymentId || typeof intent.status !== 'string') {
      throw new ProviderApiError(`Stripe API answered another object than ${target.providerPaymentId}`);
    }
    const charge = asObject(intent.latest_charge);
    const refunded = typeof charge?.amount_refunded === 'number' ? String(charge.amount_refunded) : '0';
    return { found: true, status: intent.status, refunded, event: stripePollEvent(intent, connected ? target.merchantAccountId : null) };
  },
};
