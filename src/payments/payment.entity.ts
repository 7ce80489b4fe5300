import { RecordsChanges } from '../common/aggregate';
import type { OrderEventType } from '../common/host-events';
import { uuid7 } from '../common/uuid7';
import { Money } from './money';
import type { ProviderEventKind } from '../common/provider-event';
import { canMove } from '../common/lifecycle';
import { ApplyResult, CAPTURED_STATUSES, decideMove, PAYMENT_LIFECYCLE, PaymentStatus } from './payment.state';

/** An event in the payment's own terms: amounts parsed against their currency. */
export interface PaymentChange {
  kind: ProviderEventKind;
  /** The payment's amount as the event states it (the captured amount for `succeeded`). */
  amount: Money | null;
  /** The currency the event states, when it states one without an amount (disputes). */
  currency: string | null;
  /** Cumulative refunded amount, for `refunded`. */
  refunded: Money | null;
  /**
   * One refund with its own amount (a provider that reports refunds one by one), for `refunded`;
   * with `canceled`, what a cancel of an already captured payment becomes (a cancel-or-refund).
   * `reversal`: the provider takes the capture back (PayPal `PAYMENT.CAPTURE.REVERSED`), which
   * refunds its amount but never more than earlier refunds left of the payment.
   */
  refund?: { id: string; amount: Money; reversal?: boolean };
}

/**
 * The Payment aggregate: one provider payment (invoice, PaymentIntent…) expected to bring an
 * order's exact amount. Its status only moves forward (PAYMENT_TRANSITIONS); every change goes
 * through `apply`, which returns the outcome as a value and never does twice what it already did.
 * Each applied move records the event it announces; PaymentStore maps and writes the row,
 * OrderChangesService saves and announces it.
 */
export class Payment extends RecordsChanges<OrderEventType, PaymentStatus> {
  id: string;
  orderId: string;
  provider: string;
  providerPaymentId: string;
  merchantAccountId: string;
  status: PaymentStatus;
  amountMinor: bigint;
  currency: string;
  refundedMinor: bigint;
  /**
   * The refunds counted one by one, by the provider's refund id (minor units): `refundedMinor` is
   * their sum for a provider that reports each refund with its own amount; empty for the others.
   */
  refunds: ReadonlyMap<string, bigint> = new Map();
  /** How the last dispute ended; a dispute event after that is stale. */
  disputeOutcome: 'won' | 'lost' | null;
  createdAt: Date;
  updatedAt: Date;

  static register(params: {
    orderId: string;
    provider: string;
    providerPaymentId: string;
    merchantAccountId: string;
    expected: Money;
    now?: Date;
  }): Payment {
    const now = params.now ?? new Date();
    const payment = Object.assign(new Payment(), {
      id: uuid7(now.getTime()),
      orderId: params.orderId,
      provider: params.provider,
      providerPaymentId: params.providerPaymentId,
      merchantAccountId: params.merchantAccountId,
      status: 'pending' as PaymentStatus,
      amountMinor: params.expected.minor,
      currency: params.expected.currency,
      refundedMinor: 0n,
      refunds: new Map<string, bigint>(),
      disputeOutcome: null,
      createdAt: now,
      updatedAt: now,
    });
    payment.recordMove(null, 'pending', now);
    return payment;
  }

  get amount(): Money {
    return Money.fromMinor(this.amountMinor, this.currency);
  }

  get refundedAmount(): Money {
    return Money.fromMinor(this.refundedMinor, this.currency);
  }

  get captured(): boolean {
    return CAPTURED_STATUSES.has(this.status);
  }

