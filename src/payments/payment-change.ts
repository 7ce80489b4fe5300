import { Money, MoneyError } from './money';
import type { PaymentChange } from './payment.entity';
import type { ProviderEvent, RawAmount } from '../common/provider-event';

export type ChangeOrMismatch =
  | { ok: true; change: PaymentChange }
  | { ok: false; reason: 'amount_mismatch' | 'currency_mismatch'; detail: string };

/**
 * Parses an event's amounts against its currency. A currency we do not know is a currency
 * mismatch; an amount that is not exact in that currency (too many decimals, not a number) is an
 * amount mismatch: authentic, but not a valid instruction.
 */
export function toPaymentChange(event: ProviderEvent): ChangeOrMismatch {
  const currency = event.currency?.toUpperCase() ?? null;
  const needsCurrency = event.amount !== null || event.refundedAmount !== null || Boolean(event.refund);
  if (currency === null) {
    return needsCurrency
      ? { ok: false, reason: 'currency_mismatch', detail: 'the event states an amount without its currency' }
      : { ok: true, change: { kind: event.kind, amount: null, refunded: null, currency: null } };
  }
  try {
    return {
      ok: true,
      change: {
        kind: event.kind,
        amount: event.amount ? parse(event.amount, currency) : null,
        refunded: event.refundedAmount ? parse(event.refundedAmount, currency) : null,
        currency,
        ...(event.refund
          ? { refund: { id: event.refund.id, amount: parse(event.refund.amount, currency), ...(event.refund.reversal ? { reversal: true } : {}) } }
          : {}),
      },
    };
  } catch (err) {
    if (err instanceof MoneyError) {
      return err.code === 'MONEY.UNKNOWN_CURRENCY'
        ? { ok: false, reason: 'currency_mismatch', detail: `unknown currency ${JSON.stringify(currency)}` }
        : { ok: false, reason: 'amount_mismatch', detail: err.message };
    }
    throw err;
  }
}

function parse(raw: RawAmount, currency: string): Money {
  return raw.form === 'decimal' ? Money.parse(raw.value, currency) : Money.fromMinor(raw.value, currency);
}
