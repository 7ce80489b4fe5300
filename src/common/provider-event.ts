/**
 * A provider event normalised to what the payment domain acts on (each provider's table in
 * docs/webhooks.md#signature-schemes). Amounts stay as the provider sent them, with their form,
 * until the processing transaction parses them against the currency (a bad amount is a mismatch,
 * not a crash).
 */
export type ProviderEventKind =
  | 'pending'
  | 'processing'
  | 'authorized'
  | 'succeeded'
  | 'failed'
  | 'canceled'
  | 'expired'
  | 'refunded'
  | 'disputed'
  | 'dispute_won'
  | 'dispute_lost'
  /**
   * (v4) No change of the payment: only the outcome of refunds (`refundOutcomes`), such as a refund
   * the provider failed. Applied to the refunds it names; the payment stays as it is.
   */
  | 'refund_outcome';

/** An amount as sent: a decimal string in the currency's exponent ("49.90") or integer minor units (4990). */
export type RawAmount = { form: 'decimal'; value: string } | { form: 'minor'; value: number | string };

export interface ProviderEvent {
  kind: ProviderEventKind;
  /** The provider's id of the payment (invoice, PaymentIntent, payment), or of a capture of it (`resourceKind`). */
  resourceId: string;
  /**
   * What `resourceId` names: the payment (the default), or one of its captures, for a provider whose
   * refunds and disputes name the capture and not the payment (PayPal). Such an event is about the
   * payment that capture was recorded for (`captureId`); until one is, it waits as an event whose
   * payment is not registered yet. It never creates a payment.
   */
  resourceKind?: 'payment' | 'capture';
  /**
   * The provider's id of the capture this event reports (PayPal `PAYMENT.CAPTURE.*`), recorded as the
   * payment's when the event is applied, so that the refunds and disputes that name it find the payment.
   */
  captureId?: string | null;
  /** Our order id when the event carries one (`order_id` / `metadata.order_id`). */
  orderId: string | null;
  /** The payment's amount as the event states it (captured amount for `succeeded`), if any. */
  amount: RawAmount | null;
  /** ISO 4217 code as sent (Stripe sends lower case). */
  currency: string | null;
  /** Cumulative refunded amount, for `refunded`. */
  refundedAmount: RawAmount | null;
  /**
   * One refund, for a provider that reports each refund with its own amount instead of the
   * cumulative one (Adyen `REFUND`): the provider's id of that refund and its amount. The payment
   * counts each id once (docs/design.md#refunds). With `canceled` (Adyen `CANCEL_OR_REFUND`) it is
   * what the cancel becomes when the payment was already captured. `reversal` (PayPal
   * `PAYMENT.CAPTURE.REVERSED`): the capture taken back, a refund of at most what is left of it.
   */
  refund?: { id: string; amount: RawAmount; reversal?: boolean } | null;
  /**
   * Our order as the provider echoes the merchant's reference for it (Adyen `merchantReference`):
   * the order's `reference`, or its id. Used like `orderId` when that is null.
   */
  orderReference?: string | null;
  /**
   * (v4) The provider's refunds this event reports an outcome of, by the provider's refund id: what
   * confirms (or fails) a refund the shop asked for through the module (docs/commands.md), matched by
   * its `providerRefundId`. A refund of its own amount (`refund` above) confirms itself and need not
   * be repeated here; an event that only moves a cumulative amount lists the refunds it names, when
   * it names them (a Stripe charge's `refunds.data`). A refund event that changes no amount (a
   * refund that failed) may still list its outcome here, with the event's `kind` left to `normalize`
   * (an event with no payment change is `ignored` unless it lists one).
   */
  refundOutcomes?: Array<{ id: string; status: 'succeeded' | 'failed'; reason?: string | null }>;
  /** The merchant account the body declares (Stripe `account`, Factuarea `account.id`, Standard `data.account_id`). */
  declaredAccount: string | null;
  /** When the provider says it happened, if it says. */
  occurredAt: Date | null;
}
