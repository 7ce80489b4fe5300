import { Logger } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';

type Work = () => Promise<unknown> | unknown;

interface Hooks {
  before: Work[];
  after: Work[];
  /** Writes waiting to run together, in one statement (see `deferWrites`). */
  deferred: DeferredWrite[];
  /** The transaction's own `query`, which runs a statement without flushing the deferred writes first. */
  query: Queryable['query'];
}

type Queryable = Pick<EntityManager, 'query'>;

/**
 * A write a unit of work asks for, whose result no later step of its transaction reads before it
 * runs (see `deferWrites`).
 */
export interface DeferredWrite {
  /**
   * The rows it writes, by name: two writes of one key never share a statement (a row written twice
   * in one statement keeps only one of the two). Writes of different keys must never touch the same
   * row (each key is one store's table, or a set of its rows disjoint from the others').
   */
  key: string;
  /**
   * One INSERT, UPDATE or DELETE (with RETURNING when `then` reads its rows), or a SELECT; its
   * parameters numbered from $1, each cast to its type; no WITH of its own, and no `$<digit>` in a
   * string literal or dollar quote (the parameters are renumbered by text).
   */
  sql: string;
  params: readonly unknown[];
  /**
   * Runs once the statement has: given its rows as JSON (ids and text as strings, numbers as
   * numbers, instants as ISO strings). It may run statements and defer more; a throw rolls the
   * transaction back.
   */
  then?: (rows: Array<Record<string, any>>) => unknown;
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
  let hooks: Hooks | undefined;
  const result = await dataSource.transaction(async (em) => {
    const query = em.query.bind(em);
    const own: Hooks = (hooks = { before: [], after: [], deferred: [], query });
    // Every statement of the transaction first runs the writes deferred before it, so that it sees them.
    em.query = (async (sql: string, params?: unknown[]) => {
      if (own.deferred.length > 0) await flushDeferred(own);
      return query(sql, params as any[]);
    }) as EntityManager['query'];
    open.set(em, own);
    try {
      const value = await work(em);
      // The end's work, in order; the writes deferred meanwhile once nothing else is left (as few statements as can be).
      for (;;) {
        if (own.before.length > 0) await own.before.shift()!();
        else if (own.deferred.length > 0) await flushDeferred(own);
        else break;
      }
      return value;
    } finally {
      open.delete(em);
      delete (em as { query?: unknown }).query;
    }
  });
  for (const callback of hooks!.after) {
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

/**
 * Writes for the transaction `em` belongs to, run together with the others deferred before its next
 * statement (or its commit) in one statement: one round trip, however many stores write. A unit of
 * work's flush defers its rows' statement instead of running it, so the processing transaction's
 * writes (the inbox row, the payment, the order, the deliveries it releases, the fulfillment, the
 * outbox message) are one statement. The writes of one call share a statement whatever their keys
 * (the caller vouches they touch different rows); a write whose key a pending one has runs after it.
 * Outside a transaction opened with `runTransaction`, they run at once. Only `em.query` runs them
 * first: a repository or query builder on the same transaction would not see them (the module uses
 * neither).
 */
export async function deferWrites(em: EntityManager, writes: readonly DeferredWrite[]): Promise<void> {
  if (writes.length === 0) return;
  const hooks = open.get(em);
  if (!hooks) return runWrites(em, writes);
  if (writes.some((w) => hooks.deferred.some((d) => d.key === w.key))) await flushDeferred(hooks);
  hooks.deferred.push(...writes);
}

/** Runs now the writes deferred in the transaction `em` belongs to (nothing outside one, where they ran at once). */
export async function flushWrites(em: EntityManager): Promise<void> {
  const hooks = open.get(em);
  if (hooks && hooks.deferred.length > 0) await flushDeferred(hooks);
}

async function flushDeferred(hooks: Hooks): Promise<void> {
  await runWrites({ query: hooks.query }, hooks.deferred.splice(0));
}

/**
 * Runs writes as one statement, each a data-modifying WITH of it (`w0`, `w1`, …, their parameters
 * numbered on), and gives each its rows. PostgreSQL runs every one of them, read or not, on the
 * same snapshot: none sees another's rows, which is why two of one key never meet here.
 */
async function runWrites(db: Queryable, writes: readonly DeferredWrite[]): Promise<void> {
  const params: unknown[] = [];
  const withs: string[] = [];
  const reads: string[] = [];
  writes.forEach((w, i) => {
    const offset = params.length;
    withs.push(`w${i} AS (${offset === 0 ? w.sql : w.sql.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)})`);
    params.push(...w.params);
    if (w.then) reads.push(`SELECT ${i} AS part, to_jsonb(w${i}) AS row FROM w${i}`);
  });
  const sql = `WITH ${withs.join(',\n')}\n${reads.length > 0 ? reads.join('\nUNION ALL\n') : 'SELECT NULL::int AS part, NULL::jsonb AS row WHERE false'}`;
  const rows: Array<{ part: number; row: Record<string, any> }> = await db.query(sql, params as unknown[]);
  const byPart = writes.map(() => [] as Array<Record<string, any>>);
  for (const r of rows) byPart[r.part].push(r.row);
  for (let i = 0; i < writes.length; i++) await writes[i].then?.(byPart[i]);
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

  /** The items added in the transaction `em` belongs to and not flushed yet (the same objects: a change to one is written). */
  pendingIn(em: EntityManager): readonly T[] {
    return this.pending.of(em).items;
  }

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
