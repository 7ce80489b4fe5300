import { failedCall } from './command-answers';
import { hasPaddleKey, paddleClient, paddleFailure, withinTimeout, type AdjustmentItem, type PaddleAdjustment, type PaddleClient } from './paddle-client';
import type { CommandAnswer, CommandContext, CommandTarget, PaymentCommand, PaymentCommands, ProviderEndpoint } from './provider';

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

  ready: hasPaddleKey,

  async send(command: PaymentCommand, target: CommandTarget, context: CommandContext): Promise<CommandAnswer> {
    const { endpoint } = context;
    if (command.type !== 'refund') return { ok: false, retryable: false, reason: `Paddle has no ${command.type}: a transaction is paid when it completes` };
    if (!paddleCommands.ready(endpoint)) return { ok: false, retryable: false, reason: `endpoint "${endpoint.id}" has no Paddle API key (apiKey)` };
    const apiKey = endpoint.apiKey as string;
    const client = paddleClient(endpoint as ProviderEndpoint & { apiKey: string });
    if (typeof client === 'string') return { ok: false, retryable: false, reason: client };
    return withinTimeout(
      refund(client, command, target, context.idempotencyKey).catch((err: unknown) => paddleAnswer(err, apiKey)),
      context.timeoutMs,
      () => failedCall(null, 'Paddle did not answer in time'),
    );
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

/** What the SDK threw, as a command's answer: no answer (a network error, a proxy's page) may have happened. */
function paddleAnswer(err: unknown, apiKey: string): CommandAnswer {
  const failure = paddleFailure(err, apiKey);
  return failedCall(failure.status, failure.reason, failure.retryAfter);
}
