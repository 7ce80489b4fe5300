import {
  ApplyResult,
  CAPTURED_STATUSES,
  decideMove,
  PAYMENT_PROGRESS,
  PAYMENT_STATUSES,
  PAYMENT_TRANSITIONS,
  PaymentStatus,
} from './payment.state';

/** Every (from, to) cell of the 11×11 status table. */
const CELLS: Array<[PaymentStatus, PaymentStatus]> = PAYMENT_STATUSES.flatMap((from) =>
  PAYMENT_STATUSES.map((to): [PaymentStatus, PaymentStatus] => [from, to]),
);

/** The rule the guard must follow, read from the table and the progress order (STYLE rule 1). */
function expectedFromTable(from: PaymentStatus, to: PaymentStatus): ApplyResult {
  if (from === to) return { outcome: 'already_applied', from, to: from };
  if (PAYMENT_TRANSITIONS[from].includes(to)) return { outcome: 'applied', from, to };
  if (PAYMENT_PROGRESS[to] <= PAYMENT_PROGRESS[from]) return { outcome: 'stale', from, to: from };
  return { outcome: 'rejected', from, reason: 'illegal_transition', detail: `a ${from} payment cannot become ${to}` };
}

/**
 * The whole table written out by hand, so that a change to PAYMENT_TRANSITIONS or PAYMENT_PROGRESS
 * has to change this matrix too. A = applied, = = already_applied, S = stale, R = rejected
 * (illegal_transition). Columns in PAYMENT_STATUSES order.
 */
const COLUMNS: readonly PaymentStatus[] = [
  'pending',
  'processing',
  'authorized',
  'succeeded',
  'partially_refunded',
  'refunded',
  'disputed',
  'dispute_lost',
  'failed',
  'canceled',
  'expired',
];
//                                         pe pr au su pr re di dl fa ca ex
const MATRIX: Readonly<Record<PaymentStatus, string>> = {
  pending: /*                           */ '=  A  A  A  R  R  R  R  A  A  A',
  processing: /*                        */ 'S  =  A  A  R  R  R  R  A  A  A',
  authorized: /*                        */ 'S  S  =  A  R  R  R  R  A  A  A',
  succeeded: /*                         */ 'S  S  S  =  A  A  A  A  S  S  S',
  partially_refunded: /*                */ 'S  S  S  S  =  A  A  A  S  S  S',
  refunded: /*                          */ 'S  S  S  S  S  =  S  S  S  S  S',
  disputed: /*                          */ 'S  S  S  A  A  A  =  A  S  S  S',
  dispute_lost: /*                      */ 'S  S  S  S  S  S  S  =  S  S  S',
  failed: /*                            */ 'S  S  S  A  R  R  R  R  =  S  S',
  canceled: /*                          */ 'S  S  S  A  R  R  R  R  S  =  S',
  expired: /*                           */ 'S  S  S  A  R  R  R  R  S  S  =',
};
const LETTER: Record<string, ApplyResult['outcome']> = {
  A: 'applied',
  '=': 'already_applied',
  S: 'stale',
  R: 'rejected',
};

function pinned(from: PaymentStatus, to: PaymentStatus): ApplyResult['outcome'] {
  const letters = MATRIX[from].split(/\s+/);
  return LETTER[letters[COLUMNS.indexOf(to)]];
}

describe('payment status table', () => {
  it('lists the eleven statuses (docs/rest-api.md#payment-lifecycle), in the matrix column order', () => {
    expect([...PAYMENT_STATUSES]).toEqual([...COLUMNS]);
    expect(CELLS).toHaveLength(121);
  });

  it('gives every status a row in the table and a progress rank, and names only known statuses', () => {
    expect(Object.keys(PAYMENT_TRANSITIONS).sort()).toEqual([...PAYMENT_STATUSES].sort());
    expect(Object.keys(PAYMENT_PROGRESS).sort()).toEqual([...PAYMENT_STATUSES].sort());
    for (const targets of Object.values(PAYMENT_TRANSITIONS)) {
      for (const to of targets) expect(PAYMENT_STATUSES).toContain(to);
    }
  });

  it('pins the progress order', () => {
    expect(PAYMENT_PROGRESS).toEqual({
      pending: 0,
      processing: 1,
      authorized: 2,
      failed: 3,
      canceled: 3,
      expired: 3,
      succeeded: 4,
      partially_refunded: 5,
      disputed: 6,
      refunded: 7,
      dispute_lost: 7,
    });
  });

  it('has exactly the captured statuses', () => {
    expect([...CAPTURED_STATUSES].sort()).toEqual(
      ['dispute_lost', 'disputed', 'partially_refunded', 'refunded', 'succeeded'].sort(),
    );
  });

  it('moves forward only, except a dispute won back to succeeded / partially_refunded (disputed → refunded is forward) and a further partial refund', () => {
    const notForward = CELLS.filter(
      ([from, to]) => PAYMENT_TRANSITIONS[from].includes(to) && PAYMENT_PROGRESS[to] <= PAYMENT_PROGRESS[from],
    );
    expect(notForward).toEqual([
      ['partially_refunded', 'partially_refunded'],
      ['disputed', 'succeeded'],
      ['disputed', 'partially_refunded'],
    ]);
  });

  it('has no move out of refunded or dispute_lost (terminal)', () => {
    expect(PAYMENT_TRANSITIONS.refunded).toEqual([]);
    expect(PAYMENT_TRANSITIONS.dispute_lost).toEqual([]);
  });

  it('counts the cells of each outcome', () => {
    const counts: Record<string, number> = {};
    for (const [from, to] of CELLS) {
      const outcome = decideMove(from, to).outcome;
      counts[outcome] = (counts[outcome] ?? 0) + 1;
    }
    expect(counts).toEqual({ already_applied: 11, applied: 29, stale: 57, rejected: 24 });
  });
});

