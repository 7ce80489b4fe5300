import { optionalPackage } from './optional-package';
import type { ProviderEndpoint } from './provider';

/**
 * What this module calls of Paddle's official SDK, `@paddle/paddle-node-sdk` (3.x): typed here, so
 * that a host without the package still compiles, and shared by the payment commands
 * (paddle.commands.ts) and the transaction read of polling (paddle.reader.ts).
 */

/** The npm package of Paddle's official SDK, an optional peer dependency of this module. */
export const PADDLE_PACKAGE = '@paddle/paddle-node-sdk';

/** The base URL of Paddle's API, where an endpoint's `apiKey` is used (a sandbox key needs `https://sandbox-api.paddle.com`). */
export const PADDLE_API = 'https://api.paddle.com';

/** An adjustment as the SDK gives it (camelCase). */
export interface PaddleAdjustment {
  id: string;
  action: string;
  status: string;
  reason: string;
  items: Array<{ itemId: string; amount: string | null }>;
}

export interface PaddleCollection<T> {
  hasMore: boolean;
  next(): Promise<T[]>;
}

export type AdjustmentItem = { itemId: string; type: 'partial'; amount: string };

/** A transaction's totals as the SDK gives them (camelCase); only what this module reads is typed. */
export interface PaddleTotals {
  subtotal?: string;
  discount?: string;
  tax?: string;
  total?: string;
  credit?: string;
  balance?: string;
  grandTotal?: string;
  currencyCode?: string;
}

/** A transaction as the SDK gives it (camelCase; `customData` as Paddle stores it, keys untouched). */
export interface PaddleTransaction {
  id?: string;
  status?: string;
  currencyCode?: string;
  customData?: Record<string, unknown> | null;
  origin?: string;
  collectionMode?: string;
  customerId?: string | null;
  subscriptionId?: string | null;
  invoiceNumber?: string | null;
  createdAt?: string;
  updatedAt?: string;
  billedAt?: string | null;
  details: { totals?: PaddleTotals | null; lineItems: Array<{ id: string; totals: { total: string } | null }> } | null;
}

/** What this module calls of a `Paddle` client. */
export interface PaddleClient {
  adjustments: {
    list(query: { transactionId: string[]; action: 'refund'; perPage: number }): PaddleCollection<PaddleAdjustment>;
    create(
      body:
        | { action: 'refund'; transactionId: string; reason: string; type: 'full' }
        | { action: 'refund'; transactionId: string; reason: string; type: 'partial'; items: AdjustmentItem[] },
    ): Promise<PaddleAdjustment>;
  };
  transactions: {
    get(id: string): Promise<PaddleTransaction>;
  };
}

interface PaddlePackage {
  /** `environment` is `sandbox`, `production`, or any other base URL, which the SDK then uses as it is. */
  Paddle?: new (apiKey: string, options: { environment: string }) => PaddleClient;
}

/** The SDK, loaded the first time a command is sent or a transaction read; null when it is not installed. */
const paddlePackage = optionalPackage(PADDLE_PACKAGE, () => require(PADDLE_PACKAGE) as PaddlePackage);

/** Whether an endpoint holds what Paddle's API needs: its API key. */
export function hasPaddleKey(endpoint: ProviderEndpoint): endpoint is ProviderEndpoint & { apiKey: string } {
  return typeof endpoint.apiKey === 'string' && endpoint.apiKey !== '';
}

/**
 * A client per call: building one is cheap (it uses the global `fetch`), a call is rare. The SDK
 * neither retries nor times out: a caller bounds its wait with `withinTimeout`. A string says why
 * there is none (the package is not installed).
 */
export function paddleClient(endpoint: ProviderEndpoint & { apiKey: string }): PaddleClient | string {
  const Paddle = paddlePackage()?.Paddle;
  if (!Paddle) return `endpoint "${endpoint.id}" needs the ${PADDLE_PACKAGE} package: npm install ${PADDLE_PACKAGE}`;
  return new Paddle(endpoint.apiKey, { environment: (endpoint.apiBaseUrl ?? PADDLE_API).replace(/\/+$/, '') });
}

/**
 * The work's result, or `late()` once `timeoutMs` has passed: an answer that comes later is no
 * answer (the SDK cannot cancel its request).
 */
export async function withinTimeout<T>(work: Promise<T>, timeoutMs: number, late: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((resolve) => {
    timer = setTimeout(() => resolve(late()), timeoutMs);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Paddle's error codes that say the status the SDK does not keep (its `ApiError` has Paddle's
 * `type`, `code`, `detail` and `Retry-After`, not the HTTP status): the retryable ones, and a few
 * common refusals, by code; any other `api_error` is a 500, any other `request_error` a 400.
 */
const STATUS_OF_CODE: ReadonlyMap<string, number> = new Map([
  ['too_many_requests', 429],
  ['conflict', 409],
  ['concurrent_modification', 409],
  ['bad_gateway', 502],
  ['service_unavailable', 503],
  ['internal_error', 500],
  // Refusals named for the reader of the reason: the status they come with.
  ['not_found', 404],
  ['forbidden', 403],
  ['authentication_missing', 403],
  ['authentication_malformed', 403],
]);

/** What the SDK threw, as the module reads it: the status (null: no answer), Paddle's code, a reason, `Retry-After`. */
export interface PaddleFailure {
  status: number | null;
  /** Paddle's error code (`not_found`, `too_many_requests`…); null when Paddle did not answer with its error body. */
  code: string | null;
  /** One line, without the API key. */
  reason: string;
  /** `Retry-After` in whole seconds, as text; null when none. */
  retryAfter: string | null;
}

/**
 * What the SDK threw: an `ApiError` (Paddle answered with its error body), read by its code; else
 * no answer (a network error, a body that is not JSON: a proxy's page).
 */
export function paddleFailure(err: unknown, apiKey: string): PaddleFailure {
  const e = (err ?? {}) as { type?: unknown; code?: unknown; detail?: unknown; message?: unknown; retryAfter?: unknown; cause?: { code?: unknown } };
  const causeCode = typeof e.cause?.code === 'string' ? ` (${e.cause.code})` : '';
  const message = typeof e.message === 'string' && e.message !== '' ? `${e.message}${causeCode}` : 'Paddle did not answer';
  if (typeof e.code !== 'string' || (e.type !== 'request_error' && e.type !== 'api_error')) return { status: null, code: null, reason: withoutSecret(message, apiKey), retryAfter: null };
  const status = STATUS_OF_CODE.get(e.code) ?? (e.type === 'api_error' ? 500 : 400);
  const detail = typeof e.detail === 'string' && e.detail !== '' ? `${e.code}: ${e.detail}` : e.code;
  const retryAfter = typeof e.retryAfter === 'number' && Number.isInteger(e.retryAfter) && e.retryAfter >= 0 ? String(e.retryAfter) : null;
  return { status, code: e.code, reason: withoutSecret(detail, apiKey), retryAfter };
}

function withoutSecret(text: string, secret: string): string {
  return secret.length > 0 ? text.split(secret).join('[redacted]') : text;
}
