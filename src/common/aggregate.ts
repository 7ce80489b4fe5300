import { RecordsMoves } from './lifecycle';

/**
 * The changes an aggregate made since it was loaded, in the order it made them (Sairyss's
 * AggregateRoot, without the bus): each applied move records what it announces, and the one
 * transaction that saves the aggregate takes them once, to publish them in that same transaction.
 * A move that was not applied records nothing, so nothing is announced twice.
 */
export abstract class RecordsChanges<C, S extends string = string> extends RecordsMoves<S> {
  private recorded: C[] = [];

  /** What was recorded since the last call; each change is taken once. */
  takeChanges(): C[] {
    // Aggregates made from rows (Object.assign on a fresh instance) have the field from the constructor.
    const taken = this.recorded ?? [];
    this.recorded = [];
    return taken;
  }

  protected record(change: C): void {
    (this.recorded ??= []).push(change);
  }
}
