import { Logger } from '@nestjs/common';
import type { DataSource, EntityManager } from 'typeorm';

type AfterCommit = () => Promise<unknown> | unknown;

const pending = new WeakMap<EntityManager, AfterCommit[]>();
const logger = new Logger('Transaction');

/**
 * Opens a transaction whose participants may ask for work to run once it has committed
 * (`afterCommit`): putting released deliveries back on a queue, say, which must never happen for
 * a change that rolled back. That work is best effort, in the order it was asked for; what it
 * carries is in the database already, so a sweeper finds whatever it fails to do.
 */
export async function runTransaction<T>(dataSource: DataSource, work: (em: EntityManager) => Promise<T>): Promise<T> {
  const callbacks: AfterCommit[] = [];
  const result = await dataSource.transaction(async (em) => {
    pending.set(em, callbacks);
    try {
      return await work(em);
    } finally {
      pending.delete(em);
    }
  });
  for (const callback of callbacks) {
    try {
      await callback();
    } catch (err) {
      logger.warn(`after-commit work failed (left for the sweepers): ${(err as Error)?.message ?? String(err)}`);
    }
  }
  return result;
}

/** Work for after the commit of the transaction `em` belongs to (opened with `runTransaction`). */
export function afterCommit(em: EntityManager, callback: AfterCommit): void {
  const callbacks = pending.get(em);
  if (!callbacks) throw new Error('afterCommit needs the EntityManager of a transaction opened with runTransaction');
  callbacks.push(callback);
}
