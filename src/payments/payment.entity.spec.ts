import { Money } from './money';
import { Payment, PaymentChange } from './payment.entity';
import type { ProviderEventKind } from '../common/provider-event';
import { ApplyResult, PAYMENT_STATUSES, PaymentStatus } from './payment.state';

const T0 = new Date('2026-03-01T10:00:00.000Z');
const T1 = new Date('2026-03-01T10:05:00.000Z');
const T2 = new Date('2026-03-01T10:10:00.000Z');

const eur = (decimal: string): Money => Money.parse(decimal, 'EUR');

/** A payment expecting 49.90 EUR, registered at T0. */
function registered(): Payment {
  return Payment.register({
    orderId: '0195b5c0-0000-7000-8000-000000000001',
    provider: 'stripe',
    providerPaymentId: 'pi_123',
    merchantAccountId: 'acct_1',
    expected: eur('49.90'),
    now: T0,
  });
}

/** The refunded amount and dispute outcome a payment in each status has by default here. */
const DEFAULTS: Record<PaymentStatus, { refundedMinor: bigint; disputeOutcome: 'won' | 'lost' | null }> = {
  pending: { refundedMinor: 0n, disputeOutcome: null },
  processing: { refundedMinor: 0n, disputeOutcome: null },
  authorized: { refundedMinor: 0n, disputeOutcome: null },
  succeeded: { refundedMinor: 0n, disputeOutcome: null },
  partially_refunded: { refundedMinor: 1000n, disputeOutcome: null },
  refunded: { refundedMinor: 4990n, disputeOutcome: null },
  disputed: { refundedMinor: 0n, disputeOutcome: null },
  dispute_lost: { refundedMinor: 0n, disputeOutcome: 'lost' },
  failed: { refundedMinor: 0n, disputeOutcome: null },
  canceled: { refundedMinor: 0n, disputeOutcome: null },
  expired: { refundedMinor: 0n, disputeOutcome: null },
};

/** A registered payment put in `status` by assigning its fields. */
function paymentIn(
  status: PaymentStatus,
  fields: Partial<{ refundedMinor: bigint; disputeOutcome: 'won' | 'lost' | null }> = {},
): Payment {
  return Object.assign(registered(), { status }, DEFAULTS[status], fields);
}

function change(kind: ProviderEventKind, parts: Partial<PaymentChange> = {}): PaymentChange {
  return { kind, amount: null, currency: null, refunded: null, ...parts };
}

/** The well-formed event of each kind, as a provider sends it for this payment. */
const EVENTS: Record<string, PaymentChange> = {
  pending: change('pending', { amount: eur('49.90'), currency: 'EUR' }),
  processing: change('processing', { amount: eur('49.90'), currency: 'EUR' }),
  authorized: change('authorized', { amount: eur('49.90'), currency: 'EUR' }),
  succeeded: change('succeeded', { amount: eur('49.90'), currency: 'EUR' }),
  failed: change('failed', { amount: eur('49.90'), currency: 'EUR' }),
  canceled: change('canceled', { amount: eur('49.90'), currency: 'EUR' }),
  expired: change('expired', { amount: eur('49.90'), currency: 'EUR' }),
  'refunded 20.00': change('refunded', { amount: eur('49.90'), currency: 'EUR', refunded: eur('20.00') }),
  'refunded 49.90': change('refunded', { amount: eur('49.90'), currency: 'EUR', refunded: eur('49.90') }),
  disputed: change('disputed', { currency: 'EUR' }),
  dispute_won: change('dispute_won', { currency: 'EUR' }),
  dispute_lost: change('dispute_lost', { currency: 'EUR' }),
};
const EVENT_NAMES = Object.keys(EVENTS);

/**
 * apply() for every event kind from every status, written out by hand. A:<status> = applied,
 * writing that status; = already_applied; S = stale; R = rejected illegal_transition.
 * Columns in EVENT_NAMES order.
 *
 * While a dispute is open (disputed) or lost (dispute_lost), a refund, partial or full, raises the
 * refunded amount and the dispute keeps the status.
 */
