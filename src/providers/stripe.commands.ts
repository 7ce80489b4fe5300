import type Stripe from 'stripe';
import { thrownCall } from './command-answers';
import type { CommandAnswer, CommandContext, CommandTarget, PaymentCommand, PaymentCommands, ProviderEndpoint } from './provider';
import { endpointStripeClient, withoutKey } from './stripe-api';

/** The most bytes of one answer read: a Refund or a PaymentIntent takes a few KiB. */
const ANSWER_READ_LIMIT_BYTES = 1024 * 1024;

function clientFor(endpoint: ProviderEndpoint & { apiKey: string }, context: CommandContext): Stripe {
  // The outbox retries, with the same key and its own backoff: the client never does.
  return endpointStripeClient(endpoint, { maxNetworkRetries: 0, timeoutMs: context.timeoutMs, readLimitBytes: ANSWER_READ_LIMIT_BYTES, appName: 'payment-commands' });
}

/**
 * The options of every call: the command's idempotency key (`Idempotency-Key`), no retry of the
 * client's own, this call's timeout, and on a Connect endpoint (one of many accounts) the
 * connected account the payment belongs to (`Stripe-Account`).
 */
function requestOptions(target: CommandTarget, context: CommandContext): Stripe.RequestOptions {
  return {
    idempotencyKey: context.idempotencyKey,
    maxNetworkRetries: 0,
    timeout: context.timeoutMs,
    ...(context.endpoint.merchantAccountId === null ? { stripeAccount: target.merchantAccountId } : {}),
  };
}

/** Minor units as the JSON integer Stripe takes; null past what a double holds exactly (no real amount is). */
function integerAmount(minor: bigint): number | null {
  return minor > 0n && minor <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(minor) : null;
}

/**
 * What a Refund object says at once: `succeeded` (the money went back), `pending` or
 * `requires_action` (Stripe's webhook tells the end), or `failed`/`canceled` (refused for good,
 * with Stripe's `failure_reason`).
 */
export function refundAnswer(refund: Pick<Stripe.Refund, 'id' | 'status' | 'failure_reason'>): CommandAnswer {
  if (refund.status === 'succeeded') return { ok: true, providerRefundId: refund.id, status: 'succeeded' };
  if (refund.status === 'failed' || refund.status === 'canceled') {
    const why = refund.failure_reason ? `: ${refund.failure_reason}` : '';
    return { ok: false, retryable: false, reason: `refund ${refund.id} ${refund.status}${why}` };
  }
  return { ok: true, providerRefundId: refund.id, status: 'pending' };
}

async function call(command: PaymentCommand, target: CommandTarget, context: CommandContext, stripe: Stripe): Promise<CommandAnswer> {
  const options = requestOptions(target, context);
  const paymentIntent = target.providerPaymentId;
  switch (command.type) {
    case 'refund': {
      const amount = integerAmount(command.amount.minor);
      if (amount === null) return { ok: false, retryable: false, reason: `amount ${command.amount.decimal} ${command.amount.currency} is not one Stripe takes` };
      // Stripe's own `reason` is an enum (duplicate, fraudulent, requested_by_customer): the shop's text goes in metadata.
      const params: Stripe.RefundCreateParams = { payment_intent: paymentIntent, amount, ...(command.reason ? { metadata: { reason: command.reason } } : {}) };
      return refundAnswer(await stripe.refunds.create(params, options));
    }
    case 'capture': {
      const amount = integerAmount(command.amount.minor);
      if (amount === null) return { ok: false, retryable: false, reason: `amount ${command.amount.decimal} ${command.amount.currency} is not one Stripe takes` };
      await stripe.paymentIntents.capture(paymentIntent, { amount_to_capture: amount }, options);
      return { ok: true };
    }
    case 'void':
      await stripe.paymentIntents.cancel(paymentIntent, {}, options);
      return { ok: true };
  }
}

/**
 * Stripe's payment commands through the official `stripe` package (docs/commands.md#stripe):
 * `refunds.create`, `paymentIntents.capture` and `paymentIntents.cancel`, with the command's key
 * as Stripe's `Idempotency-Key`. An error Stripe answers is read by `thrownCall` (its `statusCode`
 * and `headers`), and its message, which is Stripe's refusal text, never holds the key.
 */
export const stripeCommands: PaymentCommands = {
  types: ['refund', 'capture', 'void'],

  ready: (endpoint) => typeof endpoint.apiKey === 'string' && endpoint.apiKey !== '',

  async send(command, target, context): Promise<CommandAnswer> {
    const { endpoint } = context;
    if (!stripeCommands.ready(endpoint)) return { ok: false, retryable: false, reason: `endpoint "${endpoint.id}" has no Stripe apiKey` };
    const apiKey = endpoint.apiKey!;
    try {
      return await call(command, target, context, clientFor(endpoint as ProviderEndpoint & { apiKey: string }, context));
    } catch (err) {
      const answer = thrownCall(err, 'the Stripe API');
      return answer.ok ? answer : { ...answer, reason: withoutKey(answer.reason, apiKey) };
    }
  },
};
