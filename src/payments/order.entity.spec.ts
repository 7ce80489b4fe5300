import { Money } from './money';
import { Order } from './order.entity';
import { decideOrderMove, ORDER_STATUSES, ORDER_TRANSITIONS, OrderStatus } from './order.state';
import { Payment } from './payment.entity';
import { PaymentStatus } from './payment.state';

const T0 = new Date('2026-03-01T10:00:00.000Z');
const T1 = new Date('2026-03-01T10:05:00.000Z');
const T2 = new Date('2026-03-01T10:10:00.000Z');

const eur = (decimal: string): Money => Money.parse(decimal, 'EUR');

function placed(amount: Money = eur('49.90')): Order {
  return Order.place({
    reference: 'ORD-1',
    amount,
    carrier: 'default',
    shipTo: { name: 'Ada', line1: '1 Main St', city: 'Paris', postalCode: '75001', country: 'FR' },
    items: [{ sku: 'SKU-1', quantity: 1 }],
    now: T0,
  });
}

function orderIn(status: OrderStatus): Order {
  return Object.assign(placed(), { status });
}

function paymentFor(order: Order, status: PaymentStatus, expected: Money = order.amount): Payment {
  const payment = Payment.register({
    orderId: order.id,
    provider: 'stripe',
    providerPaymentId: 'pi_1',
    merchantAccountId: 'acct_1',
    expected,
    now: T0,
  });
  return Object.assign(payment, {
    status,
    refundedMinor: status === 'refunded' ? payment.amountMinor : status === 'partially_refunded' ? 1000n : 0n,
  });
}

/** Another payment of the same order (a double payment), with an id of its own. */
function secondPaymentFor(order: Order, status: PaymentStatus): Payment {
  return Object.assign(paymentFor(order, status), { id: '0195b5c0-0000-7000-8000-0000000000ee', providerPaymentId: 'pi_2' });
}

/** An order made paid (then fulfilled, when asked) by `payment` while it was succeeded, at T0. */
function paidThrough(payment: Payment, order: Order, status: 'paid' | 'fulfilled'): Order {
  const captured = Object.assign(payment, { status: 'succeeded' as PaymentStatus, refundedMinor: 0n });
  expect(order.followPayment(captured, T0)).toEqual({ outcome: 'applied', from: 'awaiting_payment', to: 'paid' });
  if (status === 'fulfilled') expect(order.markFulfilled(T0)).toEqual({ outcome: 'applied', from: 'paid', to: 'fulfilled' });
  return order;
}

/** `payment` fully refunded. */
function refundFully(payment: Payment): Payment {
  return Object.assign(payment, { status: 'refunded' as PaymentStatus, refundedMinor: payment.amountMinor });
}

function snapshot(o: Order) {
  return { status: o.status, paidVia: o.paidVia, paidAt: o.paidAt, updatedAt: o.updatedAt };
}

/**
 * The order table by hand: A = applied, = = already_applied (markPaid only), R = rejected.
 * Columns: markPaid, cancel, markFulfilled, markRefunded.
 */
const ORDER_MATRIX: Record<OrderStatus, [string, string, string, string]> = {
  awaiting_payment: ['A', 'A', 'R', 'R'],
  paid: ['=', 'R', 'A', 'A'],
  fulfilled: ['=', 'R', '=', 'A'],
  canceled: ['R', '=', 'R', 'R'],
  refunded: ['=', 'R', 'R', '='],
};
const METHODS = [
  ['markPaid', 'paid', (o: Order) => o.markPaid({ source: 'support', reason: 'bank transfer' }, T1)],
  ['cancel', 'canceled', (o: Order) => o.cancel(T1)],
  ['markFulfilled', 'fulfilled', (o: Order) => o.markFulfilled(T1)],
  ['markRefunded', 'refunded', (o: Order) => o.markRefunded(T1)],
] as const;

