import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, Min } from 'class-validator';
import { ValidationFailed } from './domain-error';

/** `cursor` and `limit` of every list. */
export class PageQuery {
  @ApiPropertyOptional({ description: 'Opaque cursor from the previous page\'s `nextCursor`; left out, the first page.' })
  @Matches(/^[A-Za-z0-9_-]{1,200}$/, { message: 'cursor is not a cursor this API issued' })
  @IsString()
  @IsOptional()
  cursor?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, default: 50, description: 'Items per page, an integer from 1 to 100.' })
  @Max(100, { message: 'limit must be an integer from 1 to 100' })
  @Min(1, { message: 'limit must be an integer from 1 to 100' })
  @IsInt({ message: 'limit must be an integer from 1 to 100' })
  @IsOptional()
  @Type(() => Number)
  limit?: number;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * Keyset pagination on a time-ordered id (UUIDv7): newest first, `id < cursor`. No OFFSET, so a
 * page never repeats or skips an item that existed when the first page was read.
 */
function decodeCursor(cursor: string | undefined): string | null {
  if (cursor === undefined) return null;
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) {
    throw new ValidationFailed([{ field: 'cursor', message: 'cursor is not a cursor this API issued' }]);
  }
  return id;
}

function encodeCursor(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}

/** A page's statement: run `text` with `params`, then hand the rows and `limit` to `toPage`. */
export interface KeysetQuery {
  text: string;
  params: unknown[];
  limit: number;
}

/**
 * The statement of one newest-first page: `select` (`SELECT … FROM table`), then each condition
 * whose value is given (`?` stands for its parameter; an absent filter is left out), then the
 * page's cursor, `ORDER BY id DESC` and `limit + 1` rows. Every list of the API is one of these.
 */
export function keysetQuery(select: string, conditions: Array<[sql: string, value: unknown]>, page: PageQuery): KeysetQuery {
  const limit = page.limit ?? 50;
  const { where, params } = whereClause([...conditions, ['id < ?', decodeCursor(page.cursor)]], [limit + 1]);
  return { text: `${select} ${where} ORDER BY id DESC LIMIT $1`, params, limit };
}

/**
 * A WHERE clause of the conditions that have a value (an absent or empty value filters nothing),
 * each `?` a parameter numbered after those already in `params`; empty when none has a value.
 */
export function whereClause(conditions: Array<[sql: string, value: unknown]>, params: unknown[] = []): { where: string; params: unknown[] } {
  const parts: string[] = [];
  for (const [sql, value] of conditions) {
    if (value === undefined || value === null || value === '') continue;
    parts.push(sql.replace('?', `$${params.push(value)}`));
  }
  return { where: parts.length ? `WHERE ${parts.join(' AND ')}` : '', params };
}

/** Callers fetch `limit + 1` rows; the extra one only says whether a next page exists. */
export function toPage<R extends { id: string }, T>(rows: R[], limit: number, map: (row: R) => T): Page<T> {
  const items = rows.slice(0, limit);
  return {
    items: items.map(map),
    nextCursor: rows.length > limit ? encodeCursor(items[items.length - 1].id) : null,
  };
}
