import { failedCall } from './command-answers';
import { hasSquareToken, squareClient, squareFailure, type SquareRefund } from './square-client';
import type { CommandAnswer, CommandContext, CommandTarget, PaymentCommand, PaymentCommands, ProviderEndpoint } from './provider';

/** Square's own limit on a refund's `reason`. */
const REASON_MAX = 192;

/**
 * Square (docs/commands.md#square): RefundPayment with the command's key as `idempotency_key`;
 * CompletePayment (capture) and CancelPayment (void) take no key in Square's API: they act on the
 * payment's state, so a repeat answers the payment as it already is (completing a COMPLETED
 * payment answers it), and the outbox may repeat them safely. Square completes a payment's whole
 * amount: a capture of part of it is refused here, before any call.
 */
export const squareCommands: PaymentCommands = {
  types: ['refund', 'capture', 'void'],

  ready: hasSquareToken,

  async send(command: PaymentCommand, target: CommandTarget, context: CommandContext): Promise<CommandAnswer> {
    const { endpoint } = context;
    if (!squareCommands.ready(endpoint)) return { ok: false, retryable: false, reason: `endpoint "${endpoint.id}" has no Square access token (apiKey)` };
    if (command.type === 'capture' && command.amount.minor !== target.amount.minor) {
      return { ok: false, retryable: false, reason: `Square completes a payment's whole amount (${target.amount.decimal} ${target.amount.currency}), not ${command.amount.decimal}` };
    }
    const token = endpoint.apiKey as string;
    const made = squareClient(endpoint as ProviderEndpoint & { apiKey: string }, context.timeoutMs);
    if (typeof made === 'string') return { ok: false, retryable: false, reason: made };
    const { client, options } = made;
    const paymentId = target.providerPaymentId;
    try {
      switch (command.type) {
        case 'refund': {
          const { refund } = await client.refunds.refundPayment(
            {
              idempotencyKey: context.idempotencyKey,
              paymentId,
              amountMoney: { amount: command.amount.minor, currency: command.amount.currency },
              ...(command.reason === null || command.reason === '' ? {} : { reason: command.reason.slice(0, REASON_MAX) }),
            },
            options,
          );
          return refundAnswer(refund);
        }
        case 'capture':
          await client.payments.complete({ paymentId }, options);
          return { ok: true };
        case 'void':
          await client.payments.cancel({ paymentId }, options);
          return { ok: true };
      }
    } catch (err) {
      return squareAnswer(err, token);
    }
  },
};

/** A refund Square took: `COMPLETED` is money already back; `REJECTED`/`FAILED` at once is a refusal. */
function refundAnswer(refund: SquareRefund | undefined): CommandAnswer {
  const id = typeof refund?.id === 'string' && refund.id !== '' ? refund.id : null;
  if (refund?.status === 'REJECTED' || refund?.status === 'FAILED') {
    return { ok: false, retryable: false, reason: `Square answered the refund${id === null ? '' : ` ${id}`} ${refund.status}` };
  }
  return { ok: true, providerRefundId: id, status: refund?.status === 'COMPLETED' ? 'succeeded' : 'pending' };
}

/** What the SDK threw, as a command's answer: no answer (a timeout, a network error) may have happened. */
function squareAnswer(err: unknown, token: string): CommandAnswer {
  const failure = squareFailure(err, token);
  return failedCall(failure.status, failure.reason, failure.retryAfter);
}
