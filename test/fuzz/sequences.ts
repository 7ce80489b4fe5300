/**
 * The fuzzer's model of what sequences of deliveries do to one order's payment, for PayPal,
 * Checkout.com, Square and Paddle (CONTRACT §2.7–§2.10): a sequence is a list of abstract steps
 * (paid, pending, failed, canceled, a refund, a dispute, …, each sent as signed, with a forged or a
 * tampered signature, with the wrong amount, or declaring another account), and re-deliveries of
 * earlier steps. `SequenceModel` says, step by step and without asking the service, what the
 * answers are, how each recorded delivery's processing ends (the inbox's status and outcome), and
 * where the payment (status, refunded amount) and the order (status, shipped once) then stand.
 *
 * The payment rules are the lifecycle of docs/rest-api.md#payment-lifecycle, written out again here
 * as the contract states them (not imported from src/, so that a change there is caught):
 * - the money first: an event stating another amount than the order's is `rejected/amount_mismatch`;
 * - a status event moves forward only (a move the table lists is applied, the same status is
 *   already applied, one at or behind the current progress is stale, anything else rejected);
 * - a capture once recorded makes a later `succeeded` already applied;
 * - refunds of their own amount (PayPal per refund id, Checkout.com per action id, Paddle per
 *   adjustment id) are summed, each id once; Square's `refunded_money` is cumulative (lower than
 *   what is known: stale); past the captured amount: rejected; before a capture: rejected;
 * - a PayPal reversal refunds what earlier refunds left;
 * - disputes need a captured payment; a dispute's outcome is final (a later opening or the other
 *   outcome is stale); refunds during a dispute raise the amount and keep the status;
 * - the order is paid (and shipped, once) when the payment first holds the money, and refunded
 *   when the money it was paid with is all back.
 */
import fc from 'fast-check';

export const SEQUENCE_PROVIDERS = ['paypal', 'checkout', 'square', 'paddle'] as const;
export type SequenceProvider = (typeof SEQUENCE_PROVIDERS)[number];

export type Kind =
  | 'processing'
  | 'authorized'
  | 'succeeded'
  | 'failed'
  | 'canceled'
  | 'expired'
  | 'refund'
  | 'reversal'
  | 'disputed'
  | 'dispute_won'
  | 'dispute_lost'
  | 'ignored';

export type Variant = 'ok' | 'forged' | 'tampered' | 'wrongAmount' | 'otherAccount';

export type Step =
  | {
      op: 'event';
      kind: Kind;
      /** Which of the provider's types for the kind (PayPal DENIED or DECLINED, Paddle paid or completed, …). */
      pick: number;
      /** The refund's id among a few (a repeated id is one refund). */
      refundId: number;
      /** The refund's amount (Square: the cumulative refunded amount). */
      refundMinor: number;
      variant: Variant;
      /** Sent once, twice in a row (a re-delivery), or twice at once. */
      send: 'once' | 'twice' | 'concurrent';
    }
  | { op: 'resend'; which: number };

/** Every order of the fuzz is 49.90 EUR. */
export const AMOUNT_MINOR = 4990;
export const REFUND_AMOUNTS = [1000, 2000, 2990, 4990, 5000];

/** The kinds each provider has (CONTRACT's type tables), and those whose event creates the payment at the start of a sequence. */
export const KINDS: Record<SequenceProvider, { all: Kind[]; first: Kind[]; declaresAccount: boolean }> = {
  // A refund or dispute reaches its payment through the capture: a sequence starts with a capture event.
  paypal: { all: ['processing', 'authorized', 'succeeded', 'failed', 'canceled', 'refund', 'reversal', 'disputed', 'dispute_won', 'dispute_lost', 'ignored'], first: ['processing', 'succeeded', 'failed'], declaresAccount: true },
  checkout: { all: ['processing', 'authorized', 'succeeded', 'failed', 'canceled', 'expired', 'refund', 'disputed', 'dispute_won', 'dispute_lost', 'ignored'], first: ['processing', 'authorized', 'succeeded', 'failed', 'canceled', 'expired'], declaresAccount: false },
  square: { all: ['processing', 'authorized', 'succeeded', 'failed', 'canceled', 'refund', 'disputed', 'dispute_won', 'dispute_lost', 'ignored'], first: ['processing', 'authorized', 'succeeded', 'failed', 'canceled'], declaresAccount: true },
  // Paddle: an approved refund adjustment, and a chargeback adjustment (a dispute lost).
  paddle: { all: ['succeeded', 'failed', 'canceled', 'refund', 'dispute_lost', 'ignored'], first: ['succeeded', 'failed', 'canceled'], declaresAccount: false },
};

