import { Money } from './money';
import { Payment, PaymentChange } from './payment.entity';
import { toPaymentChange } from './payment-change';
import type { ProviderEvent } from '../common/provider-event';

/**
 * Refunds reported one by one, each with its own amount (Adyen `REFUND`): the refunded total is the
 * sum over distinct refund ids (docs/design.md#refunds). Refunds reported as a cumulative total
 * (every other built-in provider) are payment.entity.spec.ts's.
 */
const eur = (decimal: string): Money => Money.parse(decimal, 'EUR');

function captured(): Payment {
  const payment = Payment.register({
    orderId: '0195b5c0-0000-7000-8000-000000000001',
    provider: 'adyen',
    providerPaymentId: '7914073381342284',
    merchantAccountId: 'ShopEU',
    expected: eur('49.90'),
  });
  expect(payment.apply({ kind: 'succeeded', amount: eur('49.90'), refunded: null, currency: 'EUR' }).outcome).toBe('applied');
  payment.takeChanges();
  return payment;
}

const refund = (id: string, decimal: string): PaymentChange => ({ kind: 'refunded', amount: null, refunded: null, currency: 'EUR', refund: { id, amount: eur(decimal) } });
const cancelOrRefund = (id: string): PaymentChange => ({ kind: 'canceled', amount: null, refunded: null, currency: 'EUR', refund: { id, amount: eur('49.90') } });