  /**
   * Applies one event. Checks the money first (nothing changes on a mismatch), then asks the
   * transition table where the payment may go, and writes only what the table answered.
   */
  apply(change: PaymentChange, now: Date = new Date()): ApplyResult {
    const from = this.status;
    const mismatch = this.checkMoney(change);
    if (mismatch) return mismatch;

    let result: ApplyResult;
    let refunded = this.refundedMinor;
    let refunds = this.refunds;
    let disputeOutcome = this.disputeOutcome;
    // A cancel-or-refund is a cancel until the money is captured, and a refund after.
    const kind = change.kind === 'canceled' && change.refund && this.captured ? 'refunded' : change.kind;
    switch (kind) {
      case 'refunded': {
        let total: bigint;
        let refundMinor = 0n;
        if (change.refund) {
          // One refund of its own amount: the total is the sum over distinct refund ids.
          if (!this.captured) return reject(from, 'illegal_transition', 'a refund of a payment never captured');
          if (this.refunds.has(change.refund.id)) return { outcome: 'already_applied', from, to: from };
          // A cancel-or-refund of a captured payment refunds what is left of it.
          refundMinor = change.kind === 'canceled' ? this.amountMinor - this.refundedMinor : change.refund.amount.minor;
          if (change.kind !== 'canceled' && refundMinor <= 0n) return reject(from, 'amount_mismatch', 'a refund of no amount');
          // A reversal after partial refunds takes back what they left (the capture's amount states
          // the whole); with nothing left it changes nothing.
          if (change.refund.reversal && refundMinor > this.amountMinor - this.refundedMinor) refundMinor = this.amountMinor - this.refundedMinor;
          total = this.refundedMinor + refundMinor;
        } else {
          if (!change.refunded) return reject(from, 'amount_mismatch', 'a refund event without its refunded amount');
          if (!this.captured) return reject(from, 'illegal_transition', 'a refund of a payment never captured');
          total = change.refunded.minor;
        }
        if (total > this.amountMinor) {
          return reject(from, 'illegal_transition', 'a refund above the captured amount');
        }
        if (total < this.refundedMinor) return { outcome: 'stale', from, to: from };
        if (total === this.refundedMinor) return { outcome: 'already_applied', from, to: from };
        refunded = total;
        if (change.refund) refunds = new Map([...this.refunds, [change.refund.id, refundMinor]]);
        if (from === 'disputed' || from === 'dispute_lost') {
          // The amount rises; the dispute still decides the status.
          result = { outcome: 'applied', from, to: from };
        } else {
          // A refund is a move by its amount, not a status event: another partial refund of a
          // partially refunded payment is a move the table lists (partially_refunded → itself).
          const to = refunded === this.amountMinor ? 'refunded' : 'partially_refunded';
          result = canMove(PAYMENT_LIFECYCLE, from, to) ? { outcome: 'applied', from, to } : decideMove(from, to);
        }
        break;
      }
      case 'disputed':
        if (!this.captured) return reject(from, 'illegal_transition', 'a dispute on a payment never captured');
        if (this.disputeOutcome !== null) return { outcome: 'stale', from, to: from };
        result = decideMove(from, 'disputed');
        break;
      case 'dispute_won':
        if (!this.captured) return reject(from, 'illegal_transition', 'a dispute won on a payment never captured');
        if (this.disputeOutcome === 'won') return { outcome: 'already_applied', from, to: from };
        if (this.disputeOutcome === 'lost') return { outcome: 'stale', from, to: from };
        disputeOutcome = 'won';
        // A won dispute arriving before its opening still closes it.
        result =
          from === 'disputed'
            ? decideMove(from, this.statusAfterRefunds())
            : { outcome: 'applied', from, to: from };
        break;
      case 'dispute_lost':
        if (!this.captured) return reject(from, 'illegal_transition', 'a dispute lost on a payment never captured');
        if (this.disputeOutcome === 'won') return { outcome: 'stale', from, to: from };
        disputeOutcome = 'lost';
        result = decideMove(from, 'dispute_lost');
        break;
      case 'succeeded':
        // A capture already recorded (whatever came after it) is nothing new.
        result = this.captured ? { outcome: 'already_applied', from, to: from } : decideMove(from, 'succeeded');
        break;
      case 'refund_outcome':
        // The outcome of refunds only (RefundService applies it): nothing of the payment changes.
        return { outcome: 'already_applied', from, to: from };
      default:
        result = decideMove(from, kind);
    }

    if (result.outcome === 'applied') {
      this.status = result.to;
      this.refundedMinor = refunded;
      this.refunds = refunds;
      this.disputeOutcome = disputeOutcome;
      this.updatedAt = now;
      this.recordMove(result.from, result.to, now);
      this.record(this.eventOf(kind, result.to));
    }
    return result;
  }

  /**
   * The event of an applied move (docs/events.md#types): `payment.<status>`; a refund is
   * `partially_refunded` or `refunded` by its amount (also while a dispute keeps the status), a
   * dispute won `dispute_won`.
   */
  private eventOf(kind: PaymentChange['kind'], to: PaymentStatus): OrderEventType {
    if (kind === 'refunded') return this.refundedMinor === this.amountMinor ? 'payment.refunded' : 'payment.partially_refunded';
    if (kind === 'dispute_won') return 'payment.dispute_won';
    if (kind === 'disputed') return 'payment.disputed';
    if (kind === 'dispute_lost') return 'payment.dispute_lost';
    return `payment.${to}` as OrderEventType;
  }

  /** Where a captured payment stands once no dispute holds it. */
  private statusAfterRefunds(): PaymentStatus {
    if (this.refundedMinor === 0n) return 'succeeded';
    return this.refundedMinor === this.amountMinor ? 'refunded' : 'partially_refunded';
  }

  /** The event's money must be this payment's: same currency, and the same amount where stated. */
  private checkMoney(change: PaymentChange): ApplyResult | null {
    const currency = change.amount?.currency ?? change.refunded?.currency ?? change.refund?.amount.currency ?? change.currency;
    if (currency !== null && currency !== undefined && currency !== this.currency) {
      return reject(this.status, 'currency_mismatch', `the event is in ${currency}, the payment in ${this.currency}`);
    }
    if (change.kind === 'succeeded' && !change.amount) {
      return reject(this.status, 'amount_mismatch', 'a payment event without its amount');
    }
    if (change.amount && change.amount.minor !== this.amountMinor) {
      return reject(
        this.status,
        'amount_mismatch',
        `the event states ${change.amount.toDecimal()} ${currency}, the payment expects ${this.amount.toDecimal()} ${this.currency}`,
      );
    }
    return null;
  }
}

function reject(from: PaymentStatus, reason: 'illegal_transition' | 'amount_mismatch' | 'currency_mismatch', detail: string): ApplyResult {
  return { outcome: 'rejected', from, reason, detail };
}
