import { failedCall } from './command-answers';
import { optionalPackage } from './optional-package';
import type { CommandAnswer, CommandContext, CommandTarget, PaymentCommand, PaymentCommands } from './provider';

/** The npm package of Paddle's official SDK, an optional peer dependency of this module. */
export const PADDLE_PACKAGE = '@paddle/paddle-node-sdk';

/** An adjustment as the SDK gives it (camelCase). */
interface PaddleAdjustment {
  id: string;
  action: string;
  status: string;
  reason: string;
  items: Array<{ itemId: string; amount: string | null }>;
}

interface PaddleCollection<T> {
  hasMore: boolean;
  next(): Promise<T[]>;
}

type AdjustmentItem = { itemId: string; type: 'partial'; amount: string };

/** What this module calls of `@paddle/paddle-node-sdk` (3.x), typed here so that a host without the package still compiles. */
interface PaddleClient {
  adjustments: {
    list(query: { transactionId: string[]; action: 'refund'; perPage: number }): PaddleCollection<PaddleAdjustment>;
    create(
      body:
        | { action: 'refund'; transactionId: string; reason: string; type: 'full' }
        | { action: 'refund'; transactionId: string; reason: string; type: 'partial'; items: AdjustmentItem[] },
    ): Promise<PaddleAdjustment>;
  };
  transactions: {
    get(id: string): Promise<{ details: { lineItems: Array<{ id: string; totals: { total: string } | null }> } | null }>;
  };
}

interface PaddlePackage {
  /** `environment` is `sandbox`, `production`, or any other base URL, which the SDK then uses as it is. */
  Paddle?: new (apiKey: string, options: { environment: string }) => PaddleClient;
}

/** The SDK, loaded the first time a command is sent; null when it is not installed. */
const paddlePackage = optionalPackage(PADDLE_PACKAGE, () => require(PADDLE_PACKAGE) as PaddlePackage);

/** How many pages of a transaction's refunds are read to find one already made for a key (50 a page). */
const MAX_PAGES = 20;
const PER_PAGE = 50;
/** The shop's reason, cut so that the key's mark always fits after it. */
const REASON_MAX = 200;

/**
 * The mark a refund's reason carries so that the same command is never sent twice: Paddle's API
 * takes no idempotency key, so the key is put where Paddle keeps it, and looked for first.
 */
export function keyMark(idempotencyKey: string): string {
  return `[pw:${idempotencyKey}]`;
}

/**
 * Paddle Billing (docs/commands.md#paddle): a refund is an adjustment (`action: refund`), through
 * `@paddle/paddle-node-sdk`. Paddle has no capture or void of its own (a transaction is paid when it
 * completes), and its API takes no idempotency key: the command's key goes at the end of the
 * adjustment's `reason` (`[pw:<key>]`), and before creating one the transaction's refunds are read,
 * so an adjustment already made for that key is answered instead of a second one. The whole
 * transaction is refunded with `type: full`; a part of it with `type: partial`, spread over the
 * transaction's line items in their order, each up to what is left of it (tax included, Paddle's
 * default `tax_mode`).
 *
 * A client per call: building one is cheap (it uses the global `fetch`), a command is rare. The SDK
 * neither retries nor times out: the whole command is bounded by `context.timeoutMs` here, and an
 * answer that comes later is no answer (the effect may have happened: the next attempt reads the
 * refunds first).
 */
export const paddleCommands: PaymentCommands = {
  types: ['refund'],

  ready: (endpoint) => typeof endpoint.apiKey === 'string' && endpoint.apiKey !== '',

  async send(command: PaymentCommand, target: CommandTarget, context: CommandContext): Promise<CommandAnswer> {
    const { endpoint } = context;
    if (command.type !== 'refund') return { ok: false, retryable: false, reason: `Paddle has no ${command.type}: a transaction is paid when it completes` };
    if (!paddleCommands.ready(endpoint)) return { ok: false, retryable: false, reason: `endpoint "${endpoint.id}" has no Paddle API key (apiKey)` };
    const Paddle = paddlePackage()?.Paddle;
    if (!Paddle) return { ok: false, retryable: false, reason: `endpoint "${endpoint.id}" needs the ${PADDLE_PACKAGE} package: npm install ${PADDLE_PACKAGE}` };
    const apiKey = endpoint.apiKey as string;
    const client = new Paddle(apiKey, { environment: (endpoint.apiBaseUrl ?? 'https://api.paddle.com').replace(/\/+$/, '') });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<CommandAnswer>((resolve) => {
      timer = setTimeout(() => resolve(failedCall(null, 'Paddle did not answer in time')), context.timeoutMs);
    });
    try {
      return await Promise.race([refund(client, command, target, context.idempotencyKey).catch((err: unknown) => paddleFailure(err, apiKey)), late]);
    } finally {
      clearTimeout(timer);
    }
  },
};