describe('Payment: refunds of their own amount, summed over distinct refund ids', () => {
  it('two partial refunds that add up to the payment make it refunded, each announced', () => {
    const p = captured();
    expect(p.apply(refund('R1', '20.00'))).toEqual({ outcome: 'applied', from: 'succeeded', to: 'partially_refunded' });
    expect(p.refundedAmount.toDecimal()).toBe('20.00');
    expect(p.takeChanges()).toEqual(['payment.partially_refunded']);
    expect(p.apply(refund('R2', '29.90'))).toEqual({ outcome: 'applied', from: 'partially_refunded', to: 'refunded' });
    expect(p.refundedAmount.toDecimal()).toBe('49.90');
    expect(p.takeChanges()).toEqual(['payment.refunded']);
    expect([...p.refunds]).toEqual([
      ['R1', 2000n],
      ['R2', 2990n],
    ]);
  });

  it('a repeated notification of one refund adds nothing (already applied, nothing announced)', () => {
    const p = captured();
    p.apply(refund('R1', '20.00'));
    p.takeChanges();
    expect(p.apply(refund('R1', '20.00'))).toEqual({ outcome: 'already_applied', from: 'partially_refunded', to: 'partially_refunded' });
    // Even with another amount: the refund is the one already counted.
    expect(p.apply(refund('R1', '5.00')).outcome).toBe('already_applied');
    expect(p.refundedMinor).toBe(2000n);
    expect(p.takeChanges()).toEqual([]);
  });

  it('equal amounts under distinct ids are two refunds', () => {
    const p = captured();
    p.apply(refund('R1', '10.00'));
    expect(p.apply(refund('R2', '10.00')).outcome).toBe('applied');
    expect(p.refundedAmount.toDecimal()).toBe('20.00');
  });

  it('a refund past the captured amount, of no amount, or of a payment never captured is rejected and counts nothing', () => {
    const p = captured();
    p.apply(refund('R1', '40.00'));
    expect(p.apply(refund('R2', '10.00'))).toMatchObject({ outcome: 'rejected', reason: 'illegal_transition', detail: 'a refund above the captured amount' });
    expect(p.apply(refund('R3', '0.00'))).toMatchObject({ outcome: 'rejected', reason: 'amount_mismatch' });
    expect(p.refunds.has('R2')).toBe(false);
    expect(p.refundedMinor).toBe(4000n);

    const pending = Payment.register({ orderId: 'o', provider: 'adyen', providerPaymentId: 'x', merchantAccountId: 'ShopEU', expected: eur('49.90') });
    expect(pending.apply(refund('R1', '1.00'))).toMatchObject({ outcome: 'rejected', reason: 'illegal_transition', detail: 'a refund of a payment never captured' });
  });

  it('a refund in another currency is a currency mismatch', () => {
    const p = captured();
    const usd: PaymentChange = { kind: 'refunded', amount: null, refunded: null, currency: 'USD', refund: { id: 'R1', amount: Money.parse('1.00', 'USD') } };
    expect(p.apply(usd)).toMatchObject({ outcome: 'rejected', reason: 'currency_mismatch' });
  });

  it('while a dispute holds the payment, a refund raises the amount and the dispute keeps the status', () => {
    const p = captured();
    p.apply({ kind: 'disputed', amount: null, refunded: null, currency: 'EUR' });
    expect(p.apply(refund('R1', '10.00'))).toEqual({ outcome: 'applied', from: 'disputed', to: 'disputed' });
    expect(p.refundedMinor).toBe(1000n);
  });

  it('a cancel-or-refund cancels a payment not captured, and refunds what is left of a captured one', () => {
    const authorized = Payment.register({ orderId: 'o', provider: 'adyen', providerPaymentId: 'x', merchantAccountId: 'ShopEU', expected: eur('49.90') });
    authorized.apply({ kind: 'authorized', amount: eur('49.90'), refunded: null, currency: 'EUR' });
    expect(authorized.apply(cancelOrRefund('C1'))).toEqual({ outcome: 'applied', from: 'authorized', to: 'canceled' });
    expect(authorized.refundedMinor).toBe(0n);

    const whole = captured();
    expect(whole.apply(cancelOrRefund('C1'))).toEqual({ outcome: 'applied', from: 'succeeded', to: 'refunded' });
    expect(whole.takeChanges()).toEqual(['payment.refunded']);
    expect(whole.apply(cancelOrRefund('C1')).outcome).toBe('already_applied');

    const rest = captured();
    rest.apply(refund('R1', '10.00'));
    expect(rest.apply(cancelOrRefund('C1'))).toEqual({ outcome: 'applied', from: 'partially_refunded', to: 'refunded' });
    expect([...rest.refunds]).toEqual([
      ['R1', 1000n],
      ['C1', 3990n],
    ]);
    // Nothing left to refund: nothing new.
    expect(rest.apply(cancelOrRefund('C2')).outcome).toBe('already_applied');
  });

  it('a reversal (PayPal PAYMENT.CAPTURE.REVERSED) refunds its amount, at most what earlier refunds left; of a payment not captured it is rejected, never a cancel', () => {
    const reversal = (id: string, decimal: string): PaymentChange => ({ kind: 'refunded', amount: null, refunded: null, currency: 'EUR', refund: { id, amount: eur(decimal), reversal: true } });
    const whole = captured();
    expect(whole.apply(reversal('V1', '49.90'))).toEqual({ outcome: 'applied', from: 'succeeded', to: 'refunded' });
    expect(whole.apply(reversal('V1', '49.90')).outcome).toBe('already_applied');

    // After a partial refund the capture's whole amount is reversed: what is left is refunded, no more.
    const rest = captured();
    rest.apply(refund('R1', '10.00'));
    expect(rest.apply(reversal('V1', '49.90'))).toEqual({ outcome: 'applied', from: 'partially_refunded', to: 'refunded' });
    expect([...rest.refunds]).toEqual([
      ['R1', 1000n],
      ['V1', 3990n],
    ]);
    expect(rest.refundedMinor).toBe(rest.amountMinor);
    // Nothing left: nothing new.
    expect(rest.apply(reversal('V2', '49.90')).outcome).toBe('already_applied');

    // A reversal of part of the capture is a partial refund.
    const part = captured();
    expect(part.apply(reversal('V1', '9.90'))).toEqual({ outcome: 'applied', from: 'succeeded', to: 'partially_refunded' });
    expect(part.apply(reversal('V2', '0.00'))).toMatchObject({ outcome: 'rejected', reason: 'amount_mismatch' });

    // Before the capture: rejected as a too-early refund is (reprocessed once the payment moves).
    const authorized = Payment.register({ orderId: 'o', provider: 'paypal', providerPaymentId: 'x', merchantAccountId: 'M', expected: eur('49.90') });
    authorized.apply({ kind: 'authorized', amount: eur('49.90'), refunded: null, currency: 'EUR' });
    expect(authorized.apply(reversal('V1', '49.90'))).toMatchObject({ outcome: 'rejected', reason: 'illegal_transition', detail: 'a refund of a payment never captured' });
    expect(authorized.status).toBe('authorized');
  });

  it('a provider event with a refund parses it against its currency', () => {
    const event: ProviderEvent = {
      kind: 'refunded',
      resourceId: 'psp',
      orderId: null,
      amount: null,
      currency: 'EUR',
      refundedAmount: null,
      refund: { id: 'R1', amount: { form: 'minor', value: 1500 } },
      declaredAccount: null,
      occurredAt: null,
    };
    const parsed = toPaymentChange(event);
    expect(parsed.ok && parsed.change.refund).toEqual({ id: 'R1', amount: Money.fromMinor(1500, 'EUR') });
    const reversal = toPaymentChange({ ...event, refund: { id: 'V1', amount: { form: 'minor', value: 1500 }, reversal: true } });
    expect(reversal.ok && reversal.change.refund).toEqual({ id: 'V1', amount: Money.fromMinor(1500, 'EUR'), reversal: true });
    expect(toPaymentChange({ ...event, currency: null })).toMatchObject({ ok: false, reason: 'currency_mismatch' });
    expect(toPaymentChange({ ...event, refund: { id: 'R1', amount: { form: 'minor', value: 1.5 } } })).toMatchObject({ ok: false, reason: 'amount_mismatch' });
  });
});
