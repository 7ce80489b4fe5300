/**
 * A lifecycle as data (Vendure's transition definitions): every status, where a new thing starts,
 * and where each status may go. One guard, `canMove`, walks every table of the module (the
 * delivery, the payment, the order, the outbox message, the fulfillment, the backfill); what a
 * context adds on top (a status that is already there, one that lies behind, an attempt budget) is
 * a thin wrapper over it, and the status written is always one the table allowed.
 */
export interface Lifecycle<S extends string> {
  /** What the statuses are of, for messages: `payment`, `delivery`… */
  readonly name: string;
  readonly statuses: readonly S[];
  /** Where a new one starts. */
  readonly initial: readonly S[];
  /** Every move allowed; a status with none is final. */
  readonly moves: Readonly<Record<S, readonly S[]>>;
}

/**
 * A lifecycle, checked when it is defined: a row for every status, no move to an unknown status,
 * known initial statuses, and every status reachable from an initial one. A table that fails any of
 * these stops the module from loading, rather than guarding wrongly at run time.
 */
export function defineLifecycle<S extends string>(definition: Lifecycle<S>): Lifecycle<S> {
  const problems = lifecycleProblems(definition);
  if (problems.length > 0) throw new Error(`the ${definition.name} lifecycle is not well formed: ${problems.join('; ')}`);
  return definition;
}

/** What is wrong with a table (empty when nothing is). */
export function lifecycleProblems<S extends string>(l: Lifecycle<S>): string[] {
  const known = new Set<string>(l.statuses);
  const problems: string[] = [];
  for (const status of l.statuses) if (!(status in l.moves)) problems.push(`${status} has no row`);
  for (const [from, targets] of Object.entries(l.moves) as Array<[string, readonly string[]]>) {
    if (!known.has(from)) problems.push(`a row for unknown status ${from}`);
    for (const to of targets) if (!known.has(to)) problems.push(`${from} → unknown status ${to}`);
  }
  if (l.initial.length === 0) problems.push('no initial status');
  for (const status of l.initial) if (!known.has(status)) problems.push(`unknown initial status ${status}`);
  if (problems.length === 0) {
    const reached = reachableFrom(l, l.initial);
    for (const status of l.statuses) if (!reached.has(status)) problems.push(`${status} cannot be reached from ${l.initial.join(' or ')}`);
  }
  return problems;
}

/** The one guard: whether the table lets `from` become `to`. */
export function canMove<S extends string>(l: Lifecycle<S>, from: S, to: S): boolean {
  return l.moves[from]?.includes(to) ?? false;
}

/** The statuses nothing leaves. */
export function finalStatuses<S extends string>(l: Lifecycle<S>): S[] {
  return l.statuses.filter((s) => l.moves[s].length === 0);
}

/** Every status some sequence of allowed moves leads to from `start` (the start included). */
export function reachableFrom<S extends string>(l: Lifecycle<S>, start: readonly S[]): Set<S> {
  const reached = new Set<S>(start);
  const queue = [...start];
  while (queue.length > 0) {
    for (const next of l.moves[queue.shift()!] ?? []) {
      if (!reached.has(next)) {
        reached.add(next);
        queue.push(next);
      }
    }
  }
  return reached;
}

/** The statuses that may move to `to`: what a move back to `received`, say, applies to. */
export function statusesMovingTo<S extends string>(l: Lifecycle<S>, to: S): S[] {
  return l.statuses.filter((s) => canMove(l, s, to));
}

/**
 * Whether `to` lies at or behind `from` in a ranking of progress (a late `pending` after
 * `succeeded`): such a move is stale, not refused.
 */
export function isBehind<S extends string>(progress: Readonly<Record<S, number>>, from: S, to: S): boolean {
  return progress[to] <= progress[from];
}

/** One move an aggregate made: `from` null when the move created it. */
export interface RecordedMove<S extends string = string> {
  from: S | null;
  to: S;
  at: Date;
}

/**
 * Where an aggregate's moves are recorded, each with its from, to and time, for the store that
 * saves the aggregate to write into the order's history in the same transaction: every move of
 * every aggregate goes through `recordMove`, so no path can change a status and leave no trace.
 */
export abstract class RecordsMoves<S extends string = string> {
  private moves: Array<RecordedMove<S>> = [];

  /** The moves made since the last call; each is taken once. */
  takeMoves(): Array<RecordedMove<S>> {
    const taken = this.moves;
    this.moves = [];
    return taken;
  }

  protected recordMove(from: S | null, to: S, at: Date): void {
    this.moves.push({ from, to, at });
  }
}

/** An error for a move the table refuses, where a caller asked for one it should never ask for. */
export class IllegalMove extends Error {
  constructor(l: Lifecycle<string>, from: string, to: string) {
    super(`a ${from} ${l.name} cannot become ${to}`);
    this.name = 'IllegalMove';
  }
}
