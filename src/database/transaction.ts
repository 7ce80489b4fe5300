import { Logger } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';

type Work = () => Promise<unknown> | unknown;

interface Hooks {
  before: Work[];
  after: Work[];
}

const open = new WeakMap<EntityManager, Hooks>();
const logger = new Logger('Transaction');

/**
 * Opens a transaction whose participants may ask for work to run at its end:
 * - `beforeCommit`: still inside it, once the use case's own work is done (a unit of work writes
 *   what it collected in a few statements for many rows; a reaction to several changes runs once).
 *   Such work may ask for more; all of it runs, in order, before the commit; a throw rolls it all back.
 * - `afterCommit`: once it has committed (putting released deliveries back on a queue, say, which
 *   must never happen for a change that rolled back). Best effort, in order; what it carries is in
 *   the database already, so a sweeper finds whatever it fails to do.
 */
export async function runTransaction<T>(dataSource: DataSource, work: (em: EntityManager) => Promise<T>): Promise<T> {
  const hooks: Hooks = { before: [], after: [] };
  const result = await dataSource.transaction(async (em) => {
    open.set(em, hooks);
    try {
      const value = await work(em);
      while (hooks.before.length > 0) await hooks.before.shift()!();
      return value;
    } finally {
      open.delete(em);
    }
  });
  for (const callback of hooks.after) {
    try {
      await callback();
    } catch (err) {
      logger.warn(`after-commit work failed (left for the sweepers): ${(err as Error)?.message ?? String(err)}`);
    }
  }
  return result;
}

function hooksOf(em: EntityManager, what: string): Hooks {
  const hooks = open.get(em);
  if (!hooks) throw new Error(`${what} needs the EntityManager of a transaction opened with runTransaction`);
  return hooks;
}

/** Work for the end of the transaction `em` belongs to, before it commits (opened with `runTransaction`). */
export function beforeCommit(em: EntityManager, callback: Work): void {
  hooksOf(em, 'beforeCommit').before.push(callback);
}

/** Whether `em` belongs to a transaction opened with `runTransaction` (one that takes work for its end). */
export function takesCommitWork(em: EntityManager): boolean {
  return open.has(em);
}

/** Work for after the commit of the transaction `em` belongs to (opened with `runTransaction`). */
export function afterCommit(em: EntityManager, callback: Work): void {
  hooksOf(em, 'afterCommit').after.push(callback);
}

/**
 * Per-transaction state of a participant (an identity map, rows to write at the end), created on
 * first use and gone with the transaction.
 */
export class TransactionState<S> {
  private readonly states = new WeakMap<EntityManager, S>();
  constructor(private readonly create: () => S) {}
  of(em: EntityManager): S {
    let state = this.states.get(em);
    if (!state) this.states.set(em, (state = this.create()));
    return state;
  }
}

/**
 * What a transaction collects to write once, at its end: the first `add` in a transaction schedules
 * `flush` before its commit, and every item added until then goes to that one call (a unit of work
 * writing many rows in one statement). Items added while a flush runs (a reaction to what it wrote)
 * are flushed in a second call, still before the commit. Needs a transaction opened with
 * `runTransaction`.
 */
export class BeforeCommitBatch<T> {
  private readonly pending = new TransactionState<{ items: T[]; scheduled: boolean }>(() => ({ items: [], scheduled: false }));

  constructor(private readonly flush: (em: EntityManager, items: T[]) => Promise<void>) {}

  add(em: EntityManager, item: T): void {
    const state = this.pending.of(em);
    state.items.push(item);
    if (state.scheduled) return;
    state.scheduled = true;
    beforeCommit(em, async () => {
      state.scheduled = false;
      const items = state.items.splice(0);
      if (items.length > 0) await this.flush(em, items);
    });
  }
}