const APPLY_MATRIX: Record<PaymentStatus, string[]> = {
  //                  pending     processing     authorized     succeeded      failed     canceled     expired     refunded 20.00          refunded 49.90  disputed      dispute_won             dispute_lost
  pending: /*     */ ['=', 'A:processing', 'A:authorized', 'A:succeeded', 'A:failed', 'A:canceled', 'A:expired', 'R', 'R', 'R', 'R', 'R'],
  processing: /*  */ ['S', '=', 'A:authorized', 'A:succeeded', 'A:failed', 'A:canceled', 'A:expired', 'R', 'R', 'R', 'R', 'R'],
  authorized: /*  */ ['S', 'S', '=', 'A:succeeded', 'A:failed', 'A:canceled', 'A:expired', 'R', 'R', 'R', 'R', 'R'],
  succeeded: /*   */ ['S', 'S', 'S', '=', 'S', 'S', 'S', 'A:partially_refunded', 'A:refunded', 'A:disputed', 'A:succeeded', 'A:dispute_lost'],
  partially_refunded: ['S', 'S', 'S', '=', 'S', 'S', 'S', 'A:partially_refunded', 'A:refunded', 'A:disputed', 'A:partially_refunded', 'A:dispute_lost'],
  refunded: /*    */ ['S', 'S', 'S', '=', 'S', 'S', 'S', 'S', '=', 'S', 'A:refunded', 'S'],
  disputed: /*    */ ['S', 'S', 'S', '=', 'S', 'S', 'S', 'A:disputed', 'A:disputed', '=', 'A:succeeded', 'A:dispute_lost'],
  dispute_lost: /**/ ['S', 'S', 'S', '=', 'S', 'S', 'S', 'A:dispute_lost', 'A:dispute_lost', 'S', 'S', '='],
  failed: /*      */ ['S', 'S', 'S', 'A:succeeded', '=', 'S', 'S', 'R', 'R', 'R', 'R', 'R'],
  canceled: /*    */ ['S', 'S', 'S', 'A:succeeded', 'S', '=', 'S', 'R', 'R', 'R', 'R', 'R'],
  expired: /*     */ ['S', 'S', 'S', 'A:succeeded', 'S', 'S', '=', 'R', 'R', 'R', 'R', 'R'],
};

/** What a payment holds after apply(): the whole state an event may touch. */
function snapshot(p: Payment) {
  return { status: p.status, refundedMinor: p.refundedMinor, disputeOutcome: p.disputeOutcome, updatedAt: p.updatedAt };
}

const CELLS: Array<[PaymentStatus, string]> = PAYMENT_STATUSES.flatMap((status) =>
  EVENT_NAMES.map((name): [PaymentStatus, string] => [status, name]),
);

/** The refunded amount and dispute outcome an applied cell must write. */
function expectedSideEffects(status: PaymentStatus, name: string) {
  const before = DEFAULTS[status];
  switch (name) {
    case 'refunded 20.00':
      return { refundedMinor: 2000n, disputeOutcome: before.disputeOutcome };
    case 'refunded 49.90':
      return { refundedMinor: 4990n, disputeOutcome: before.disputeOutcome };
    case 'dispute_won':
      return { refundedMinor: before.refundedMinor, disputeOutcome: 'won' };
    case 'dispute_lost':
      return { refundedMinor: before.refundedMinor, disputeOutcome: 'lost' };
    default:
      return before;
  }
}

describe('Payment.register', () => {
  it('starts pending, expecting the amount, nothing refunded, no dispute', () => {
    const p = registered();
    expect(p.status).toBe('pending');
    expect(p.amountMinor).toBe(4990n);
    expect(p.currency).toBe('EUR');
    expect(p.amount.toDecimal()).toBe('49.90');
    expect(p.refundedMinor).toBe(0n);
    expect(p.refundedAmount.toDecimal()).toBe('0.00');
    expect(p.disputeOutcome).toBeNull();
    expect(p.captured).toBe(false);
    expect(p.createdAt).toEqual(T0);
    expect(p.updatedAt).toEqual(T0);
  });
});

