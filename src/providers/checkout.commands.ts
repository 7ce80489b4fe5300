import { checkoutClientFor, hasSecretKey, withoutSecret } from './checkout-client';
import { failedCall } from './command-answers';
import { asObject } from './provider';
import type { CommandAnswer, CommandContext, CommandTarget, PaymentCommand, PaymentCommands } from './provider';

/**
 * Checkout.com (docs/commands.md#checkoutcom): refunds, captures (whole or partial) and voids
 * through `checkout-sdk-node`, the command's key as `Cko-Idempotency-Key`. Checkout.com answers
 * `202 { action_id, reference }`: a refund is confirmed by `payment_refunded` (its `action_id`),
 * or failed by `payment_refund_declined`.
 */
export const checkoutCommands: PaymentCommands = {
  types: ['refund', 'capture', 'void'],

  ready: hasSecretKey,

  async send(command: PaymentCommand, target: CommandTarget, context: CommandContext): Promise<CommandAnswer> {
    const { endpoint, idempotencyKey } = context;
    if (!hasSecretKey(endpoint)) return { ok: false, retryable: false, reason: `endpoint "${endpoint.id}" has no Checkout.com secret key (apiKey)` };
    const apiKey = endpoint.apiKey;
    const client = checkoutClientFor(endpoint, context.timeoutMs);
    if (typeof client === 'string') return { ok: false, retryable: false, reason: client };
    const paymentId = target.providerPaymentId;
    try {
      switch (command.type) {
        case 'refund': {
          const answer = await client.payments.refund(paymentId, { amount: Number(command.amount.minor), reference: command.refundId }, idempotencyKey);
          const actionId = typeof answer?.action_id === 'string' && answer.action_id !== '' ? answer.action_id : null;
          // Accepted, not done: the money moves when payment_refunded says so.
          return { ok: true, providerRefundId: actionId, status: 'pending' };
        }
        case 'capture':
          await client.payments.capture(paymentId, { amount: Number(command.amount.minor) }, idempotencyKey);
          return { ok: true };
        case 'void':
          await client.payments.void(paymentId, {}, idempotencyKey);
          return { ok: true };
      }
    } catch (err) {
      return checkoutFailure(err, apiKey);
    }
  },
};

/**
 * What the SDK threw, read as every command answer is. The SDK keeps the status (`http_code`) and
 * the body (`body`: `{ error_type, error_codes }`), but drops the answer's headers: a 429 of a
 * command is retried on the outbox's own backoff; a read passes the `Retry-After` it watched. Its timeout
 * (`ApiTimeout`, given `http_code` 408) is no answer at all: the effect may have happened.
 */
export function checkoutFailure(err: unknown, apiKey: string, retryAfter: string | null = null): CommandAnswer {
  const e = (err ?? {}) as { name?: unknown; http_code?: unknown; body?: unknown; message?: unknown };
  if (e.name === 'ApiTimeout') return failedCall(null, 'Checkout.com did not answer in time');
  const status = typeof e.http_code === 'number' && e.http_code >= 100 ? e.http_code : null;
  return failedCall(status, withoutSecret(reasonOf(e.body, e.message), apiKey), retryAfter);
}

/**
 * Checkout.com's refusal (`request_invalid: amount_exceeds_balance`), else the body as sent, else
 * the SDK's message for no answer (the SDK's error class names say nothing of a refusal).
 */
function reasonOf(body: unknown, message: unknown): string {
  if (typeof body === 'string' && body !== '') return body;
  const b = asObject(body) ?? {};
  const codes = Array.isArray(b.error_codes) ? b.error_codes.filter((c): c is string => typeof c === 'string') : [];
  const type = typeof b.error_type === 'string' ? b.error_type : null;
  if (type !== null || codes.length > 0) return [type, codes.join(', ')].filter((p) => p !== null && p !== '').join(': ');
  if (Object.keys(b).length > 0) return JSON.stringify(b);
  return typeof message === 'string' && message !== '' ? message : 'Checkout.com refused the command';
}