async function refund(client: PaddleClient, command: Extract<PaymentCommand, { type: 'refund' }>, target: CommandTarget, key: string): Promise<CommandAnswer> {
  const transactionId = target.providerPaymentId;
  const mark = keyMark(key);
  const refunds = await refundsOf(client, transactionId);
  const made = refunds.find((a) => a.reason.endsWith(mark));
  if (made) return adjustmentAnswer(made);
  const live = refunds.filter((a) => a.status !== 'rejected');
  const reason = `${(command.reason ?? '').trim().slice(0, REASON_MAX) || 'refund'} ${mark}`;
  if (command.amount.minor === target.amount.minor && live.length === 0) {
    return adjustmentAnswer(await client.adjustments.create({ action: 'refund', transactionId, reason, type: 'full' }));
  }
  const items = spread(command.amount.minor, (await client.transactions.get(transactionId)).details?.lineItems ?? [], live);
  if (typeof items === 'string') return { ok: false, retryable: false, reason: items };
  return adjustmentAnswer(await client.adjustments.create({ action: 'refund', transactionId, reason, type: 'partial', items }));
}

/** The transaction's refund adjustments, every page up to MAX_PAGES. */
async function refundsOf(client: PaddleClient, transactionId: string): Promise<PaddleAdjustment[]> {
  const collection = client.adjustments.list({ transactionId: [transactionId], action: 'refund', perPage: PER_PAGE });
  const all: PaddleAdjustment[] = [];
  for (let page = 0; page < MAX_PAGES && collection.hasMore; page++) all.push(...(await collection.next()));
  return all;
}

/**
 * A partial refund as adjustment items: the amount spread over the line items in order, each up
 * to its total less what live refunds already took of it. A string when it does not fit.
 */
function spread(amount: bigint, lineItems: ReadonlyArray<{ id: string; totals: { total: string } | null }>, live: readonly PaddleAdjustment[]): AdjustmentItem[] | string {
  const taken = new Map<string, bigint>();
  for (const a of live) for (const item of a.items) taken.set(item.itemId, (taken.get(item.itemId) ?? 0n) + toMinor(item.amount));
  const items: AdjustmentItem[] = [];
  let left = amount;
  for (const line of lineItems) {
    if (left === 0n) break;
    const room = toMinor(line.totals?.total ?? null) - (taken.get(line.id) ?? 0n);
    if (room <= 0n) continue;
    const part = room < left ? room : left;
    items.push({ itemId: line.id, type: 'partial', amount: part.toString() });
    left -= part;
  }
  if (left > 0n) return `the transaction's line items have ${(amount - left).toString()} (minor units) left to refund, less than ${amount.toString()}`;
  return items;
}

function toMinor(value: string | null): bigint {
  return value !== null && /^\d+$/.test(value) ? BigInt(value) : 0n;
}

/** A refund adjustment: `approved` is money already back; `rejected` is Paddle's refusal. */
function adjustmentAnswer(adjustment: PaddleAdjustment): CommandAnswer {
  if (adjustment.status === 'rejected') return { ok: false, retryable: false, reason: `Paddle rejected the refund (adjustment ${adjustment.id})` };
  return { ok: true, providerRefundId: adjustment.id, status: adjustment.status === 'approved' ? 'succeeded' : 'pending' };
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

/**
 * What the SDK threw: an `ApiError` (Paddle answered with its error body), read by its code; else
 * no answer (a network error, a body that is not JSON: a proxy's page), the effect may have happened.
 */
export function paddleFailure(err: unknown, apiKey: string): CommandAnswer {
  const e = (err ?? {}) as { type?: unknown; code?: unknown; detail?: unknown; message?: unknown; retryAfter?: unknown; cause?: { code?: unknown } };
  const causeCode = typeof e.cause?.code === 'string' ? ` (${e.cause.code})` : '';
  const message = typeof e.message === 'string' && e.message !== '' ? `${e.message}${causeCode}` : 'Paddle did not answer';
  if (typeof e.code !== 'string' || (e.type !== 'request_error' && e.type !== 'api_error')) return failedCall(null, withoutSecret(message, apiKey));
  const status = STATUS_OF_CODE.get(e.code) ?? (e.type === 'api_error' ? 500 : 400);
  const detail = typeof e.detail === 'string' && e.detail !== '' ? `${e.code}: ${e.detail}` : e.code;
  const retryAfter = typeof e.retryAfter === 'number' && Number.isInteger(e.retryAfter) && e.retryAfter >= 0 ? String(e.retryAfter) : null;
  return failedCall(status, withoutSecret(detail, apiKey), retryAfter);
}

function withoutSecret(text: string, secret: string): string {
  return secret.length > 0 ? text.split(secret).join('[redacted]') : text;
}