/** Whether an event of `kind` states the payment's amount (so that a wrong one is refused). */
export function statesAmount(provider: SequenceProvider, kind: Kind): boolean {
  if (['disputed', 'dispute_won', 'dispute_lost', 'ignored', 'reversal'].includes(kind)) return false;
  // Square's refund is a payment.updated: its amount_money is the payment's.
  if (kind === 'refund') return provider === 'square';
  return true;
}

// ---------------------------------------------------------------------------------------------
// The model

type PaymentStatus = 'pending' | 'processing' | 'authorized' | 'succeeded' | 'partially_refunded' | 'refunded' | 'disputed' | 'dispute_lost' | 'failed' | 'canceled' | 'expired';
type OrderStatus = 'awaiting_payment' | 'paid' | 'fulfilled' | 'refunded';

const MOVES: Record<PaymentStatus, PaymentStatus[]> = {
  pending: ['processing', 'authorized', 'succeeded', 'failed', 'canceled', 'expired'],
  processing: ['authorized', 'succeeded', 'failed', 'canceled', 'expired'],
  authorized: ['succeeded', 'failed', 'canceled', 'expired'],
  failed: ['succeeded'],
  canceled: ['succeeded'],
  expired: ['succeeded'],
  succeeded: ['partially_refunded', 'refunded', 'disputed', 'dispute_lost'],
  partially_refunded: ['partially_refunded', 'refunded', 'disputed', 'dispute_lost'],
  disputed: ['succeeded', 'partially_refunded', 'refunded', 'dispute_lost'],
  refunded: [],
  dispute_lost: [],
};
const PROGRESS: Record<PaymentStatus, number> = { pending: 0, processing: 1, authorized: 2, failed: 3, canceled: 3, expired: 3, succeeded: 4, partially_refunded: 5, disputed: 6, refunded: 7, dispute_lost: 7 };
const CAPTURED = new Set<PaymentStatus>(['succeeded', 'partially_refunded', 'disputed', 'refunded', 'dispute_lost']);

/** How the inbox says a delivery's processing ended. */
export interface Outcome {
  status: 'processed' | 'rejected' | 'ignored';
  outcome: string;
}

export interface Expected {
  /** The answers, in order (a concurrent pair: as a multiset). */
  answers: Array<{ status: number; body: Record<string, unknown> }>;
  /** Rows the step adds to the inbox. */
  rows: number;
  /** The processing of the delivery recorded by this step, when one is. */
  processing: Outcome | null;
}

export interface Snapshot {
  payment: { status: PaymentStatus; refunded: number } | null;
  order: OrderStatus;
  shipments: number;
}

const applied: Outcome = { status: 'processed', outcome: 'applied' };
const alreadyApplied: Outcome = { status: 'processed', outcome: 'already_applied' };
const stale: Outcome = { status: 'processed', outcome: 'stale' };
const rejected = (outcome: string): Outcome => ({ status: 'rejected', outcome });

type EventStep = Extract<Step, { op: 'event' }>;

/** Where one order stands: its payment, its status, its shipments, and its deliveries rejected as too early. */
interface World {
  payment: { status: PaymentStatus; refunded: number; refunds: Map<string, number>; disputeOutcome: 'won' | 'lost' | null } | null;
  order: OrderStatus;
  shipped: number;
  /** Deliveries rejected `illegal_transition` (a refund or dispute before the capture): processed again when the payment moves. */
  tooEarly: EventStep[];
}

