import type { EntityManager } from 'typeorm';

/**
 * Runs an `UPDATE`/`DELETE … RETURNING` and gives back its rows. TypeORM answers those two
 * commands with `[rows, affectedCount]` instead of the rows, which is easy to misread.
 */
export async function rowsReturned<T>(em: Pick<EntityManager, 'query'>, sql: string, params: unknown[]): Promise<T[]> {
  const result = await em.query(sql, params);
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') {
    return result[0] as T[];
  }
  return result as T[];
}
