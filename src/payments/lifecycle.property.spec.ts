import fc from 'fast-check';
import { Money } from './money';
import { Order } from './order.entity';
import type { OrderStatus } from './order.state';
import { Payment, PaymentChange } from './payment.entity';
import type { ProviderEventKind } from '../common/provider-event';
import type { ApplyResult, PaymentStatus } from './payment.state';

/**
 * "Any interleaving of a payment's events, with duplicates and reorderings, ends in the same state
 * as the events in order and never requests two fulfillments."
 *
 * One order of 49.90 EUR, one payment for it. A history is what the provider did, in order; a
 * delivery is that history shuffled with duplicates. Both go through the processing policy of
 * ProviderEventsService + the inbox's reopening of early-rejected deliveries (DeliveryReactions), modelled in `run`.
 */

const NOW = new Date('2026-03-01T10:00:00.000Z');
const AMOUNT = Money.parse('49.90', 'EUR');

/** One provider event, as plain data so that counter-examples print readably. */
type Step = { kind: Exclude<ProviderEventKind, 'refunded'> } | { kind: 'refunded'; refunded: number };

function toChange(step: Step): PaymentChange {
  switch (step.kind) {
    case 'refunded':
      return { kind: 'refunded', amount: AMOUNT, currency: 'EUR', refunded: Money.fromMinor(step.refunded, 'EUR') };
    case 'disputed':
    case 'dispute_won':
    case 'dispute_lost':
      return { kind: step.kind, amount: null, currency: 'EUR', refunded: null };
    default:
      return { kind: step.kind, amount: AMOUNT, currency: 'EUR', refunded: null };
  }
}

interface Outcome {
  step: Step;
  result: ApplyResult;
}

interface RunResult {
  payment: { status: PaymentStatus; refundedMinor: bigint; disputeOutcome: 'won' | 'lost' | null };
  orderStatus: OrderStatus;
  captured: boolean;
  fulfillmentRequests: number;
  /** Events still refused as illegal transitions when the delivery is over. */
  leftRejected: Step[];
  outcomes: Outcome[];
}

const isIllegal = (r: ApplyResult) => r.outcome === 'rejected' && r.reason === 'illegal_transition';

/**
 * The service's policy: events one at a time; an illegal transition is kept aside; whenever an
 * event is applied, the kept-aside ones are retried in the order they were kept, pass after pass,
 * until a pass applies nothing. After each applied change the order follows its payment; a
 * follow that makes the order `paid` is a fulfillment request.
 */
function run(deliveries: readonly Step[]): RunResult {
  const order = Order.place({
    reference: 'ORD-1',
    amount: AMOUNT,
    carrier: 'default',
    shipTo: { name: 'Ada', line1: '1 Main St', city: 'Paris', postalCode: '75001', country: 'FR' },
    items: [{ sku: 'SKU-1', quantity: 1 }],
    now: NOW,
  });
  const payment = Payment.register({
    orderId: order.id,
    provider: 'stripe',
    providerPaymentId: 'pi_1',
    merchantAccountId: 'acct_1',
    expected: order.amount,
    now: NOW,
  });
  let fulfillmentRequests = 0;
  const kept: Step[] = [];
  const outcomes: Outcome[] = [];

  const process = (step: Step): ApplyResult => {
    const result = payment.apply(toChange(step), NOW);
    outcomes.push({ step, result });
    if (result.outcome === 'applied') {
      const moved = order.followPayment(payment, NOW);
      if (moved?.outcome === 'applied' && moved.to === 'paid') fulfillmentRequests += 1;
    }
    return result;
  };

  const retryKept = () => {
    for (;;) {
      const pass = kept.splice(0);
      let appliedSome = false;
      for (const step of pass) {
        const result = process(step);
        if (isIllegal(result)) kept.push(step);
        else if (result.outcome === 'applied') appliedSome = true;
      }
      if (!appliedSome) return;
    }
  };

  for (const step of deliveries) {
    const result = process(step);
    if (isIllegal(result)) kept.push(step);
    else if (result.outcome === 'applied') retryKept();
  }

  return {
    payment: { status: payment.status, refundedMinor: payment.refundedMinor, disputeOutcome: payment.disputeOutcome },
    orderStatus: order.status,
    captured: payment.captured,
    fulfillmentRequests,
    leftRejected: kept,
    outcomes,
  };
}

// ---------------------------------------------------------------------------------------------
// Realistic histories of one payment
// ---------------------------------------------------------------------------------------------

type Shape =
  | 'H1 captured and refunded'
  | 'H2 never captured'
  | 'H3 disputed'
  | 'H4 retried attempt'
  | 'H5 refunds around a dispute';