const cloneWorld = (w: World): World => ({
  payment: w.payment && { ...w.payment, refunds: new Map(w.payment.refunds) },
  order: w.order,
  shipped: w.shipped,
  tooEarly: [...w.tooEarly],
});

const snapshotOf = (w: World): Snapshot => ({ payment: w.payment && { status: w.payment.status, refunded: w.payment.refunded }, order: w.order, shipments: w.shipped });

function permutations<T>(xs: T[]): T[][] {
  if (xs.length <= 1) return [xs];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]));
}

export class SequenceModel {
  private world: World = { payment: null, order: 'awaiting_payment', shipped: 0, tooEarly: [] };
  /** Where the order may stand after the last step: one world, or several when deliveries processed again may go in any order. */
  private candidates: World[] = [];
  /** Per step: whether its delivery was recorded (what a resend of it is answered), and its event id. */
  readonly sent: Array<{ recorded: boolean; eventId: string }> = [];
  /** Cases seen, for the non-vacuity checks. */
  readonly seen: Record<string, number> = {};

  constructor(private readonly provider: SequenceProvider) {}

  private count(what: string): void {
    this.seen[what] = (this.seen[what] ?? 0) + 1;
  }

  /** Where the order may stand now (after the deliveries processed again). */
  snapshots(): Snapshot[] {
    return this.candidates.map(snapshotOf);
  }

  /** The service took the candidate `index` (the order in which it processed the reopened deliveries). */
  adopt(index: number): void {
    this.world = this.candidates[index];
    this.candidates = [this.world];
  }

  /** What a step does. `eventId`: the id of the event the step's body carries (a resend: the earlier one's). */
  step(step: Step, eventId: string): Expected {
    this.candidates = [this.world];
    if (step.op === 'resend') {
      const earlier = this.sent[step.which % this.sent.length];
      this.sent.push(earlier);
      if (!earlier.recorded) {
        this.count('resend refused');
        return { answers: [{ status: 401, body: { error: 'invalid_signature' } }], rows: 0, processing: null };
      }
      this.count('resend duplicate');
      return { answers: [{ status: 200, body: { status: 'duplicate', eventId: earlier.eventId } }], rows: 0, processing: null };
    }
    if (step.variant === 'forged' || step.variant === 'tampered') {
      this.sent.push({ recorded: false, eventId });
      this.count(step.variant);
      const refused = { status: 401, body: { error: 'invalid_signature' } };
      return { answers: step.send === 'once' ? [refused] : [refused, refused], rows: 0, processing: null };
    }
    this.sent.push({ recorded: true, eventId });
    const answers = [{ status: 200, body: { status: 'accepted', eventId } }];
    if (step.send !== 'once') {
      answers.push({ status: 200, body: { status: 'duplicate', eventId } });
      this.count(`sent ${step.send}`);
    }
    const processing = this.process(this.world, step, true);
    if (processing.outcome === 'illegal_transition') this.world.tooEarly.push(step);
    if (processing === applied) this.candidates = this.settle(this.world);
    return { answers, rows: 1, processing };
  }

  /**
   * The payment moved: its deliveries rejected as too early are processed again, in an order the
   * model does not fix, until none moves it further. Every order's outcome is a candidate.
   */
  private settle(world: World): World[] {
    if (world.tooEarly.length === 0) return [world];
    const out: World[] = [];
    for (const order of permutations(world.tooEarly.slice(0, 5))) {
      const w = cloneWorld(world);
      w.tooEarly = [];
      let pending = [...order, ...world.tooEarly.slice(5)];
      let moved = true;
      while (moved && pending.length > 0) {
        moved = false;
        const still: EventStep[] = [];
        for (const d of pending) {
          const r = this.process(w, d, false);
          if (r.outcome === 'illegal_transition') still.push(d);
          else if (r === applied) moved = true;
        }
        pending = still;
      }
      w.tooEarly = pending;
      if (!out.some((o) => JSON.stringify(snapshotOf(o)) === JSON.stringify(snapshotOf(w)))) out.push(w);
    }
    this.count('processed again');
    return out;
  }

