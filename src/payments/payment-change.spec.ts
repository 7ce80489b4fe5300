import { Money } from './money';
import type { PaymentChange } from './payment.entity';
import type { ProviderEvent, RawAmount } from '../common/provider-event';
import { ChangeOrMismatch, toPaymentChange } from './payment-change';

function event(parts: Partial<ProviderEvent>): ProviderEvent {
  return {
    kind: 'succeeded',
    resourceId: 'pi_1',
    orderId: null,
    amount: null,
    currency: null,
    refundedAmount: null,
    declaredAccount: null,
    occurredAt: null,
    ...parts,
  };
}

const decimal = (value: string): RawAmount => ({ form: 'decimal', value });
const minor = (value: number | string): RawAmount => ({ form: 'minor', value });

/** The change, or the test fails with the mismatch it got. */
function changeOf(result: ChangeOrMismatch): PaymentChange {
  if (!result.ok) throw new Error(`expected a change, got ${result.reason}: ${result.detail}`);
  return result.change;
}

/** A change as plain values, Money as minor units + currency. */
function plain(change: PaymentChange) {
  const m = (money: Money | null) => (money ? { minor: money.minor, currency: money.currency } : null);
  return { kind: change.kind, amount: m(change.amount), refunded: m(change.refunded), currency: change.currency };
}

describe('toPaymentChange: amounts', () => {
  it.each([
    ['49.90', 'EUR', 4990n],
    ['49.9', 'EUR', 4990n],
    ['49', 'EUR', 4900n],
    ['5000', 'JPY', 5000n],
    ['1.250', 'BHD', 1250n],
  ])('a decimal amount %s %s is %d minor units', (value, currency, expected) => {
    const change = changeOf(toPaymentChange(event({ amount: decimal(value), currency })));
    expect(plain(change)).toEqual({ kind: 'succeeded', amount: { minor: expected, currency }, refunded: null, currency });
  });

  it.each([
    [4990, 'EUR', 4990n],
    ['4990', 'EUR', 4990n],
    [5000, 'JPY', 5000n],
    [0, 'EUR', 0n],
  ])('a minor amount %p %s is %d minor units', (value, currency, expected) => {
    const change = changeOf(toPaymentChange(event({ amount: minor(value), currency })));
    expect(plain(change)).toEqual({ kind: 'succeeded', amount: { minor: expected, currency }, refunded: null, currency });
  });

  it('parses the cumulative refunded amount beside the amount', () => {
    const change = changeOf(
      toPaymentChange(event({ kind: 'refunded', amount: minor(4990), refundedAmount: decimal('10.5'), currency: 'EUR' })),
    );
    expect(plain(change)).toEqual({
      kind: 'refunded',
      amount: { minor: 4990n, currency: 'EUR' },
      refunded: { minor: 1050n, currency: 'EUR' },
      currency: 'EUR',
    });
  });

  it('a refund stating only its refunded amount', () => {
    const change = changeOf(toPaymentChange(event({ kind: 'refunded', refundedAmount: minor(1000), currency: 'EUR' })));
    expect(plain(change)).toEqual({ kind: 'refunded', amount: null, refunded: { minor: 1000n, currency: 'EUR' }, currency: 'EUR' });
  });
});

