import { Client } from 'pg';
import { PreparedStatementsClient } from '../../src/database/prepared-statements';
import { createTestApp, TestApp } from '../support/app';
import { testPgConnection } from '../support/env';

/**
 * The module's pools prepare each parameterised statement once per connection (PostgreSQL parses and
 * plans it once), and `preparedStatements: false` runs every statement unnamed, as `pg` does.
 */
describe('prepared statements', () => {
  const prepared = (client: Client) =>
    client.query<{ name: string; statement: string }>(`SELECT name, statement FROM pg_prepared_statements ORDER BY name`).then((r) => r.rows);

  it('prepares a parameterised statement once per connection, and reuses it with other values', async () => {
    const client = new PreparedStatementsClient(testPgConnection());
    await client.connect();
    try {
      const text = `SELECT $1::int + 1 AS n /* prepared-statements test */`;
      expect((await client.query(text, [1])).rows).toEqual([{ n: 2 }]);
      expect((await client.query(text, [41])).rows).toEqual([{ n: 42 }]);
      const mine = (await prepared(client)).filter((p) => p.statement === text);
      expect(mine.length).toBe(1);
      expect(mine[0].name).toMatch(/^pw_/);
      // Without parameters (BEGIN, COMMIT, DDL) nothing is prepared.
      await client.query(`SELECT 1 AS one /* not prepared */`);
      expect((await prepared(client)).filter((p) => p.statement.includes('not prepared')).length).toBe(0);
      // A statement that fails still fails, and the connection goes on.
      await expect(client.query(`SELECT $1::int / 0 AS n`, [1])).rejects.toThrow('division by zero');
      expect((await client.query(text, [2])).rows).toEqual([{ n: 3 }]);
    } finally {
      await client.end();
    }
  });

  it("is how the module's own connections run its statements, unless preparedStatements is false", async () => {
    for (const preparedStatements of [true, false]) {
      const t: TestApp = await createTestApp({ preparedStatements });
      try {
        const runner = t.dataSource.createQueryRunner();
        await runner.connect();
        try {
          await runner.query(`SELECT $1::text AS marker /* module statement ${preparedStatements} */`, ['x']);
          const rows: Array<{ n: number }> = await runner.query(
            `SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement LIKE '%module statement ${preparedStatements} */'`,
          );
          expect(rows[0].n).toBe(preparedStatements ? 1 : 0);
        } finally {
          await runner.release();
        }
      } finally {
        await t.close();
      }
    }
  });
});
