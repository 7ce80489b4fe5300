import { optionalPackage } from './optional-package';
import { asObject } from './provider';
import type { ProviderEndpoint } from './provider';

/**
 * What this module calls of Square's official SDK, `square` (40 and later): typed here, so that a
 * host without the package still compiles, and shared by the payment commands
 * (square.commands.ts) and the payment read of polling (square.reader.ts).
 */

/** The npm package of Square's official SDK, an optional peer dependency of this module. */
export const SQUARE_PACKAGE = 'square';

/** Where Square's API answers (production); a sandbox or a test sets `apiBaseUrl`. */
export const SQUARE_API_BASE_URL = 'https://connect.squareup.com';

/** Square's answer to RefundPayment, as the SDK gives it (camelCase). */
export interface SquareRefund {
  id?: string;
  status?: string;
}

/** An amount as the SDK gives it: minor units as a bigint (a number in older releases). */
export interface SquareMoney {
  amount?: bigint | number | null;
  currency?: string | null;
}

/** Square's Payment object as the SDK gives it (camelCase); only what this module reads is typed. */
export interface SquarePayment {
  id?: string;
  status?: string;
  amountMoney?: SquareMoney | null;
  totalMoney?: SquareMoney | null;
  approvedMoney?: SquareMoney | null;
  refundedMoney?: SquareMoney | null;
  referenceId?: string | null;
  orderId?: string | null;
  locationId?: string | null;
  createdAt?: string;
  updatedAt?: string;
}

export interface SquareRequestOptions {
  timeoutInSeconds: number;
  maxRetries: number;
}

/** What this module calls of a `SquareClient`. */
export interface SquareClient {
  refunds: {
    refundPayment(
      request: { idempotencyKey: string; paymentId: string; amountMoney: { amount: bigint; currency: string }; reason?: string },
      options: SquareRequestOptions,
    ): Promise<{ refund?: SquareRefund }>;
  };
  payments: {
    get(request: { paymentId: string }, options: SquareRequestOptions): Promise<{ payment?: SquarePayment }>;
    complete(request: { paymentId: string }, options: SquareRequestOptions): Promise<unknown>;
    cancel(request: { paymentId: string }, options: SquareRequestOptions): Promise<unknown>;
  };
}

interface SquareClientPackage {
  SquareClient?: new (options: { token: string; baseUrl: string; timeoutInSeconds: number; maxRetries: number }) => SquareClient;
}

/** The SDK, loaded the first time a command is sent or a payment read; null when it is not installed. */
const squarePackage = optionalPackage(SQUARE_PACKAGE, () => require(SQUARE_PACKAGE) as SquareClientPackage);

/** Whether an endpoint holds what Square's API needs: its access token (`apiKey`). */
export function hasSquareToken(endpoint: ProviderEndpoint): endpoint is ProviderEndpoint & { apiKey: string } {
  return typeof endpoint.apiKey === 'string' && endpoint.apiKey !== '';
}

/**
 * A client per call: building one is cheap (it uses the global `fetch`, no pool of its own), a call
 * is rare, and a rotated token is used at once. Its retries are off (`maxRetries: 0`, on the client
 * and the call): the caller retries (the outbox with the same key, the poller at its next turn).
 * A string says why there is none (the package is not installed).
 */
export function squareClient(endpoint: ProviderEndpoint & { apiKey: string }, timeoutMs: number): { client: SquareClient; options: SquareRequestOptions } | string {
  const SquareClient = squarePackage()?.SquareClient;
  if (!SquareClient) return `endpoint "${endpoint.id}" needs the ${SQUARE_PACKAGE} package 40 or later: npm install ${SQUARE_PACKAGE}`;
  const options = { timeoutInSeconds: timeoutMs / 1000, maxRetries: 0 };
  const client = new SquareClient({ token: endpoint.apiKey, baseUrl: (endpoint.apiBaseUrl ?? SQUARE_API_BASE_URL).replace(/\/+$/, ''), ...options });
  return { client, options };
}

/** What the SDK threw, as the module reads it: the HTTP status (null: no answer), Square's error codes, a reason, `Retry-After`. */
export interface SquareFailure {
  status: number | null;
  /** Square's `errors[].code` (`NOT_FOUND`, `RATE_LIMITED`…), in order; empty when the answer had none. */
  codes: string[];
  /** One line, without the access token. */
  reason: string;
  retryAfter: string | null;
}

/**
 * What the SDK threw: a `SquareError` keeps the status (`statusCode`), Square's `errors`
 * (`[{ category, code, detail }]`) and the raw answer (its `Retry-After`); its timeout, or an
 * error without a status, is no answer. `refused`: the reason of an answer without Square's errors.
 */
export function squareFailure(err: unknown, token: string, refused = 'Square refused the command'): SquareFailure {
  const e = (err ?? {}) as { name?: unknown; statusCode?: unknown; errors?: unknown; message?: unknown; cause?: unknown; rawResponse?: { headers?: { get?(name: string): string | null } } };
  // The SDK aborts its own request with the reason "timeout": fetch rejects with that string, which
  // the SDK wraps as an unknown error (its SquareTimeoutError only for an AbortError).
  if (e.name === 'SquareTimeoutError' || e.cause === 'timeout') return { status: null, codes: [], reason: 'Square did not answer in time', retryAfter: null };
  const status = typeof e.statusCode === 'number' && e.statusCode >= 100 ? e.statusCode : null;
  const retryAfter = typeof e.rawResponse?.headers?.get === 'function' ? e.rawResponse.headers.get('retry-after') : null;
  const errors = (Array.isArray(e.errors) ? e.errors : [])
    .map((x) => asObject(x))
    .filter((x): x is Record<string, unknown> => x !== undefined && typeof x.code === 'string' && x.code !== 'Unknown');
  return { status, codes: errors.map((x) => x.code as string), reason: withoutSecret(reasonOf(errors, causeMessage(e.cause) ?? e.message, status, refused), token), retryAfter };
}

/** Square's errors (`INSUFFICIENT_PERMISSIONS: …; REFUND_AMOUNT_INVALID: …`), else the SDK's first line. */
function reasonOf(errors: ReadonlyArray<Record<string, unknown>>, message: unknown, status: number | null, refused: string): string {
  const listed = errors.map((x) => (typeof x.detail === 'string' && x.detail !== '' ? `${x.code as string}: ${x.detail}` : (x.code as string)));
  if (listed.length > 0) return listed.join('; ');
  const firstLine = typeof message === 'string' ? message.split('\n')[0] : '';
  // The SDK's message of an answer without Square's errors is only `Status code: …`.
  return firstLine !== '' && !firstLine.startsWith('Status code:') ? firstLine : status === null ? 'Square did not answer' : refused;
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
