import { failedCall } from './command-answers';
import { optionalPackage } from './optional-package';
import { asObject } from './provider';
import type { CommandAnswer, CommandContext, CommandTarget, PaymentCommand, PaymentCommands, ProviderEndpoint } from './provider';

/** The npm package of Square's official SDK (the same optional peer the adapter verifies signatures with). */
const SQUARE_PACKAGE = 'square';

/** Square's answer to RefundPayment, as the SDK gives it (camelCase). */
interface SquareRefund {
  id?: string;
  status?: string;
}

interface SquareRequestOptions {
  timeoutInSeconds: number;
  maxRetries: number;
}

/** What this module calls of the `square` package (40 and later), typed here so that a host without it still compiles. */
interface SquareClient {
  refunds: {
    refundPayment(
      request: { idempotencyKey: string; paymentId: string; amountMoney: { amount: bigint; currency: string }; reason?: string },
      options: SquareRequestOptions,
    ): Promise<{ refund?: SquareRefund }>;
  };
  payments: {
    complete(request: { paymentId: string }, options: SquareRequestOptions): Promise<unknown>;
    cancel(request: { paymentId: string }, options: SquareRequestOptions): Promise<unknown>;
  };
}

interface SquareClientPackage {
  SquareClient?: new (options: { token: string; baseUrl: string; timeoutInSeconds: number; maxRetries: number }) => SquareClient;
}

/** Square's own limit on a refund's `reason`. */
const REASON_MAX = 192;

/** The SDK, loaded the first time a command is sent; null when it is not installed. */
const squarePackage = optionalPackage(SQUARE_PACKAGE, () => require(SQUARE_PACKAGE) as SquareClientPackage);

/**
 * A client per call: building one is cheap (it uses the global `fetch`, no pool of its own), a
 * command is rare, and a rotated token is used at once. Its retries are off (`maxRetries: 0`, on
 * the client and the call): the outbox retries, with the same key.
 */
function clientFor(endpoint: ProviderEndpoint & { apiKey: string }, context: CommandContext): { client: SquareClient; options: SquareRequestOptions } | string {
  const SquareClient = squarePackage()?.SquareClient;
  if (!SquareClient) return `endpoint "${endpoint.id}" needs the ${SQUARE_PACKAGE} package 40 or later: npm install ${SQUARE_PACKAGE}`;
  const options = { timeoutInSeconds: context.timeoutMs / 1000, maxRetries: 0 };
  const client = new SquareClient({ token: endpoint.apiKey, baseUrl: (endpoint.apiBaseUrl ?? 'https://connect.squareup.com').replace(/\/+$/, ''), ...options });
  return { client, options };
}

/**
 * Square (docs/commands.md#square): RefundPayment with the command's key as `idempotency_key`;
 * CompletePayment (capture) and CancelPayment (void) take no key in Square's API: they act on the
 * payment's state, so a repeat answers the payment as it already is (completing a COMPLETED
 * payment answers it), and the outbox may repeat them safely. Square completes a payment's whole
 * amount: a capture of part of it is refused here, before any call.
 */
export const squareCommands: PaymentCommands = {
  types: ['refund', 'capture', 'void'],

  ready: (endpoint) => typeof endpoint.apiKey === 'string' && endpoint.apiKey !== '',

  async send(command: PaymentCommand, target: CommandTarget, context: CommandContext): Promise<CommandAnswer> {
    const { endpoint } = context;
    if (!squareCommands.ready(endpoint)) return { ok: false, retryable: false, reason: `endpoint "${endpoint.id}" has no Square access token (apiKey)` };
    if (command.type === 'capture' && command.amount.minor !== target.amount.minor) {
      return { ok: false, retryable: false, reason: `Square completes a payment's whole amount (${target.amount.decimal} ${target.amount.currency}), not ${command.amount.decimal}` };
    }
    const token = endpoint.apiKey as string;
    const made = clientFor(endpoint as ProviderEndpoint & { apiKey: string }, context);
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
      return squareFailure(err, token);
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

/**
 * What the SDK threw: a `SquareError` keeps the status (`statusCode`), Square's `errors`
 * (`[{ category, code, detail }]`) and the raw answer (its `Retry-After`); its timeout, or an
 * error without a status, is no answer (the effect may have happened).
 */
export function squareFailure(err: unknown, token: string): CommandAnswer {
  const e = (err ?? {}) as { name?: unknown; statusCode?: unknown; errors?: unknown; message?: unknown; cause?: unknown; rawResponse?: { headers?: { get?(name: string): string | null } } };
  // The SDK aborts its own request with the reason "timeout": fetch rejects with that string, which
  // the SDK wraps as an unknown error (its SquareTimeoutError only for an AbortError).
  if (e.name === 'SquareTimeoutError' || e.cause === 'timeout') return failedCall(null, 'Square did not answer in time');
  const status = typeof e.statusCode === 'number' && e.statusCode >= 100 ? e.statusCode : null;
  const retryAfter = typeof e.rawResponse?.headers?.get === 'function' ? e.rawResponse.headers.get('retry-after') : null;
  return failedCall(status, withoutSecret(reasonOf(e.errors, causeMessage(e.cause) ?? e.message, status), token), retryAfter);
}

/** Square's errors (`INSUFFICIENT_PERMISSIONS: …; REFUND_AMOUNT_INVALID: …`), else the SDK's first line. */
function reasonOf(errors: unknown, message: unknown, status: number | null): string {
  const listed = (Array.isArray(errors) ? errors : [])
    .map((x) => asObject(x))
    .filter((x): x is Record<string, unknown> => x !== undefined && typeof x.code === 'string' && x.code !== 'Unknown')
    .map((x) => (typeof x.detail === 'string' && x.detail !== '' ? `${x.code as string}: ${x.detail}` : (x.code as string)));
  if (listed.length > 0) return listed.join('; ');
  const firstLine = typeof message === 'string' ? message.split('\n')[0] : '';
  // The SDK's message of an answer without Square's errors is only `Status code: …`.
  return firstLine !== '' && !firstLine.startsWith('Status code:') ? firstLine : status === null ? 'Square did not answer' : 'Square refused the command';
}

/**
 * The message of what the SDK wrapped (`fetch failed`, with its code): the SDK writes an error it
 * does not recognise as an Error (one from another realm) as its JSON, which says nothing.
 */
function causeMessage(cause: unknown): string | null {
  const c = asObject(cause);
  if (typeof c?.message !== 'string' || c.message === '') return null;
  const code = asObject(c.cause)?.code;
  return typeof code === 'string' ? `${c.message} (${code})` : c.message;
}

function withoutSecret(text: string, secret: string): string {
  return secret.length > 0 ? text.split(secret).join('[redacted]') : text;
}
