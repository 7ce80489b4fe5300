import { retryAfterMs } from './stripe-api';
import { ProviderApiError, RATE_LIMITED } from './provider';
import type { PaymentReader, PaymentReading, PollTarget, ProviderAdapter, ReadContext } from './provider';
import { hasPaddleKey, paddleClient, paddleFailure, withinTimeout, type PaddleTotals, type PaddleTransaction } from './paddle-client';

/**
 * A transaction's status, as the notification Paddle sends when a transaction takes it: the type a
 * read transaction is given as, which the adapter's `normalize` then reads as it reads that
 * notification (so a status means what its notification means, and nothing when that means nothing).
 */
const TYPE_OF_STATUS: ReadonlyMap<string, string> = new Map([
  ['draft', 'transaction.created'],
  ['ready', 'transaction.ready'],
  ['billed', 'transaction.billed'],
  ['paid', 'transaction.paid'],
  ['completed', 'transaction.completed'],
  ['canceled', 'transaction.canceled'],
  ['past_due', 'transaction.past_due'],
]);

/** Paddle's statuses are lower-case words (`paid`, `past_due`…): anything else is no answer to record. */
const STATUS = /^[a-z][a-z_]{0,39}$/;

function totalsJson(totals: PaddleTotals | null | undefined): Record<string, unknown> | undefined {
  if (!totals) return undefined;
  return withoutUndefined({
    subtotal: totals.subtotal,
    discount: totals.discount,
    tax: totals.tax,
    total: totals.total,
    credit: totals.credit,
    balance: totals.balance,
    grand_total: totals.grandTotal,
    currency_code: totals.currencyCode,
  });
}

function withoutUndefined(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

/**
 * The transaction as a `transaction.*` notification carries it in `data` (snake_case, as Paddle's API
 * writes it; the SDK gives camelCase), with the fields the adapter reads and a few that identify it
 * in the archive; line items, payments and the customer's details are left out.
 */
function notificationOf(transaction: PaddleTransaction, eventType: string): Record<string, unknown> {
  const totals = totalsJson(transaction.details?.totals);
  const data = withoutUndefined({
    id: transaction.id,
    status: transaction.status,
    currency_code: transaction.currencyCode,
    // Paddle keeps custom_data as it was given, and so does the SDK: `order_id` is the shop's key.
    custom_data: transaction.customData ?? null,
    origin: transaction.origin,
    collection_mode: transaction.collectionMode,
    customer_id: transaction.customerId ?? null,
    subscription_id: transaction.subscriptionId ?? null,
    invoice_number: transaction.invoiceNumber ?? null,
    details: totals === undefined ? undefined : { totals },
    created_at: transaction.createdAt,
    updated_at: transaction.updatedAt,
    billed_at: transaction.billedAt ?? null,
  });
  return withoutUndefined({
    event_type: eventType,
    // When the transaction last changed: the time the adapter reads as the event's.
    occurred_at: transaction.updatedAt,
    data,
  });
}

/**
 * Paddle Billing (docs/operations.md#when-webhooks-stop): "Get a transaction" (`GET
 * /transactions/{id}`) through `@paddle/paddle-node-sdk`'s `transactions.get`, with the endpoint's
 * API key, bounded by the read's timeout (the SDK neither retries nor times out). The answer is given
 * as the notification of its status (`paid` → `transaction.paid`, `completed` →
 * `transaction.completed`, `canceled` → `transaction.canceled`: succeeded, succeeded, canceled);
 * `draft`, `ready`, `billed` and `past_due` are nothing the service acts on, as their notifications
 * are. Refunds are adjustments, which the adapter reads from `adjustment.*` notifications only: a
 * transaction's read says nothing of them (`refunded` is always `0`). `not_found`: Paddle does not
 * know the transaction.
 */
export function paddlePaymentReader(normalize: ProviderAdapter['normalize']): PaymentReader {
  return {
    ready: hasPaddleKey,

    async read(target: PollTarget, context: ReadContext): Promise<PaymentReading> {
      const { endpoint } = context;
      const transactionId = target.providerPaymentId;
      if (!hasPaddleKey(endpoint)) throw new ProviderApiError(`endpoint "${endpoint.id}" has no Paddle API key (apiKey)`, null, 'endpoint_not_configured');
      const client = paddleClient(endpoint);
      if (typeof client === 'string') throw new ProviderApiError(client, null, 'endpoint_not_configured');
      const apiKey = endpoint.apiKey;
      type Answer = { transaction: PaddleTransaction } | { failure: unknown } | { late: true };
      const answer = await withinTimeout<Answer>(
        client.transactions.get(transactionId).then(
          (transaction) => ({ transaction }),
          (failure: unknown) => ({ failure }),
        ),
        context.timeoutMs,
        () => ({ late: true }),
      );
      if ('late' in answer) throw new ProviderApiError(`Paddle did not answer "Get a transaction" ${transactionId} in time`);
      if ('failure' in answer) {
        const failure = paddleFailure(answer.failure, apiKey);
        if (failure.code === 'not_found') return { found: false };
        const what = failure.status === null ? 'gave no answer' : `answered ${failure.status}`;
        throw new ProviderApiError(
          `Paddle ${what} to "Get a transaction" ${transactionId}: ${failure.reason}`,
          retryAfterMs(failure.retryAfter),
          failure.status === 429 ? RATE_LIMITED : undefined,
        );
      }
      const { transaction } = answer;
      if (transaction?.id !== transactionId) throw new ProviderApiError(`Paddle answered "Get a transaction" ${transactionId} with another transaction`);
      const status = transaction.status;
      if (typeof status !== 'string' || !STATUS.test(status)) throw new ProviderApiError(`Paddle answered "Get a transaction" ${transactionId} without a readable status`);
      const eventType = TYPE_OF_STATUS.get(status) ?? `transaction.${status}`;
      const body = notificationOf(transaction, eventType);
      return {
        found: true,
        status,
        refunded: '0',
        event: normalize(body, eventType, endpoint) === null ? null : { eventType, body },
      };
    },
  };
}
