import { DataSource, Logger as TypeOrmLogger } from 'typeorm';
import { deferWrites, flushWrites, runTransaction } from '../../src/database/transaction';
import { TEST_DATABASE_URL } from '../support/env';

/**
 * Deferred writes (src/database/transaction.ts): a unit of work's writes wait, and run together in
 * one statement before the transaction's next statement or its commit; two writes of one key never
 * share a statement; a `then` that throws rolls the transaction back; outside a transaction opened
 * with runTransaction they run at once. Against the real PostgreSQL, in a scratch schema.
 */
describe('deferred writes', () => {
  const schema = `deferred_writes_${process.pid}`;
  const statements: string[] = [];
  const logger: TypeOrmLogger = {
    logQuery: (query) => void statements.push(query),
    logQueryError: () => undefined,
    logQuerySlow: () => undefined,
    logSchemaBuild: () => undefined,
    logMigration: () => undefined,
    log: () => undefined,
  };
  let ds: DataSource;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: TEST_DATABASE_URL, logging: ['query'], logger, extra: { options: `-c search_path=${schema}` } });
    await ds.initialize();
    await ds.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await ds.query(`CREATE TABLE IF NOT EXISTS ${schema}.t (id text PRIMARY KEY, n int NOT NULL)`);
    await ds.query(`CREATE TABLE IF NOT EXISTS ${schema}.u (id text PRIMARY KEY)`);
  });
  afterAll(async () => {
    await ds?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await ds?.destroy();
  });
  beforeEach(async () => {
    await ds.query(`TRUNCATE t, u`);
    statements.length = 0;
  });

  const insertT = (id: string, n = 1) => ({ key: 't', sql: `INSERT INTO t (id, n) VALUES ($1::text, $2::int) RETURNING id, n`, params: [id, n] });
  const rows = async (table: string) => ds.query(`SELECT * FROM ${table} ORDER BY id`);

  it('writes of different keys run as one statement, before the commit, and each `then` gets its own rows as JSON', async () => {
    const seen: unknown[] = [];
    await runTransaction(ds, async (em) => {
      await deferWrites(em, [{ ...insertT('a', 7), then: (r) => void seen.push(['t', r]) }]);
      await deferWrites(em, [{ key: 'u', sql: `INSERT INTO u (id) VALUES ($1::text) RETURNING id`, params: ['b'], then: (r) => void seen.push(['u', r]) }]);
      // Nothing ran yet.
      expect(statements.filter((s) => s.includes('INSERT')).length).toBe(0);
    });
    expect(statements).toEqual(['START TRANSACTION', expect.stringMatching(/^WITH w0 AS \(INSERT INTO t .*w1 AS \(INSERT INTO u /s), 'COMMIT']);
    expect(seen).toEqual([
      ['t', [{ id: 'a', n: 7 }]],
      ['u', [{ id: 'b' }]],
    ]);
    expect(await rows('t')).toEqual([{ id: 'a', n: 7 }]);
    expect(await rows('u')).toEqual([{ id: 'b' }]);
  });

  it("the transaction's next statement runs them first, so it sees them", async () => {
    const count = await runTransaction(ds, async (em) => {
      await deferWrites(em, [insertT('a')]);
      const [{ n }] = await em.query(`SELECT count(*)::int AS n FROM t`);
      return n;
    });
    expect(count).toBe(1);
    expect(statements.length).toBe(4);
    expect(statements[1]).toMatch(/^WITH w0 AS \(INSERT INTO t/);
    expect(statements[2]).toMatch(/^SELECT count/);
  });

  it('two writes of one key never share a statement: both take effect', async () => {
    await ds.query(`INSERT INTO t (id, n) VALUES ('a', 0)`);
    statements.length = 0;
    const bump = { key: 't', sql: `UPDATE t SET n = n + 1 WHERE id = $1::text`, params: ['a'] };
    await runTransaction(ds, async (em) => {
      await deferWrites(em, [bump]);
      await deferWrites(em, [bump]);
    });
    // In one statement both would read n = 0 and one of the two would be lost.
    expect(await rows('t')).toEqual([{ id: 'a', n: 2 }]);
    expect(statements.filter((s) => s.startsWith('WITH')).length).toBe(2);
  });

  it('a `then` that throws rolls the whole transaction back', async () => {
    await expect(
      runTransaction(ds, async (em) => {
        await em.query(`INSERT INTO u (id) VALUES ('before')`);
        await deferWrites(em, [
          insertT('a'),
          {
            key: 'u',
            sql: `INSERT INTO u (id) VALUES ($1::text) ON CONFLICT DO NOTHING RETURNING id`,
            params: ['before'],
            then: (r) => {
              if (r.length === 0) throw new Error('already there');
            },
          },
        ]);
      }),
    ).rejects.toThrow('already there');
    expect(await rows('t')).toEqual([]);
    expect(await rows('u')).toEqual([]);
  });

  it('a statement that fails fails the transaction, and nothing of it is kept', async () => {
    await expect(
      runTransaction(ds, async (em) => {
        await deferWrites(em, [insertT('a'), { key: 'u', sql: `INSERT INTO u (id) VALUES ($1::text)`, params: [null] }]);
      }),
    ).rejects.toThrow(/null value/);
    expect(await rows('t')).toEqual([]);
  });

  it('flushWrites runs them now; outside a transaction opened with runTransaction they run at once', async () => {
    await runTransaction(ds, async (em) => {
      await deferWrites(em, [insertT('a')]);
      await flushWrites(em);
      expect(statements.length).toBe(2);
    });
    statements.length = 0;
    let seen: unknown;
    await ds.transaction(async (em) => {
      await deferWrites(em, [{ ...insertT('b', 2), then: (r) => void (seen = r) }]);
      expect(seen).toEqual([{ id: 'b', n: 2 }]);
    });
    expect(await rows('t')).toEqual([
      { id: 'a', n: 1 },
      { id: 'b', n: 2 },
    ]);
  });
});