describe('Payment.apply: every event kind from every status', () => {
  it('covers 11 statuses × 12 events', () => {
    expect(CELLS).toHaveLength(132);
    for (const status of PAYMENT_STATUSES) expect(APPLY_MATRIX[status]).toHaveLength(EVENT_NAMES.length);
  });

  it.each(CELLS)('%s + %s', (status, name) => {
    const p = paymentIn(status);
    const before = snapshot(p);
    const cell = APPLY_MATRIX[status][EVENT_NAMES.indexOf(name)];
    const result = p.apply(EVENTS[name], T1);

    if (cell.startsWith('A:')) {
      const to = cell.slice(2) as PaymentStatus;
      expect(result).toEqual({ outcome: 'applied', from: status, to });
      expect(snapshot(p)).toEqual({ status: to, ...expectedSideEffects(status, name), updatedAt: T1 });
      return;
    }
    if (cell === 'R') {
      expect(result.outcome).toBe('rejected');
      expect(result).toMatchObject({ from: status, reason: 'illegal_transition' });
    } else {
      expect(result).toEqual({ outcome: cell === '=' ? 'already_applied' : 'stale', from: status, to: status });
    }
    // Nothing changes unless applied.
    expect(snapshot(p)).toEqual(before);
  });

  it.each(CELLS)('%s + %s: the status written is the result’s `to`, never the requested one', (status, name) => {
    const p = paymentIn(status);
    const result = p.apply(EVENTS[name], T1);
    expect(p.status).toBe(result.outcome === 'rejected' ? status : result.to);
  });

  const appliedCells = CELLS.filter(([status, name]) => APPLY_MATRIX[status][EVENT_NAMES.indexOf(name)].startsWith('A:'));

  it('has 35 applied cells', () => {
    expect(appliedCells).toHaveLength(35);
  });

  it.each(appliedCells)('%s + %s twice: applied, then already_applied with the state unchanged', (status, name) => {
    const p = paymentIn(status);
    expect(p.apply(EVENTS[name], T1).outcome).toBe('applied');
    const after = snapshot(p);
    const again = p.apply(EVENTS[name], T2);
    expect(again).toEqual({ outcome: 'already_applied', from: after.status, to: after.status });
    expect(snapshot(p)).toEqual(after);
    expect(p.updatedAt).toEqual(T1);
  });
});