describe('order status table', () => {
  it('pins ORDER_TRANSITIONS (docs/rest-api.md#order-lifecycle)', () => {
    expect([...ORDER_STATUSES]).toEqual(['awaiting_payment', 'paid', 'fulfilled', 'canceled', 'refunded']);
    expect(ORDER_TRANSITIONS).toEqual({
      awaiting_payment: ['paid', 'canceled'],
      paid: ['fulfilled', 'refunded'],
      fulfilled: ['refunded'],
      canceled: [],
      refunded: [],
    });
  });

  const cells = ORDER_STATUSES.flatMap((from) => ORDER_STATUSES.map((to) => [from, to] as const));
  it.each(cells)('decideOrderMove %s → %s', (from, to) => {
    const result = decideOrderMove(from, to);
    if (from === to) expect(result).toEqual({ outcome: 'already_applied', from });
    else if (ORDER_TRANSITIONS[from].includes(to)) expect(result).toEqual({ outcome: 'applied', from, to });
    else expect(result).toEqual({ outcome: 'rejected', from, detail: `a ${from} order cannot become ${to}` });
  });
});

describe('Order: every method from every status', () => {
  const cells = ORDER_STATUSES.flatMap((status) => METHODS.map((m, i) => [status, m[0], i] as const));

  it.each(cells)('%s order, %s', (status, _name, i) => {
    const order = orderIn(status);
    const before = snapshot(order);
    const [, target, call] = METHODS[i];
    const result = call(order);
    const cell = ORDER_MATRIX[status][i];
    if (cell === 'A') {
      expect(result).toEqual({ outcome: 'applied', from: status, to: target });
      expect(order.status).toBe(target);
      expect(order.updatedAt).toEqual(T1);
    } else {
      if (cell === '=') expect(result).toEqual({ outcome: 'already_applied', from: status });
      else expect(result).toEqual({ outcome: 'rejected', from: status, detail: `a ${status} order cannot become ${target}` });
      expect(snapshot(order)).toEqual(before);
    }
  });
});

describe('Order lifecycle', () => {
  it('starts awaiting_payment, unpaid', () => {
    const order = placed();
    expect(snapshot(order)).toEqual({ status: 'awaiting_payment', paidVia: null, paidAt: null, updatedAt: T0 });
    expect(order.amount.toDecimal()).toBe('49.90');
  });

  it('awaiting_payment → paid → fulfilled → refunded', () => {
    const order = placed();
    expect(order.markPaid({ source: 'payment', paymentId: 'p1' }, T1)).toEqual({ outcome: 'applied', from: 'awaiting_payment', to: 'paid' });
    expect(snapshot(order)).toEqual({ status: 'paid', paidVia: { source: 'payment', paymentId: 'p1' }, paidAt: T1, updatedAt: T1 });
    expect(order.markFulfilled(T2)).toEqual({ outcome: 'applied', from: 'paid', to: 'fulfilled' });
    expect(order.status).toBe('fulfilled');
    expect(order.paidAt).toEqual(T1);
    expect(order.markRefunded(T2)).toEqual({ outcome: 'applied', from: 'fulfilled', to: 'refunded' });
    expect(order.status).toBe('refunded');
  });

  it('paid → refunded', () => {
    const order = orderIn('paid');
    expect(order.markRefunded(T1)).toEqual({ outcome: 'applied', from: 'paid', to: 'refunded' });
    expect(order.status).toBe('refunded');
  });

  it('awaiting_payment → canceled, and a canceled order cannot be paid', () => {
    const order = placed();
    expect(order.cancel(T1)).toEqual({ outcome: 'applied', from: 'awaiting_payment', to: 'canceled' });
    expect(order.markPaid({ source: 'support', reason: 'r' }, T2)).toEqual({
      outcome: 'rejected',
      from: 'canceled',
      detail: 'a canceled order cannot become paid',
    });
    expect(snapshot(order)).toEqual({ status: 'canceled', paidVia: null, paidAt: null, updatedAt: T1 });
  });

  it('markPaid twice: applied then already_applied (one fulfillment request), the first payer kept', () => {
    const order = placed();
    const first = order.markPaid({ source: 'support', reason: 'wire received' }, T1);
    const second = order.markPaid({ source: 'payment', paymentId: 'p1' }, T2);
    expect(first).toEqual({ outcome: 'applied', from: 'awaiting_payment', to: 'paid' });
    expect(second).toEqual({ outcome: 'already_applied', from: 'paid' });
    expect([first, second].filter((r) => r.outcome === 'applied')).toHaveLength(1);
    expect(snapshot(order)).toEqual({ status: 'paid', paidVia: { source: 'support', reason: 'wire received' }, paidAt: T1, updatedAt: T1 });
  });
});