  private process(w: World, step: EventStep, first: boolean): Outcome {
    const count = (what: string) => {
      if (first) this.count(what);
    };
    // A type the service does not act on is ignored, whatever account it names.
    if (step.kind === 'ignored') {
      count('ignored');
      return { status: 'ignored', outcome: 'no_handler' };
    }
    if (step.variant === 'otherAccount') {
      count('another account');
      return rejected('account_mismatch');
    }
    if (step.variant === 'wrongAmount') {
      count('wrong amount');
      return rejected('amount_mismatch');
    }
    // The first step creates the payment (the generator makes it an honest status event).
    const p = (w.payment ??= { status: 'pending', refunded: 0, refunds: new Map(), disputeOutcome: null });
    const from = p.status;
    const captured = CAPTURED.has(from);
    const tooEarly = (what: string): Outcome => {
      count(what);
      return rejected('illegal_transition');
    };
    const decide = (to: PaymentStatus): { outcome: Outcome; to: PaymentStatus } => {
      if (to === from) return { outcome: alreadyApplied, to: from };
      if (MOVES[from].includes(to)) return { outcome: applied, to };
      if (PROGRESS[to] <= PROGRESS[from]) return { outcome: stale, to: from };
      return { outcome: rejected('illegal_transition'), to: from };
    };
    let result: { outcome: Outcome; to: PaymentStatus };
    let refunded = p.refunded;
    let refundKey: [string, number] | null = null;
    let disputeOutcome = p.disputeOutcome;
    switch (step.kind) {
      case 'refund':
      case 'reversal': {
        if (!captured) return tooEarly('refund before capture');
        let total: number;
        if (this.provider === 'square') {
          total = step.refundMinor;
        } else {
          const id = `${step.kind}:${step.refundId}`;
          if (p.refunds.has(id)) {
            count('refund id again');
            return alreadyApplied;
          }
          let amount = step.kind === 'reversal' ? AMOUNT_MINOR : step.refundMinor;
          if (step.kind === 'reversal') {
            amount = Math.min(amount, AMOUNT_MINOR - p.refunded);
            count('reversal');
          }
          total = p.refunded + amount;
          refundKey = [id, amount];
        }
        if (total > AMOUNT_MINOR) return tooEarly('refund above the amount');
        if (total < p.refunded) {
          count('refund behind');
          return stale;
        }
        if (total === p.refunded) {
          count('refund nothing new');
          return alreadyApplied;
        }
        if (p.refunded > 0) count('refunds summed');
        refunded = total;
        if (from === 'disputed' || from === 'dispute_lost') {
          count('refund during a dispute');
          result = { outcome: applied, to: from };
        } else {
          const to: PaymentStatus = total === AMOUNT_MINOR ? 'refunded' : 'partially_refunded';
          result = MOVES[from].includes(to) ? { outcome: applied, to } : decide(to);
        }
        break;
      }
      case 'disputed':
        if (!captured) return tooEarly('dispute before capture');
        if (p.disputeOutcome !== null) {
          count('dispute after its outcome');
          return stale;
        }
        count('dispute opened');
        result = decide('disputed');
        break;
      case 'dispute_won':
        if (!captured) return tooEarly('dispute before capture');
        if (p.disputeOutcome === 'won') return alreadyApplied;
        if (p.disputeOutcome === 'lost') {
          count('dispute after its outcome');
          return stale;
        }
        disputeOutcome = 'won';
        count('dispute won');
        result = from === 'disputed' ? decide(p.refunded === 0 ? 'succeeded' : p.refunded === AMOUNT_MINOR ? 'refunded' : 'partially_refunded') : { outcome: applied, to: from };
        break;
      case 'dispute_lost':
        if (!captured) return tooEarly('dispute before capture');
        if (p.disputeOutcome === 'won') {
          count('dispute after its outcome');
          return stale;
        }
        disputeOutcome = 'lost';
        count('dispute lost');
        result = decide('dispute_lost');
        break;
      case 'succeeded':
        result = captured ? { outcome: alreadyApplied, to: from } : decide('succeeded');
        break;
      default:
        result = decide(step.kind);
    }
    if (result.outcome === stale) count('stale');
    if (result.outcome !== applied) return result.outcome;
    p.status = result.to;
    p.refunded = refunded;
    if (refundKey) p.refunds.set(...refundKey);
    p.disputeOutcome = disputeOutcome;
    // The order follows the payment on an applied move.
    if ((p.status === 'succeeded' || p.status === 'partially_refunded') && w.order === 'awaiting_payment') {
      // Paid, then fulfilled: the test waits for the shipment before the next step.
      w.order = 'fulfilled';
      w.shipped = 1;
      count('paid and shipped');
    }
    const fullyRefunded = p.status === 'refunded' || (CAPTURED.has(p.status) && p.refunded === AMOUNT_MINOR);
    if (fullyRefunded && (w.order === 'paid' || w.order === 'fulfilled')) {
      w.order = 'refunded';
      count('order refunded');
    }
    return applied;
  }
}