interface History {
  shape: Shape;
  events: Step[];
}

/** Optional pending, processing, authorized, in that order. */
const preCapture: fc.Arbitrary<Step[]> = fc
  .tuple(fc.boolean(), fc.boolean(), fc.boolean())
  .map(([pending, processing, authorized]) => [
    ...(pending ? [{ kind: 'pending' as const }] : []),
    ...(processing ? [{ kind: 'processing' as const }] : []),
    ...(authorized ? [{ kind: 'authorized' as const }] : []),
  ]);

/** H1: capture, then 0–3 strictly increasing partial refunds (cumulative), optionally a full refund. */
const h1: fc.Arbitrary<History> = fc
  .record({
    pre: preCapture,
    partials: fc.uniqueArray(fc.integer({ min: 1, max: 4989 }), { maxLength: 3 }),
    full: fc.boolean(),
  })
  .map(({ pre, partials, full }) => ({
    shape: 'H1 captured and refunded' as const,
    events: [
      ...pre,
      { kind: 'succeeded' as const },
      ...[...partials].sort((a, b) => a - b).map((refunded) => ({ kind: 'refunded' as const, refunded })),
      ...(full ? [{ kind: 'refunded' as const, refunded: 4990 }] : []),
    ],
  }));

/** H2: pre-capture events, then exactly one of failed | canceled | expired. */
const h2: fc.Arbitrary<History> = fc
  .record({ pre: preCapture, end: fc.constantFrom('failed' as const, 'canceled' as const, 'expired' as const) })
  .map(({ pre, end }) => ({ shape: 'H2 never captured' as const, events: [...pre, { kind: end }] }));

/** H3: capture, a dispute, optionally its end. */
const h3: fc.Arbitrary<History> = fc
  .record({ pre: preCapture, end: fc.constantFrom(null, 'dispute_won' as const, 'dispute_lost' as const) })
  .map(({ pre, end }) => ({
    shape: 'H3 disputed' as const,
    events: [...pre, { kind: 'succeeded' as const }, { kind: 'disputed' as const }, ...(end ? [{ kind: end }] : [])],
  }));

/** H4: an attempt that failed, then a retried attempt on the same payment that succeeded. */
const h4: fc.Arbitrary<History> = fc.constant({
  shape: 'H4 retried attempt' as const,
  events: [{ kind: 'processing' as const }, { kind: 'failed' as const }, { kind: 'succeeded' as const }],
});

/**
 * H5: capture, partial refunds, a dispute opened; partial refunds while it is open; then the
 * dispute won (further refunds may follow, a full one maybe), lost, or still open.
 *
 * A full refund while the dispute is open is generated only when the dispute is then won. Followed
 * by a lost dispute, or by none, it does not converge: in order (succeeded, disputed,
 * refunded 49.90, dispute_lost) the payment ends dispute_lost and the order paid; delivered with
 * the refund before the opening it ends refunded (terminal; the dispute events are stale) and the
 * order refunded.
 */
const h5: fc.Arbitrary<History> = fc
  .record({
    pre: preCapture,
    partials: fc.uniqueArray(fc.integer({ min: 1, max: 4989 }), { maxLength: 4 }),
    before: fc.nat({ max: 4 }),
    during: fc.nat({ max: 4 }),
    end: fc.constantFrom(null, 'dispute_won' as const, 'dispute_lost' as const),
    full: fc.constantFrom(null, 'while disputed' as const, 'after the win' as const),
  })
  .map(({ pre, partials, before, during, end, full }) => {
    const refunds: Step[] = [...partials].sort((a, b) => a - b).map((refunded) => ({ kind: 'refunded' as const, refunded }));
    const a = Math.min(before, refunds.length);
    // Refunds after the dispute closes only after a win; otherwise all the rest come while it is open.
    const b = end === 'dispute_won' ? Math.min(a + during, refunds.length) : refunds.length;
    const fullRefund: Step[] = [{ kind: 'refunded' as const, refunded: 4990 }];
    const fullWhileDisputed = end === 'dispute_won' && full === 'while disputed' && b === refunds.length;
    const fullAfterWin = end === 'dispute_won' && full === 'after the win';
    return {
      shape: 'H5 refunds around a dispute' as const,
      events: [
        ...pre,
        { kind: 'succeeded' as const },
        ...refunds.slice(0, a),
        { kind: 'disputed' as const },
        ...refunds.slice(a, b),
        ...(fullWhileDisputed ? fullRefund : []),
        ...(end ? [{ kind: end }] : []),
        ...refunds.slice(b),
        ...(fullAfterWin ? fullRefund : []),
      ],
    };
  });