describe('Order.followPayment', () => {
  it.each<PaymentStatus>(['succeeded', 'partially_refunded'])(
    'a %s payment of the exact amount marks an awaiting order paid, once',
    (status) => {
      const order = placed();
      const payment = paymentFor(order, status);
      expect(order.followPayment(payment, T1)).toEqual({ outcome: 'applied', from: 'awaiting_payment', to: 'paid' });
      expect(snapshot(order)).toEqual({ status: 'paid', paidVia: { source: 'payment', paymentId: payment.id }, paidAt: T1, updatedAt: T1 });
      // The same payment followed again asks for nothing.
      expect(order.followPayment(payment, T2)).toBeNull();
      expect(order.status).toBe('paid');
      expect(order.updatedAt).toEqual(T1);
    },
  );

  it.each<PaymentStatus>(['disputed', 'dispute_lost', 'refunded'])(
    'a %s payment of the exact amount does not mark an awaiting order paid (it holds no money for the order)',
    (status) => {
      const order = placed();
      expect(order.followPayment(paymentFor(order, status), T1)).toBeNull();
      expect(snapshot(order)).toEqual({ status: 'awaiting_payment', paidVia: null, paidAt: null, updatedAt: T0 });
    },
  );

  it('a refunded payment does not mark an awaiting order paid, however often it is followed', () => {
    const order = placed();
    const payment = paymentFor(order, 'refunded');
    expect(order.followPayment(payment, T1)).toBeNull();
    expect(order.followPayment(payment, T2)).toBeNull();
    expect(snapshot(order)).toEqual({ status: 'awaiting_payment', paidVia: null, paidAt: null, updatedAt: T0 });
  });

  it('a captured payment after the support path marked the order paid requests nothing more', () => {
    const order = placed();
    order.markPaid({ source: 'support', reason: 'r' }, T1);
    expect(order.followPayment(paymentFor(order, 'succeeded'), T2)).toBeNull();
    expect(snapshot(order)).toEqual({ status: 'paid', paidVia: { source: 'support', reason: 'r' }, paidAt: T1, updatedAt: T1 });
  });

  it.each([
    ['a different amount', eur('49.89')],
    ['more than the amount', eur('99.80')],
    ['another currency', Money.parse('49.90', 'USD')],
  ])('a captured payment of %s does not mark the order paid', (_label, expected) => {
    const order = placed();
    const payment = paymentFor(order, 'succeeded', expected);
    expect(order.followPayment(payment, T1)).toBeNull();
    expect(snapshot(order)).toEqual({ status: 'awaiting_payment', paidVia: null, paidAt: null, updatedAt: T0 });
  });

  it.each<PaymentStatus>(['succeeded', 'refunded', 'dispute_lost'])('a canceled order stays canceled when its payment is %s', (status) => {
    const order = orderIn('canceled');
    const before = snapshot(order);
    expect(order.followPayment(paymentFor(order, status), T1)).toBeNull();
    expect(snapshot(order)).toEqual(before);
  });

  it.each<'paid' | 'fulfilled'>(['paid', 'fulfilled'])('the refund of the payment that paid it refunds a %s order', (status) => {
    const order = placed();
    const payment = paymentFor(order, 'succeeded');
    paidThrough(payment, order, status);
    expect(order.followPayment(refundFully(payment), T1)).toEqual({ outcome: 'applied', from: status, to: 'refunded' });
    expect(snapshot(order)).toEqual({
      status: 'refunded',
      paidVia: { source: 'payment', paymentId: payment.id },
      paidAt: T0,
      updatedAt: T1,
    });
  });

  it('a refunded order stays refunded when its payment is followed again', () => {
    const order = placed();
    const payment = paymentFor(order, 'succeeded');
    paidThrough(payment, order, 'paid');
    expect(order.followPayment(refundFully(payment), T1)).toEqual({ outcome: 'applied', from: 'paid', to: 'refunded' });
    expect(order.followPayment(payment, T2)).toBeNull();
    expect(order.status).toBe('refunded');
    expect(order.updatedAt).toEqual(T1);
  });

  it.each<'paid' | 'fulfilled'>(['paid', 'fulfilled'])(
    'the refund of a second payment (not the one that paid it) leaves a %s order as it is',
    (status) => {
      const order = placed();
      const payer = paymentFor(order, 'succeeded');
      paidThrough(payer, order, status);
      const second = secondPaymentFor(order, 'succeeded');
      // The double payment is captured (nothing to do: the order is paid), then refunded.
      expect(order.followPayment(second, T1)).toBeNull();
      const before = snapshot(order);
      expect(order.followPayment(refundFully(second), T2)).toBeNull();
      expect(snapshot(order)).toEqual(before);
      expect(snapshot(order)).toEqual({
        status,
        paidVia: { source: 'payment', paymentId: payer.id },
        paidAt: T0,
        updatedAt: T0,
      });
      // The refund of the payer still refunds it afterwards.
      expect(order.followPayment(refundFully(payer), T2)).toEqual({ outcome: 'applied', from: status, to: 'refunded' });
    },
  );

  it.each<'paid' | 'fulfilled'>(['paid', 'fulfilled'])('a refunded payment refunds a %s order marked paid by support', (status) => {
    const order = placed();
    expect(order.markPaid({ source: 'support', reason: 'wire received' }, T0)).toEqual({
      outcome: 'applied',
      from: 'awaiting_payment',
      to: 'paid',
    });
    if (status === 'fulfilled') order.markFulfilled(T0);
    expect(order.followPayment(paymentFor(order, 'refunded'), T1)).toEqual({ outcome: 'applied', from: status, to: 'refunded' });
    expect(snapshot(order)).toEqual({
      status: 'refunded',
      paidVia: { source: 'support', reason: 'wire received' },
      paidAt: T0,
      updatedAt: T1,
    });
  });

  it.each<OrderStatus>(['paid', 'fulfilled'])('a partially refunded payment leaves a %s order as it is', (status) => {
    const order = orderIn(status);
    const before = snapshot(order);
    expect(order.followPayment(paymentFor(order, 'partially_refunded'), T1)).toBeNull();
    expect(snapshot(order)).toEqual(before);
  });

  it.each<PaymentStatus>(['pending', 'processing', 'authorized', 'failed', 'canceled', 'expired'])(
    'a %s payment leaves the order awaiting_payment',
    (status) => {
      const order = placed();
      expect(order.followPayment(paymentFor(order, status), T1)).toBeNull();
      expect(snapshot(order)).toEqual({ status: 'awaiting_payment', paidVia: null, paidAt: null, updatedAt: T0 });
    },
  );

  it('a failed payment, then another payment that succeeds: paid by the second', () => {
    const order = placed();
    const first = paymentFor(order, 'failed');
    const second = Object.assign(paymentFor(order, 'succeeded'), { id: '0195b5c0-0000-7000-8000-0000000000ff' });
    expect(order.followPayment(first, T1)).toBeNull();
    expect(order.followPayment(second, T2)).toEqual({ outcome: 'applied', from: 'awaiting_payment', to: 'paid' });
    expect(order.paidVia).toEqual({ source: 'payment', paymentId: second.id });
  });
});
