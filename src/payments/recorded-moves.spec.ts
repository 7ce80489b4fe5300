import { Fulfillment } from '../fulfillment/fulfillment.entity';
import { Money } from './money';
import { Order } from './order.entity';
import { Payment } from './payment.entity';

/** What each aggregate's moves record for the order's history: applied moves only, each taken once. */
const T0 = new Date('2026-03-01T10:00:00.000Z');
const T1 = new Date('2026-03-01T10:05:00.000Z');
const T2 = new Date('2026-03-01T10:10:00.000Z');
const eur = (decimal: string): Money => Money.parse(decimal, 'EUR');
const shipTo = { name: 'Ada', line1: '1 Main St', city: 'Paris', postalCode: '75001', country: 'FR' };

function placed(): Order {
  return Order.place({ reference: null, amount: eur('49.90'), carrier: 'default', shipTo, items: [{ sku: 'SKU-1', quantity: 1 }], now: T0 });
}

describe('recorded moves', () => {
  it('an order records its creation and each applied move, once', () => {
    const order = placed();
    expect(order.takeMoves()).toEqual([{ from: null, to: 'awaiting_payment', at: T0 }]);
    expect(order.takeMoves()).toEqual([]);
    order.markPaid({ source: 'support', reason: 'phone' }, T1);
    order.markPaid({ source: 'support', reason: 'again' }, T2);
    order.cancel(T2);
    expect(order.takeMoves()).toEqual([{ from: 'awaiting_payment', to: 'paid', at: T1 }]);
  });

  it('a payment records its registration and applied moves; a duplicate or a stale event records nothing', () => {
    const payment = Payment.register({ orderId: 'o', provider: 'stripe', providerPaymentId: 'pi_1', merchantAccountId: 'acct_1', expected: eur('49.90'), now: T0 });
    expect(payment.apply({ kind: 'succeeded', amount: eur('49.90'), currency: null, refunded: null }, T1).outcome).toBe('applied');
    expect(payment.apply({ kind: 'succeeded', amount: eur('49.90'), currency: null, refunded: null }, T2).outcome).toBe('already_applied');
    expect(payment.apply({ kind: 'processing', amount: null, currency: null, refunded: null }, T2).outcome).toBe('stale');
    expect(payment.takeMoves()).toEqual([
      { from: null, to: 'pending', at: T0 },
      { from: 'pending', to: 'succeeded', at: T1 },
    ]);
  });

  it('a fulfillment records its request and its moves; a refused move records nothing', () => {
    const order = placed();
    const fulfillment = Fulfillment.request(order, T0);
    expect(fulfillment.dispatched('shp_1', T1)).toBe(true);
    expect(fulfillment.failed('late', T2)).toBe(false);
    expect(fulfillment.takeMoves()).toEqual([
      { from: null, to: 'requested', at: T0 },
      { from: 'requested', to: 'dispatched', at: T1 },
    ]);
  });

  it('an aggregate made from a row starts with no moves', () => {
    const order = Object.assign(new Order(), { status: 'paid' });
    expect(order.takeMoves()).toEqual([]);
  });
});