describe('Payment.apply: refunds', () => {
  const refund = (decimal: string) => change('refunded', { currency: 'EUR', refunded: eur(decimal) });

  it('a partial then a full refund: succeeded → partially_refunded → refunded, cumulative', () => {
    const p = paymentIn('succeeded');
    expect(p.apply(refund('10.00'), T1)).toEqual({ outcome: 'applied', from: 'succeeded', to: 'partially_refunded' });
    expect(p.status).toBe('partially_refunded');
    expect(p.refundedMinor).toBe(1000n);
    expect(p.refundedAmount.toDecimal()).toBe('10.00');

    expect(p.apply(refund('30.00'), T1)).toEqual({ outcome: 'applied', from: 'partially_refunded', to: 'partially_refunded' });
    expect(p.status).toBe('partially_refunded');
    expect(p.refundedAmount.toDecimal()).toBe('30.00');

    expect(p.apply(refund('49.90'), T2)).toEqual({ outcome: 'applied', from: 'partially_refunded', to: 'refunded' });
    expect(p.status).toBe('refunded');
    expect(p.refundedMinor).toBe(4990n);
    expect(p.refundedAmount.toDecimal()).toBe('49.90');
    expect(p.updatedAt).toEqual(T2);
    expect(p.captured).toBe(true);
  });

  it('a lower cumulative amount arriving later is stale', () => {
    const p = paymentIn('succeeded');
    p.apply(refund('30.00'), T1);
    expect(p.apply(refund('10.00'), T2)).toEqual({ outcome: 'stale', from: 'partially_refunded', to: 'partially_refunded' });
    expect(snapshot(p)).toEqual({ status: 'partially_refunded', refundedMinor: 3000n, disputeOutcome: null, updatedAt: T1 });
  });

  it('a partial refund after the full one is stale', () => {
    const p = paymentIn('succeeded');
    p.apply(refund('49.90'), T1);
    expect(p.apply(refund('10.00'), T2)).toEqual({ outcome: 'stale', from: 'refunded', to: 'refunded' });
    expect(snapshot(p)).toEqual({ status: 'refunded', refundedMinor: 4990n, disputeOutcome: null, updatedAt: T1 });
  });

  it('the same cumulative amount again is already applied', () => {
    const p = paymentIn('succeeded');
    p.apply(refund('10.00'), T1);
    expect(p.apply(refund('10.00'), T2)).toEqual({ outcome: 'already_applied', from: 'partially_refunded', to: 'partially_refunded' });
    expect(snapshot(p)).toEqual({ status: 'partially_refunded', refundedMinor: 1000n, disputeOutcome: null, updatedAt: T1 });
  });

  it('a refund of zero on a captured payment is already applied', () => {
    const p = paymentIn('succeeded');
    expect(p.apply(refund('0.00'), T1)).toEqual({ outcome: 'already_applied', from: 'succeeded', to: 'succeeded' });
    expect(p.status).toBe('succeeded');
  });

  it.each<PaymentStatus>(['succeeded', 'partially_refunded', 'refunded', 'disputed', 'dispute_lost'])(
    'above the captured amount is rejected (illegal_transition) on a %s payment',
    (status) => {
      const p = paymentIn(status);
      const before = snapshot(p);
      expect(p.apply(refund('49.91'), T1)).toEqual({
        outcome: 'rejected',
        from: status,
        reason: 'illegal_transition',
        detail: 'a refund above the captured amount',
      });
      expect(snapshot(p)).toEqual(before);
    },
  );

  it.each<PaymentStatus>(['pending', 'processing', 'authorized', 'failed', 'canceled', 'expired'])(
    'on a %s payment (never captured) is rejected (illegal_transition)',
    (status) => {
      const p = paymentIn(status);
      const before = snapshot(p);
      expect(p.apply(refund('10.00'), T1)).toEqual({
        outcome: 'rejected',
        from: status,
        reason: 'illegal_transition',
        detail: 'a refund of a payment never captured',
      });
      expect(snapshot(p)).toEqual(before);
    },
  );

  it('a refund event without its refunded amount is rejected (amount_mismatch)', () => {
    const p = paymentIn('succeeded');
    expect(p.apply(change('refunded', { currency: 'EUR' }), T1)).toEqual({
      outcome: 'rejected',
      from: 'succeeded',
      reason: 'amount_mismatch',
      detail: 'a refund event without its refunded amount',
    });
    expect(snapshot(p)).toEqual(snapshot(paymentIn('succeeded')));
  });

  it('a partial refund on a disputed payment raises the amount and keeps the dispute', () => {
    const p = paymentIn('disputed');
    expect(p.apply(refund('10.00'), T1)).toEqual({ outcome: 'applied', from: 'disputed', to: 'disputed' });
    expect(snapshot(p)).toEqual({ status: 'disputed', refundedMinor: 1000n, disputeOutcome: null, updatedAt: T1 });
  });

  it('a full refund on a disputed payment raises the amount to the whole and keeps the dispute', () => {
    const p = paymentIn('disputed');
    expect(p.apply(refund('49.90'), T1)).toEqual({ outcome: 'applied', from: 'disputed', to: 'disputed' });
    expect(snapshot(p)).toEqual({ status: 'disputed', refundedMinor: 4990n, disputeOutcome: null, updatedAt: T1 });
  });

  it('refunds on a dispute_lost payment raise the amount (partial, then full) and keep dispute_lost', () => {
    const p = paymentIn('dispute_lost');
    expect(p.apply(refund('20.00'), T1)).toEqual({ outcome: 'applied', from: 'dispute_lost', to: 'dispute_lost' });
    expect(snapshot(p)).toEqual({ status: 'dispute_lost', refundedMinor: 2000n, disputeOutcome: 'lost', updatedAt: T1 });
    expect(p.apply(refund('10.00'), T2)).toEqual({ outcome: 'stale', from: 'dispute_lost', to: 'dispute_lost' });
    expect(p.apply(refund('20.00'), T2)).toEqual({ outcome: 'already_applied', from: 'dispute_lost', to: 'dispute_lost' });
    expect(snapshot(p)).toEqual({ status: 'dispute_lost', refundedMinor: 2000n, disputeOutcome: 'lost', updatedAt: T1 });
    expect(p.apply(refund('49.90'), T2)).toEqual({ outcome: 'applied', from: 'dispute_lost', to: 'dispute_lost' });
    expect(snapshot(p)).toEqual({ status: 'dispute_lost', refundedMinor: 4990n, disputeOutcome: 'lost', updatedAt: T2 });
  });
});

