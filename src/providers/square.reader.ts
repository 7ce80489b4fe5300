import { retryAfterMs } from './stripe-api';
import { ProviderApiError, RATE_LIMITED } from './provider';
import type { PaymentReader, PaymentReading, PollTarget, ProviderAdapter, ReadContext } from './provider';
import { hasSquareToken, squareClient, squareFailure, type SquareMoney, type SquarePayment } from './square-client';

/** The notification type whose body a read payment is given as: the one Square sends when a payment moves. */
const PAYMENT_UPDATED = 'payment.updated';

/** Square's statuses are upper-case words (`APPROVED`, `COMPLETED`…): anything else is no answer to record. */
const STATUS = /^[A-Z][A-Z_]{0,39}$/;

/** An SDK amount as JSON: a number while it stays exact, else its digits (both are minor units to `normalize`). */
function minorJson(amount: SquareMoney['amount']): number | string | null {
  if (typeof amount === 'bigint') return amount <= BigInt(Number.MAX_SAFE_INTEGER) && amount >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(amount) : amount.toString();
  return typeof amount === 'number' && Number.isSafeInteger(amount) ? amount : null;
}

function moneyJson(money: SquareMoney | null | undefined): { amount: number | string; currency: string | null } | undefined {
  const amount = minorJson(money?.amount);
  return amount === null ? undefined : { amount, currency: money?.currency ?? null };
}

/**
 * The payment as the `payment.updated` notification carries it (snake_case, as Square's API writes
 * it), with the fields the adapter reads and a few that identify it in the archive; card details and
 * the buyer's data are left out. The seller is the one the endpoint's token belongs to.
 *
 * `refunded_money` is left out: a poll asks about a payment the module holds as open, which cannot
 * take a refund before its capture (a cumulative refund would be rejected and the payment left
 * open). The poll records the capture; the refund is recorded by its own `payment.updated`
 * notification, and the amount read stays in the poll's event id.
 */
function notificationOf(payment: SquarePayment, merchantId: string): Record<string, unknown> {
  const fields: Record<string, unknown> = {
    id: payment.id,
    status: payment.status,
    amount_money: moneyJson(payment.amountMoney),
    total_money: moneyJson(payment.totalMoney),
    approved_money: moneyJson(payment.approvedMoney),
    reference_id: payment.referenceId ?? undefined,
    order_id: payment.orderId ?? undefined,
    location_id: payment.locationId ?? undefined,
    created_at: payment.createdAt,
    updated_at: payment.updatedAt,
  };
  const object = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
  return {
    merchant_id: merchantId,
    type: PAYMENT_UPDATED,
    // When the payment last changed: the time the adapter reads as the event's.
    ...(payment.updatedAt === undefined ? {} : { created_at: payment.updatedAt }),
    data: { type: 'payment', id: payment.id, object: { payment: object } },
  };
}

/**
 * Square (docs/operations.md#when-webhooks-stop): GetPayment (`GET /v2/payments/{id}`) through the
 * official `square` package, with the endpoint's access token, no retry of the client's own, and the
 * read's timeout. The answer is given as the `payment.updated` notification Square would have sent,
 * which the adapter's `normalize` reads: `APPROVED` authorized, `PENDING` processing, `COMPLETED`
 * succeeded (refunded or not: see `notificationOf`), `CANCELED`, `FAILED`; a status it does not act
 * on is no event. `refunded` is `refunded_money.amount`, `0` when none.
 * `404 NOT_FOUND`: Square does not know the payment.
 */
export function squarePaymentReader(normalize: ProviderAdapter['normalize']): PaymentReader {
  return {
    ready: hasSquareToken,

    async read(target: PollTarget, context: ReadContext): Promise<PaymentReading> {
      const { endpoint } = context;
      const paymentId = target.providerPaymentId;
      if (!hasSquareToken(endpoint)) throw new ProviderApiError(`endpoint "${endpoint.id}" has no Square access token (apiKey)`, null, 'endpoint_not_configured');
      const made = squareClient(endpoint, context.timeoutMs);
      if (typeof made === 'string') throw new ProviderApiError(made, null, 'endpoint_not_configured');
      let payment: SquarePayment | undefined;
      try {
        ({ payment } = await made.client.payments.get({ paymentId }, made.options));
      } catch (err) {
        const failure = squareFailure(err, endpoint.apiKey, 'Square answered no reason');
        // Square's own NOT_FOUND: another 404 (a wrong base URL, a proxy's page) says nothing of the payment.
        if (failure.status === 404 && failure.codes.includes('NOT_FOUND')) return { found: false };
        const what = failure.status === null ? 'gave no answer' : `answered ${failure.status}`;
        throw new ProviderApiError(
          `Square ${what} to GetPayment ${paymentId}: ${failure.reason}`,
          failure.status === null ? null : retryAfterMs(failure.retryAfter),
          failure.status === 429 ? RATE_LIMITED : undefined,
        );
      }
      if (payment?.id !== paymentId) throw new ProviderApiError(`Square answered GetPayment ${paymentId} with another payment`);
      const status = payment.status;
      if (typeof status !== 'string' || !STATUS.test(status)) throw new ProviderApiError(`Square answered GetPayment ${paymentId} without a readable status`);
      const refunded = minorJson(payment.refundedMoney?.amount);
      const body = notificationOf(payment, target.merchantAccountId);
      return {
        found: true,
        status,
        refunded: refunded === null ? '0' : String(refunded),
        event: normalize(body, PAYMENT_UPDATED, endpoint) === null ? null : { eventType: PAYMENT_UPDATED, body },
      };
    },
  };
}