const histories = fc.oneof(h1, h2, h3, h4, h5);

/** A history and one delivery of it: shuffled, with 0–6 duplicates of its events inserted. */
const historyAndDelivery: fc.Arbitrary<{ history: History; delivery: Step[] }> = histories.chain((history) =>
  fc
    .array(fc.nat({ max: history.events.length - 1 }), { maxLength: 6 })
    .map((dups) => [...history.events, ...dups.map((i) => history.events[i])])
    .chain((all) => fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length }))
    .map((delivery) => ({ history, delivery })),
);

/** Where each history must end when delivered in order (independent of the policy above). */
function expectedInOrder(history: History): Pick<RunResult, 'payment' | 'orderStatus' | 'captured' | 'fulfillmentRequests'> {
  const events = history.events;
  const last = events[events.length - 1];
  switch (history.shape) {
    case 'H1 captured and refunded':
    case 'H5 refunds around a dispute': {
      const refunds = events.flatMap((e) => (e.kind === 'refunded' ? [e.refunded] : []));
      const refunded = refunds.length ? refunds[refunds.length - 1] : 0;
      const afterRefunds: PaymentStatus = refunded === 4990 ? 'refunded' : refunded > 0 ? 'partially_refunded' : 'succeeded';
      const end = events.find((e) => e.kind === 'dispute_won' || e.kind === 'dispute_lost')?.kind;
      const disputeOpened = events.some((e) => e.kind === 'disputed');
      // While a dispute is open or lost it holds the status; a won one gives it back to the refunds.
      const status: PaymentStatus = end === 'dispute_lost' ? 'dispute_lost' : disputeOpened && !end ? 'disputed' : afterRefunds;
      return {
        payment: {
          status,
          refundedMinor: BigInt(refunded),
          disputeOutcome: end === 'dispute_won' ? 'won' : end === 'dispute_lost' ? 'lost' : null,
        },
        orderStatus: status === 'refunded' ? 'refunded' : 'paid',
        captured: true,
        fulfillmentRequests: 1,
      };
    }
    case 'H2 never captured':
      return {
        payment: { status: last.kind as PaymentStatus, refundedMinor: 0n, disputeOutcome: null },
        orderStatus: 'awaiting_payment',
        captured: false,
        fulfillmentRequests: 0,
      };
    case 'H3 disputed':
      return {
        payment:
          last.kind === 'dispute_won'
            ? { status: 'succeeded', refundedMinor: 0n, disputeOutcome: 'won' }
            : last.kind === 'dispute_lost'
              ? { status: 'dispute_lost', refundedMinor: 0n, disputeOutcome: 'lost' }
              : { status: 'disputed', refundedMinor: 0n, disputeOutcome: null },
        orderStatus: 'paid',
        captured: true,
        fulfillmentRequests: 1,
      };
    case 'H4 retried attempt':
      return {
        payment: { status: 'succeeded', refundedMinor: 0n, disputeOutcome: null },
        orderStatus: 'paid',
        captured: true,
        fulfillmentRequests: 1,
      };
  }
}

describe('payment lifecycle: in-order histories', () => {
  it('every generated history, delivered in order, applies every event and ends where the history says', () => {
    fc.assert(
      fc.property(histories, (history) => {
        const inOrder = run(history.events);
        // A payment is registered pending: only its `pending` event is nothing new.
        expect(inOrder.outcomes.map((o) => o.result.outcome)).toEqual(
          history.events.map((e) => (e.kind === 'pending' ? 'already_applied' : 'applied')),
        );
        expect(inOrder.leftRejected).toEqual([]);
        expect({
          payment: inOrder.payment,
          orderStatus: inOrder.orderStatus,
          captured: inOrder.captured,
          fulfillmentRequests: inOrder.fulfillmentRequests,
        }).toEqual(expectedInOrder(history));
      }),
      { numRuns: 300 },
    );
  });
});