// ---------------------------------------------------------------------------------------------
// Arbitraries

const w = <T>(weight: number, arbitrary: fc.Arbitrary<T>) => ({ weight, arbitrary });

function eventStep(provider: SequenceProvider, kinds: Kind[], first: boolean): fc.Arbitrary<Step> {
  const variants: Array<{ weight: number; arbitrary: fc.Arbitrary<Variant> }> = [w(14, fc.constant('ok' as const))];
  if (!first) {
    variants.push(w(1, fc.constant('forged' as const)), w(1, fc.constant('tampered' as const)), w(2, fc.constant('wrongAmount' as const)));
    if (KINDS[provider].declaresAccount) variants.push(w(1, fc.constant('otherAccount' as const)));
  }
  // A capture first, mostly; then refunds and disputes more often than their share: they are what the sequences are about.
  const refunds = kinds.filter((k) => k === 'refund' || k === 'reversal');
  const disputes = kinds.filter((k) => ['disputed', 'dispute_won', 'dispute_lost', 'succeeded'].includes(k));
  const kind = first
    ? fc.oneof(w(3, fc.constant<Kind>('succeeded')), w(2, fc.constantFrom(...kinds)))
    : fc.oneof(w(3, fc.constantFrom(...kinds)), w(3, fc.constantFrom(...refunds)), w(2, fc.constantFrom(...disputes)));
  return fc
    .record({
      op: fc.constant('event' as const),
      kind,
      pick: fc.nat({ max: 3 }),
      refundId: fc.nat({ max: 1 }),
      refundMinor: fc.oneof(w(3, fc.constantFrom(1000, 2000)), w(1, fc.constantFrom(...REFUND_AMOUNTS))),
      variant: fc.oneof(...variants),
      send: first ? fc.constant('once' as const) : fc.oneof(w(8, fc.constant('once' as const)), w(1, fc.constant('twice' as const)), w(1, fc.constant('concurrent' as const))),
    })
    .map((s) => ({ ...s, variant: s.variant === 'wrongAmount' && !statesAmount(provider, s.kind) ? ('ok' as const) : s.variant }));
}

/** A sequence: an honest event that creates the payment, then events and re-deliveries in any order. */
export function sequenceArb(provider: SequenceProvider): fc.Arbitrary<Step[]> {
  const rest = fc.oneof(w(6, eventStep(provider, KINDS[provider].all, false)), w(1, fc.record({ op: fc.constant('resend' as const), which: fc.nat() })));
  return fc.tuple(eventStep(provider, KINDS[provider].first, true), fc.array(rest, { minLength: 3, maxLength: 9 })).map(([head, tail]) => [head, ...tail]);
}