describe('decideMove: every cell, derived from the table', () => {
  it.each(CELLS)('%s → %s follows the table rule', (from, to) => {
    expect(decideMove(from, to)).toEqual(expectedFromTable(from, to));
  });
});

describe('decideMove: every cell, against the hand-written matrix', () => {
  it.each(CELLS)('%s → %s', (from, to) => {
    const result = decideMove(from, to);
    expect(result.outcome).toBe(pinned(from, to));
    expect(result.from).toBe(from);
    if (result.outcome === 'rejected') {
      expect(result.reason).toBe('illegal_transition');
      expect(result.detail).toBe(`a ${from} payment cannot become ${to}`);
    } else {
      // The status to write: the target only when applied, the current one otherwise.
      expect(result.to).toBe(result.outcome === 'applied' ? to : from);
    }
  });
});

describe('decideMove: the cells that matter', () => {
  it.each<[PaymentStatus, PaymentStatus, ApplyResult]>([
    ['pending', 'succeeded', { outcome: 'applied', from: 'pending', to: 'succeeded' }],
    ['pending', 'processing', { outcome: 'applied', from: 'pending', to: 'processing' }],
    ['authorized', 'expired', { outcome: 'applied', from: 'authorized', to: 'expired' }],
    ['succeeded', 'pending', { outcome: 'stale', from: 'succeeded', to: 'succeeded' }],
    ['succeeded', 'failed', { outcome: 'stale', from: 'succeeded', to: 'succeeded' }],
    ['succeeded', 'succeeded', { outcome: 'already_applied', from: 'succeeded', to: 'succeeded' }],
    ['succeeded', 'refunded', { outcome: 'applied', from: 'succeeded', to: 'refunded' }],
    ['succeeded', 'dispute_lost', { outcome: 'applied', from: 'succeeded', to: 'dispute_lost' }],
    ['failed', 'succeeded', { outcome: 'applied', from: 'failed', to: 'succeeded' }],
    ['canceled', 'succeeded', { outcome: 'applied', from: 'canceled', to: 'succeeded' }],
    ['expired', 'succeeded', { outcome: 'applied', from: 'expired', to: 'succeeded' }],
    ['failed', 'canceled', { outcome: 'stale', from: 'failed', to: 'failed' }],
    ['failed', 'pending', { outcome: 'stale', from: 'failed', to: 'failed' }],
    ['dispute_lost', 'succeeded', { outcome: 'stale', from: 'dispute_lost', to: 'dispute_lost' }],
    ['dispute_lost', 'refunded', { outcome: 'stale', from: 'dispute_lost', to: 'dispute_lost' }],
    ['refunded', 'succeeded', { outcome: 'stale', from: 'refunded', to: 'refunded' }],
    ['refunded', 'dispute_lost', { outcome: 'stale', from: 'refunded', to: 'refunded' }],
    ['refunded', 'disputed', { outcome: 'stale', from: 'refunded', to: 'refunded' }],
    ['refunded', 'refunded', { outcome: 'already_applied', from: 'refunded', to: 'refunded' }],
    ['disputed', 'succeeded', { outcome: 'applied', from: 'disputed', to: 'succeeded' }],
    ['disputed', 'partially_refunded', { outcome: 'applied', from: 'disputed', to: 'partially_refunded' }],
    // A dispute won after a full refund: the payment ends refunded.
    ['disputed', 'refunded', { outcome: 'applied', from: 'disputed', to: 'refunded' }],
    ['disputed', 'dispute_lost', { outcome: 'applied', from: 'disputed', to: 'dispute_lost' }],
    ['disputed', 'pending', { outcome: 'stale', from: 'disputed', to: 'disputed' }],
    ['partially_refunded', 'partially_refunded', { outcome: 'already_applied', from: 'partially_refunded', to: 'partially_refunded' }],
    ['partially_refunded', 'succeeded', { outcome: 'stale', from: 'partially_refunded', to: 'partially_refunded' }],
    [
      'pending',
      'refunded',
      { outcome: 'rejected', from: 'pending', reason: 'illegal_transition', detail: 'a pending payment cannot become refunded' },
    ],
    [
      'failed',
      'partially_refunded',
      { outcome: 'rejected', from: 'failed', reason: 'illegal_transition', detail: 'a failed payment cannot become partially_refunded' },
    ],
    [
      'authorized',
      'disputed',
      { outcome: 'rejected', from: 'authorized', reason: 'illegal_transition', detail: 'a authorized payment cannot become disputed' },
    ],
  ])('%s → %s', (from, to, expected) => {
    expect(decideMove(from, to)).toEqual(expected);
  });

  it.each(PAYMENT_STATUSES)('refunded → %s is never applied nor rejected', (to) => {
    expect(decideMove('refunded', to).outcome).toBe(to === 'refunded' ? 'already_applied' : 'stale');
  });

  it.each(PAYMENT_STATUSES)('dispute_lost → %s is never applied nor rejected', (to) => {
    expect(decideMove('dispute_lost', to).outcome).toBe(to === 'dispute_lost' ? 'already_applied' : 'stale');
  });

  it.each(PAYMENT_STATUSES)('%s → pending is never applied (pending is where a payment starts)', (from) => {
    expect(decideMove(from, 'pending').outcome).toBe(from === 'pending' ? 'already_applied' : 'stale');
  });
});
