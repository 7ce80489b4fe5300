import { failedCall } from './command-answers';
import { optionalPackage } from './optional-package';
import { asObject } from './provider';
import type { CommandAnswer, CommandContext, CommandTarget, PaymentCommand, PaymentCommands, ProviderEndpoint } from './provider';

/** The npm package of Checkout.com's official SDK, an optional peer dependency of this module. */
export const CHECKOUT_PACKAGE = 'checkout-sdk-node';

/** What this module calls of `checkout-sdk-node` (5.x), typed here so that a host without the package still compiles. */
interface CheckoutClient {
  payments: {
    refund(paymentId: string, body: Record<string, unknown>, idempotencyKey: string): Promise<Record<string, unknown>>;
    capture(paymentId: string, body: Record<string, unknown>, idempotencyKey: string): Promise<Record<string, unknown>>;
    void(paymentId: string, body: Record<string, unknown>, idempotencyKey: string): Promise<Record<string, unknown>>;
  };
}

interface CheckoutOptions {
  /** A base URL that replaces the SDK's own (no merchant subdomain is then required). */
  host: string;
  /** `axios` is the SDK's only HTTP client that honours `timeout` (its default, `fetch`, never times out). */
  httpClient: 'axios';
  timeout: number;
}

interface CheckoutPackage {
  default?: new (secretKey: string, options: CheckoutOptions) => CheckoutClient;
  Checkout?: new (secretKey: string, options: CheckoutOptions) => CheckoutClient;
}

/**
 * The SDK, loaded the first time a command is sent; null when it is not installed. Version 5 is
 * an ES module: Node 22 (this package's engine) requires it as any other.
 */
const checkoutPackage = optionalPackage(CHECKOUT_PACKAGE, () => require(CHECKOUT_PACKAGE) as CheckoutPackage);

/**
 * Environment variables the SDK reads before the key it is given: with `CKO_SECRET` it signs in
 * with OAuth, with `CKO_SECRET_KEY` it uses that key. Either would send the command with other
 * credentials than the endpoint's, so none is sent while one is set.
 */
const OVERRIDING_ENV = ['CKO_SECRET', 'CKO_SECRET_KEY'] as const;

/**
 * A client per call: building one is cheap (no connection pool: axios uses Node's global agent),
 * a command is rare, and the timeout is the call's own (`context.timeoutMs`). The SDK has no
 * retries of its own; the outbox retries with the same key.
 */
function clientFor(endpoint: ProviderEndpoint & { apiKey: string }, context: CommandContext): CheckoutClient | string {
  const pkg = checkoutPackage();
  const Checkout = pkg?.default ?? pkg?.Checkout;
  if (!Checkout) return `endpoint "${endpoint.id}" needs the ${CHECKOUT_PACKAGE} package: npm install ${CHECKOUT_PACKAGE}`;
  const overriding = OVERRIDING_ENV.find((name) => process.env[name] !== undefined);
  if (overriding) return `${overriding} is set in the environment: ${CHECKOUT_PACKAGE} would use it instead of endpoint "${endpoint.id}"'s apiKey`;
  return new Checkout(endpoint.apiKey, {
    host: (endpoint.apiBaseUrl ?? 'https://api.checkout.com').replace(/\/+$/, ''),
    httpClient: 'axios',
    timeout: context.timeoutMs,
  });
}

/**
 * Checkout.com (docs/commands.md#checkoutcom): refunds, captures (whole or partial) and voids
 * through `checkout-sdk-node`, the command's key as `Cko-Idempotency-Key`. Checkout.com answers
 * `202 { action_id, reference }`: a refund is confirmed by `payment_refunded` (its `action_id`),
 * or failed by `payment_refund_declined`.
 */
export const checkoutCommands: PaymentCommands = {
  types: ['refund', 'capture', 'void'],

  ready: (endpoint) => typeof endpoint.apiKey === 'string' && endpoint.apiKey !== '',

  async send(command: PaymentCommand, target: CommandTarget, context: CommandContext): Promise<CommandAnswer> {
    const { endpoint, idempotencyKey } = context;
    if (!checkoutCommands.ready(endpoint)) return { ok: false, retryable: false, reason: `endpoint "${endpoint.id}" has no Checkout.com secret key (apiKey)` };
    const apiKey = endpoint.apiKey as string;
    const client = clientFor(endpoint as ProviderEndpoint & { apiKey: string }, context);
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
 * the body (`body`: `{ error_type, error_codes }`), but drops the answer's headers, so no
 * `Retry-After` reaches here: a 429 is retried on the outbox's own backoff. Its timeout
 * (`ApiTimeout`, given `http_code` 408) is no answer at all: the effect may have happened.
 */
export function checkoutFailure(err: unknown, apiKey: string): CommandAnswer {
  const e = (err ?? {}) as { name?: unknown; http_code?: unknown; body?: unknown; message?: unknown };
  if (e.name === 'ApiTimeout') return failedCall(null, 'Checkout.com did not answer in time');
  const status = typeof e.http_code === 'number' && e.http_code >= 100 ? e.http_code : null;
  return failedCall(status, withoutSecret(reasonOf(e.body, e.message), apiKey));
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

function withoutSecret(text: string, secret: string): string {
  return secret.length > 0 ? text.split(secret).join('[redacted]') : text;
}