describe('Payment.apply: disputes', () => {
  const disputed = change('disputed', { currency: 'EUR' });
  const won = change('dispute_won', { currency: 'EUR' });
  const lost = change('dispute_lost', { currency: 'EUR' });
  const succeeded = change('succeeded', { amount: eur('49.90'), currency: 'EUR' });

  it('disputed, then won: back to succeeded, the outcome remembered', () => {
    const p = paymentIn('succeeded');
    expect(p.apply(disputed, T1)).toEqual({ outcome: 'applied', from: 'succeeded', to: 'disputed' });
    expect(p.disputeOutcome).toBeNull();
    expect(p.apply(won, T2)).toEqual({ outcome: 'applied', from: 'disputed', to: 'succeeded' });
    expect(snapshot(p)).toEqual({ status: 'succeeded', refundedMinor: 0n, disputeOutcome: 'won', updatedAt: T2 });
  });

  it('won with refunds recorded: back to partially_refunded', () => {
    const p = paymentIn('partially_refunded');
    expect(p.apply(disputed, T1)).toEqual({ outcome: 'applied', from: 'partially_refunded', to: 'disputed' });
    expect(p.refundedMinor).toBe(1000n);
    expect(p.apply(won, T2)).toEqual({ outcome: 'applied', from: 'disputed', to: 'partially_refunded' });
    expect(snapshot(p)).toEqual({ status: 'partially_refunded', refundedMinor: 1000n, disputeOutcome: 'won', updatedAt: T2 });
  });

  it('a partial refund while disputed, then won: partially_refunded', () => {
    const p = paymentIn('succeeded');
    p.apply(disputed, T1);
    expect(p.apply(change('refunded', { currency: 'EUR', refunded: eur('20.00') }), T1)).toEqual({
      outcome: 'applied',
      from: 'disputed',
      to: 'disputed',
    });
    expect(p.apply(won, T2)).toEqual({ outcome: 'applied', from: 'disputed', to: 'partially_refunded' });
    expect(snapshot(p)).toEqual({ status: 'partially_refunded', refundedMinor: 2000n, disputeOutcome: 'won', updatedAt: T2 });
  });

  it('a full refund while disputed, then won: refunded', () => {
    const p = paymentIn('succeeded');
    p.apply(disputed, T1);
    expect(p.apply(change('refunded', { currency: 'EUR', refunded: eur('49.90') }), T1)).toEqual({
      outcome: 'applied',
      from: 'disputed',
      to: 'disputed',
    });
    expect(p.apply(won, T2)).toEqual({ outcome: 'applied', from: 'disputed', to: 'refunded' });
    expect(snapshot(p)).toEqual({ status: 'refunded', refundedMinor: 4990n, disputeOutcome: 'won', updatedAt: T2 });
  });

  it('a refund while disputed, then lost: dispute_lost keeps the refunded amount', () => {
    const p = paymentIn('succeeded');
    p.apply(disputed, T1);
    p.apply(change('refunded', { currency: 'EUR', refunded: eur('20.00') }), T1);
    expect(p.apply(lost, T2)).toEqual({ outcome: 'applied', from: 'disputed', to: 'dispute_lost' });
    expect(snapshot(p)).toEqual({ status: 'dispute_lost', refundedMinor: 2000n, disputeOutcome: 'lost', updatedAt: T2 });
  });

  it('disputed, then lost: dispute_lost, the outcome remembered', () => {
    const p = paymentIn('succeeded');
    p.apply(disputed, T1);
    expect(p.apply(lost, T2)).toEqual({ outcome: 'applied', from: 'disputed', to: 'dispute_lost' });
    expect(snapshot(p)).toEqual({ status: 'dispute_lost', refundedMinor: 0n, disputeOutcome: 'lost', updatedAt: T2 });
    expect(p.captured).toBe(true);
  });

  it('won, then disputed (the opening arriving late) is stale', () => {
    const p = paymentIn('succeeded');
    p.apply(disputed, T1);
    p.apply(won, T1);
    expect(p.apply(disputed, T2)).toEqual({ outcome: 'stale', from: 'succeeded', to: 'succeeded' });
    expect(snapshot(p)).toEqual({ status: 'succeeded', refundedMinor: 0n, disputeOutcome: 'won', updatedAt: T1 });
  });

  it('won before its opening: the outcome is remembered and the late opening is stale', () => {
    const p = paymentIn('succeeded');
    expect(p.apply(won, T1)).toEqual({ outcome: 'applied', from: 'succeeded', to: 'succeeded' });
    expect(p.disputeOutcome).toBe('won');
    expect(p.apply(disputed, T2)).toEqual({ outcome: 'stale', from: 'succeeded', to: 'succeeded' });
    expect(snapshot(p)).toEqual({ status: 'succeeded', refundedMinor: 0n, disputeOutcome: 'won', updatedAt: T1 });
  });

  it('lost, then won is stale', () => {
    const p = paymentIn('succeeded');
    p.apply(disputed, T1);
    p.apply(lost, T1);
    expect(p.apply(won, T2)).toEqual({ outcome: 'stale', from: 'dispute_lost', to: 'dispute_lost' });
    expect(snapshot(p)).toEqual({ status: 'dispute_lost', refundedMinor: 0n, disputeOutcome: 'lost', updatedAt: T1 });
  });

  it('won, then lost is stale', () => {
    const p = paymentIn('succeeded');
    p.apply(disputed, T1);
    p.apply(won, T1);
    expect(p.apply(lost, T2)).toEqual({ outcome: 'stale', from: 'succeeded', to: 'succeeded' });
    expect(snapshot(p)).toEqual({ status: 'succeeded', refundedMinor: 0n, disputeOutcome: 'won', updatedAt: T1 });
  });

  it('lost, then disputed (the opening arriving late) is stale', () => {
    const p = paymentIn('succeeded');
    expect(p.apply(lost, T1)).toEqual({ outcome: 'applied', from: 'succeeded', to: 'dispute_lost' });
    expect(p.apply(disputed, T2)).toEqual({ outcome: 'stale', from: 'dispute_lost', to: 'dispute_lost' });
    expect(snapshot(p)).toEqual({ status: 'dispute_lost', refundedMinor: 0n, disputeOutcome: 'lost', updatedAt: T1 });
  });

  it('a plain succeeded event on a disputed payment is already applied: it does not close the dispute', () => {
    const p = paymentIn('succeeded');
    p.apply(disputed, T1);
    expect(p.apply(succeeded, T2)).toEqual({ outcome: 'already_applied', from: 'disputed', to: 'disputed' });
    expect(snapshot(p)).toEqual({ status: 'disputed', refundedMinor: 0n, disputeOutcome: null, updatedAt: T1 });
  });

  it.each<PaymentStatus>(['pending', 'processing', 'authorized', 'failed', 'canceled', 'expired'])(
    'dispute events on a %s payment (never captured) are rejected with their reason',
    (status) => {
      for (const [event, detail] of [
        [disputed, 'a dispute on a payment never captured'],
        [won, 'a dispute won on a payment never captured'],
        [lost, 'a dispute lost on a payment never captured'],
      ] as const) {
        const p = paymentIn(status);
        const before = snapshot(p);
        expect(p.apply(event, T1)).toEqual({ outcome: 'rejected', from: status, reason: 'illegal_transition', detail });
        expect(snapshot(p)).toEqual(before);
      }
    },
  );
});