describe('toPaymentChange: currencies', () => {
  it.each(['eur', 'Eur', 'EUR'])('accepts %s and upper-cases it', (currency) => {
    const change = changeOf(toPaymentChange(event({ amount: decimal('49.90'), currency })));
    expect(change.currency).toBe('EUR');
    expect(change.amount?.currency).toBe('EUR');
    expect(change.amount?.minor).toBe(4990n);
  });

  it('lower-case Stripe currency with minor units (jpy)', () => {
    const change = changeOf(toPaymentChange(event({ amount: minor(5000), currency: 'jpy' })));
    expect(plain(change)).toEqual({ kind: 'succeeded', amount: { minor: 5000n, currency: 'JPY' }, refunded: null, currency: 'JPY' });
  });

  it('a currency without an amount (a dispute) is kept, upper-cased', () => {
    const change = changeOf(toPaymentChange(event({ kind: 'disputed', currency: 'usd' })));
    expect(plain(change)).toEqual({ kind: 'disputed', amount: null, refunded: null, currency: 'USD' });
  });

  it.each(['XYZ', 'EURO', 'xau', ''])('an unknown currency %p with an amount is a currency mismatch', (currency) => {
    expect(toPaymentChange(event({ amount: decimal('49.90'), currency }))).toEqual({
      ok: false,
      reason: 'currency_mismatch',
      detail: `unknown currency ${JSON.stringify(currency.toUpperCase())}`,
    });
  });

  it('an unknown currency on a refund is a currency mismatch', () => {
    expect(toPaymentChange(event({ kind: 'refunded', refundedAmount: minor(100), currency: 'ABC' }))).toEqual({
      ok: false,
      reason: 'currency_mismatch',
      detail: 'unknown currency "ABC"',
    });
  });

  it.each([
    ['an amount', { amount: decimal('49.90') }],
    ['a refunded amount', { kind: 'refunded' as const, refundedAmount: minor(100) }],
  ])('%s without a currency is a currency mismatch', (_label, parts) => {
    expect(toPaymentChange(event(parts))).toEqual({
      ok: false,
      reason: 'currency_mismatch',
      detail: 'the event states an amount without its currency',
    });
  });
});

describe('toPaymentChange: amount mismatches', () => {
  it.each<[string, RawAmount, string]>([
    ['too many decimals', decimal('49.901'), 'EUR'],
    ['trailing zero beyond the exponent', decimal('49.900'), 'EUR'],
    ['decimals on a zero-exponent currency', decimal('5000.0'), 'JPY'],
    ['not a number', decimal('49,90'), 'EUR'],
    ['a negative amount', decimal('-1.00'), 'EUR'],
    ['float minor units', minor(4990.5), 'EUR'],
    ['negative minor units', minor(-1), 'EUR'],
    ['minor units as a decimal string', minor('49.90'), 'EUR'],
    ['minor units beyond a safe integer', minor(2 ** 53), 'EUR'],
  ])('%s is an amount mismatch', (_label, amount, currency) => {
    const result = toPaymentChange(event({ amount, currency }));
    expect(result.ok).toBe(false);
    expect(result).toMatchObject({ ok: false, reason: 'amount_mismatch' });
  });

  it('too many decimals names the amount and the exponent', () => {
    expect(toPaymentChange(event({ amount: decimal('49.901'), currency: 'EUR' }))).toEqual({
      ok: false,
      reason: 'amount_mismatch',
      detail: '"49.901" has 3 decimals; EUR has 2',
    });
  });

  it('float minor 4990.5 is an amount mismatch', () => {
    expect(toPaymentChange(event({ amount: minor(4990.5), currency: 'EUR' }))).toEqual({
      ok: false,
      reason: 'amount_mismatch',
      detail: 'Not integer minor units: 4990.5',
    });
  });

  it('a bad refunded amount is an amount mismatch even when the amount is fine', () => {
    expect(
      toPaymentChange(event({ kind: 'refunded', amount: decimal('49.90'), refundedAmount: decimal('10.001'), currency: 'EUR' })),
    ).toMatchObject({ ok: false, reason: 'amount_mismatch' });
  });
});

describe('toPaymentChange: no money', () => {
  it.each(['pending', 'processing', 'failed', 'canceled', 'expired', 'disputed', 'dispute_won', 'dispute_lost'] as const)(
    'a %s event with no amounts and no currency is ok, with nulls',
    (kind) => {
      expect(toPaymentChange(event({ kind }))).toEqual({
        ok: true,
        change: { kind, amount: null, refunded: null, currency: null },
      });
    },
  );

  it('a succeeded event without amount parses (the payment rejects it later as amount_mismatch)', () => {
    expect(toPaymentChange(event({ kind: 'succeeded' }))).toEqual({
      ok: true,
      change: { kind: 'succeeded', amount: null, refunded: null, currency: null },
    });
  });
});