describe('payment lifecycle: any interleaving', () => {
  it('with duplicates and reorderings, ends in the same state as the events in order and never requests two fulfillments', () => {
    fc.assert(
      fc.property(historyAndDelivery, ({ history, delivery }) => {
        const inOrder = run(history.events);
        const shuffled = run(delivery);

        expect(shuffled.payment).toEqual(inOrder.payment);
        expect(shuffled.orderStatus).toBe(inOrder.orderStatus);
        expect(shuffled.fulfillmentRequests).toBeLessThanOrEqual(1);
        expect(shuffled.fulfillmentRequests).toBe(inOrder.captured ? 1 : 0);
        // Every event refused for coming too early got its turn.
        expect(shuffled.leftRejected).toEqual([]);
        // The money of these events is always the payment's: no mismatch, whatever the order.
        expect(shuffled.outcomes.filter((o) => o.result.outcome === 'rejected' && o.result.reason !== 'illegal_transition')).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });
});

describe('payment lifecycle: regressions', () => {
  const succeeded: Step = { kind: 'succeeded' };
  const refund = (refunded: number): Step => ({ kind: 'refunded', refunded });

  it('a refund before its capture is kept aside, then applied once the capture lands', () => {
    const r = run([refund(1000), succeeded]);
    expect(r.outcomes.map((o) => [o.step.kind, o.result.outcome])).toEqual([
      ['refunded', 'rejected'],
      ['succeeded', 'applied'],
      ['refunded', 'applied'],
    ]);
    expect(r.payment).toEqual({ status: 'partially_refunded', refundedMinor: 1000n, disputeOutcome: null });
    expect(r.orderStatus).toBe('paid');
    expect(r.fulfillmentRequests).toBe(1);
    expect(r.leftRejected).toEqual([]);
  });

  it('a full refund, then a lower one, both before the capture: refunded, the order refunded, one fulfillment', () => {
    const r = run([refund(4990), { kind: 'pending' }, refund(2000), succeeded, succeeded]);
    expect(r.payment).toEqual({ status: 'refunded', refundedMinor: 4990n, disputeOutcome: null });
    expect(r.orderStatus).toBe('refunded');
    expect(r.fulfillmentRequests).toBe(1);
    expect(r).toEqual(expect.objectContaining({ leftRejected: [] }));
    expect(run([{ kind: 'pending' }, succeeded, refund(2000), refund(4990)]).payment).toEqual(r.payment);
  });

  it('dispute_won before disputed: the late opening is stale, the payment stays succeeded with the outcome won', () => {
    const r = run([succeeded, { kind: 'dispute_won' }, { kind: 'disputed' }]);
    expect(r.outcomes.map((o) => [o.step.kind, o.result.outcome])).toEqual([
      ['succeeded', 'applied'],
      ['dispute_won', 'applied'],
      ['disputed', 'stale'],
    ]);
    expect(r.payment).toEqual({ status: 'succeeded', refundedMinor: 0n, disputeOutcome: 'won' });
    expect(r.payment).toEqual(run([succeeded, { kind: 'disputed' }, { kind: 'dispute_won' }]).payment);
    expect(r.orderStatus).toBe('paid');
    expect(r.fulfillmentRequests).toBe(1);
  });

  it('dispute events before the capture are kept aside and replayed in the order they came', () => {
    const r = run([{ kind: 'dispute_lost' }, { kind: 'disputed' }, succeeded]);
    expect(r.outcomes.map((o) => [o.step.kind, o.result.outcome])).toEqual([
      ['dispute_lost', 'rejected'],
      ['disputed', 'rejected'],
      ['succeeded', 'applied'],
      ['dispute_lost', 'applied'],
      ['disputed', 'stale'],
    ]);
    expect(r.payment).toEqual({ status: 'dispute_lost', refundedMinor: 0n, disputeOutcome: 'lost' });
    expect(r.orderStatus).toBe('paid');
    expect(r.fulfillmentRequests).toBe(1);
  });

  it('a partial refund, then a lost dispute: dispute_lost keeps the refunded amount, in order and reordered', () => {
    const r = run([succeeded, refund(9), { kind: 'disputed' }, { kind: 'dispute_lost' }]);
    expect(r.payment).toEqual({ status: 'dispute_lost', refundedMinor: 9n, disputeOutcome: 'lost' });
    expect(r.orderStatus).toBe('paid');
    expect(r.fulfillmentRequests).toBe(1);

    // The refund reaches the payment after the lost dispute: it still raises the amount.
    const reordered = run([{ kind: 'dispute_lost' }, refund(9), { kind: 'disputed' }, succeeded]);
    expect(reordered.outcomes.map((o) => [o.step.kind, o.result.outcome])).toEqual([
      ['dispute_lost', 'rejected'],
      ['refunded', 'rejected'],
      ['disputed', 'rejected'],
      ['succeeded', 'applied'],
      ['dispute_lost', 'applied'],
      ['refunded', 'applied'],
      ['disputed', 'stale'],
    ]);
    expect(reordered.payment).toEqual(r.payment);
    expect(reordered.orderStatus).toBe('paid');
    expect(reordered.fulfillmentRequests).toBe(1);
    expect(reordered.leftRejected).toEqual([]);
  });

  it('a partial refund while the dispute is open, then won: partially_refunded, in order and reordered', () => {
    const inOrder = run([succeeded, { kind: 'disputed' }, refund(1500), { kind: 'dispute_won' }]);
    expect(inOrder.outcomes.map((o) => [o.step.kind, o.result.outcome])).toEqual([
      ['succeeded', 'applied'],
      ['disputed', 'applied'],
      ['refunded', 'applied'],
      ['dispute_won', 'applied'],
    ]);
    expect(inOrder.payment).toEqual({ status: 'partially_refunded', refundedMinor: 1500n, disputeOutcome: 'won' });
    expect(inOrder.orderStatus).toBe('paid');
    const reordered = run([{ kind: 'dispute_won' }, refund(1500), succeeded, { kind: 'disputed' }]);
    expect(reordered.payment).toEqual(inOrder.payment);
    expect(reordered.orderStatus).toBe('paid');
    expect(reordered.fulfillmentRequests).toBe(1);
  });

  it('a full refund while the dispute is open, then won: refunded, the order refunded, in order and reordered', () => {
    const inOrder = run([succeeded, { kind: 'disputed' }, refund(4990), { kind: 'dispute_won' }]);
    expect(inOrder.outcomes.map((o) => [o.step.kind, o.result.outcome])).toEqual([
      ['succeeded', 'applied'],
      ['disputed', 'applied'],
      ['refunded', 'applied'],
      ['dispute_won', 'applied'],
    ]);
    expect(inOrder.payment).toEqual({ status: 'refunded', refundedMinor: 4990n, disputeOutcome: 'won' });
    expect(inOrder.orderStatus).toBe('refunded');
    expect(inOrder.fulfillmentRequests).toBe(1);
    const reordered = run([refund(4990), { kind: 'dispute_won' }, succeeded, { kind: 'disputed' }]);
    expect(reordered.payment).toEqual(inOrder.payment);
    expect(reordered.orderStatus).toBe('refunded');
    expect(reordered.fulfillmentRequests).toBe(1);
  });

  it('a full refund while the dispute is open refunds the order at once (nothing ships), and a lost dispute keeps it refunded', () => {
    const refundedInDispute = run([succeeded, { kind: 'disputed' }, refund(4990)]);
    expect(refundedInDispute.payment).toEqual({ status: 'disputed', refundedMinor: 4990n, disputeOutcome: null });
    expect(refundedInDispute.orderStatus).toBe('refunded');
    const lost = run([succeeded, { kind: 'disputed' }, refund(4990), { kind: 'dispute_lost' }]);
    expect(lost.payment).toEqual({ status: 'dispute_lost', refundedMinor: 4990n, disputeOutcome: 'lost' });
    expect(lost.orderStatus).toBe('refunded');
    expect(lost.fulfillmentRequests).toBe(1);
    const partial = run([succeeded, { kind: 'disputed' }, refund(1000)]);
    expect(partial.orderStatus).toBe('paid');
  });

  it('failed after succeeded is stale: the payment stays succeeded, the order paid once', () => {
    const r = run([{ kind: 'pending' }, succeeded, { kind: 'failed' }, { kind: 'processing' }]);
    expect(r.outcomes.map((o) => [o.step.kind, o.result.outcome])).toEqual([
      ['pending', 'already_applied'],
      ['succeeded', 'applied'],
      ['failed', 'stale'],
      ['processing', 'stale'],
    ]);
    expect(r.payment).toEqual({ status: 'succeeded', refundedMinor: 0n, disputeOutcome: null });
    expect(r.orderStatus).toBe('paid');
    expect(r.fulfillmentRequests).toBe(1);
  });

  it('a retried attempt: failed, then succeeded (in either order) pays the order once', () => {
    for (const delivery of [
      [{ kind: 'processing' }, { kind: 'failed' }, succeeded],
      [succeeded, { kind: 'failed' }, { kind: 'processing' }, succeeded],
    ] as Step[][]) {
      const r = run(delivery);
      expect(r.payment).toEqual({ status: 'succeeded', refundedMinor: 0n, disputeOutcome: null });
      expect(r.orderStatus).toBe('paid');
      expect(r.fulfillmentRequests).toBe(1);
    }
  });

  it('a payment that never captures leaves the order awaiting_payment with no fulfillment', () => {
    const r = run([{ kind: 'expired' }, { kind: 'authorized' }, { kind: 'pending' }, { kind: 'expired' }]);
    expect(r.payment).toEqual({ status: 'expired', refundedMinor: 0n, disputeOutcome: null });
    expect(r.orderStatus).toBe('awaiting_payment');
    expect(r.fulfillmentRequests).toBe(0);
  });
});