describe('Payment.apply: money', () => {
  const mismatches: Array<[string, PaymentChange, ApplyResult['outcome'], 'currency_mismatch' | 'amount_mismatch']> = [
    ['succeeded in USD', change('succeeded', { amount: Money.parse('49.90', 'USD'), currency: 'USD' }), 'rejected', 'currency_mismatch'],
    ['pending in USD', change('pending', { amount: Money.parse('49.90', 'USD'), currency: 'USD' }), 'rejected', 'currency_mismatch'],
    ['refund in USD', change('refunded', { currency: 'USD', refunded: Money.parse('10.00', 'USD') }), 'rejected', 'currency_mismatch'],
    ['dispute in USD', change('disputed', { currency: 'USD' }), 'rejected', 'currency_mismatch'],
    ['dispute won in GBP', change('dispute_won', { currency: 'GBP' }), 'rejected', 'currency_mismatch'],
    ['dispute lost in JPY', change('dispute_lost', { currency: 'JPY' }), 'rejected', 'currency_mismatch'],
    ['succeeded 49.91', change('succeeded', { amount: eur('49.91'), currency: 'EUR' }), 'rejected', 'amount_mismatch'],
    ['succeeded 49.89', change('succeeded', { amount: eur('49.89'), currency: 'EUR' }), 'rejected', 'amount_mismatch'],
    ['succeeded without amount', change('succeeded', { currency: 'EUR' }), 'rejected', 'amount_mismatch'],
    ['failed stating 10.00', change('failed', { amount: eur('10.00'), currency: 'EUR' }), 'rejected', 'amount_mismatch'],
    [
      'refund stating the payment amount 10.00',
      change('refunded', { amount: eur('10.00'), currency: 'EUR', refunded: eur('10.00') }),
      'rejected',
      'amount_mismatch',
    ],
  ];

  const moneyCells = PAYMENT_STATUSES.flatMap((status) =>
    mismatches.map(([label, event, , reason]) => [status, label, event, reason] as const),
  );

  it.each(moneyCells)('%s payment + %s: rejected, nothing changes', (status, _label, event, reason) => {
    // A payment with history, so that every field a change could touch holds something.
    const p = paymentIn(status, status === 'succeeded' ? { disputeOutcome: 'won' } : {});
    const before = snapshot(p);
    const result = p.apply(event, T1);
    expect(result.outcome).toBe('rejected');
    expect(result).toMatchObject({ from: status, reason });
    expect(snapshot(p)).toEqual(before);
    expect(p.updatedAt).toEqual(T0);
  });

  it('names both amounts in the amount mismatch', () => {
    expect(paymentIn('pending').apply(change('succeeded', { amount: eur('49.91'), currency: 'EUR' }), T1)).toEqual({
      outcome: 'rejected',
      from: 'pending',
      reason: 'amount_mismatch',
      detail: 'the event states 49.91 EUR, the payment expects 49.90 EUR',
    });
  });

  it('names both currencies in the currency mismatch', () => {
    expect(paymentIn('pending').apply(change('succeeded', { amount: Money.parse('49.90', 'USD'), currency: 'USD' }), T1)).toEqual({
      outcome: 'rejected',
      from: 'pending',
      reason: 'currency_mismatch',
      detail: 'the event is in USD, the payment in EUR',
    });
  });

  it('succeeded without amount: rejected amount_mismatch', () => {
    const p = paymentIn('pending');
    expect(p.apply(change('succeeded', { currency: 'EUR' }), T1)).toEqual({
      outcome: 'rejected',
      from: 'pending',
      reason: 'amount_mismatch',
      detail: 'a payment event without its amount',
    });
    expect(snapshot(p)).toEqual({ status: 'pending', refundedMinor: 0n, disputeOutcome: null, updatedAt: T0 });
  });

  it('the money check comes before the transition: a mismatching refund on a pending payment is a mismatch', () => {
    const p = paymentIn('pending');
    expect(p.apply(change('refunded', { currency: 'USD', refunded: Money.parse('10.00', 'USD') }), T1)).toMatchObject({
      outcome: 'rejected',
      reason: 'currency_mismatch',
    });
  });

  it('an event stating no money at all is checked against the table only', () => {
    const p = paymentIn('pending');
    expect(p.apply(change('processing'), T1)).toEqual({ outcome: 'applied', from: 'pending', to: 'processing' });
    expect(p.apply(change('failed'), T1)).toEqual({ outcome: 'applied', from: 'processing', to: 'failed' });
  });
});
