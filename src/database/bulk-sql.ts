/**
 * SQL for the stores' statements over many rows at once, planned the same way whatever a table's
 * size.
 *
 * A statement joined to `jsonb_to_recordset($1)` is planned for the hundred rows PostgreSQL assumes
 * a set-returning function gives. On a table of a few thousand rows (a young deployment, a bench
 * from an empty database) that makes a hash join over a sequential scan the cheapest plan, and
 * every processing transaction then reads the whole table (measured: 1 ms per statement at 2,770
 * inbox rows, growing with it) until the table is large enough for the planner to turn to the
 * index. Naming the keys as an array, or probing per key, keeps it on the index from the first row.
 */

/**
 * `id = ` this, beside the join on the id: the `id`s of the jsonb array of rows `param`
 * (`[{ "id": … }, …]`) as an array, which the planner probes the primary key with.
 */
export function idsOfRows(param: string): string {
  return `ANY(ARRAY(SELECT (e->>'id')::uuid FROM jsonb_array_elements(${param}) e))`;
}
