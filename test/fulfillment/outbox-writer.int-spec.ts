import { Client, Notification } from 'pg';
import { OutboxWriter } from '../../src/outbox/outbox-writer';
import { createTestApp, eventually, TestApp } from '../support/app';
import { uniqueId } from '../support/domain';
import { TEST_SCHEMA, testPgConnection } from '../support/env';
import { outboxChannel } from '../../src/outbox/outbox-channel';

const CHANNEL = outboxChannel(TEST_SCHEMA);

/**
 * The outbox writer on the real PostgreSQL: it writes only inside the caller's transaction, once
 * per idempotency key, and its NOTIFY reaches a listener only when that transaction commits.
 */
describe('OutboxWriter (transactional outbox)', () => {
  let t: TestApp;
  let writer: OutboxWriter;
  let listener: Client;
  let heard: Array<{ channel: string; payload: string | undefined }> = [];

  beforeAll(async () => {
    t = await createTestApp();
    writer = t.get(OutboxWriter);
    listener = new Client(testPgConnection());
    await listener.connect();
    listener.on('notification', (n: Notification) => heard.push({ channel: n.channel, payload: n.payload }));
    await listener.query(`LISTEN ${CHANNEL}`);
  });
  afterAll(async () => {
    await listener?.end();
    await t?.close();
  });
  beforeEach(() => {
    heard = [];
  });

  const message = (key = uniqueId('key')) => ({
    type: 'fulfillment.dispatch',
    payload: { fulfillmentId: key, orderId: 'order-1', nested: { n: 1 } },
    idempotencyKey: key,
  });
  const rowsFor = (key: string) =>
    t.dataSource.query(
      `SELECT id, type, payload, status, attempts, last_error AS "lastError", dispatched_at AS "dispatchedAt",
              next_attempt_at IS NOT NULL AS "hasNextAttempt", created_at IS NOT NULL AS "hasCreatedAt"
         FROM outbox_message WHERE idempotency_key = $1`,
      [key],
    );

  /**
   * Sends a marker NOTIFY from another session, committed now, and waits for it. Notifications
   * reach a listener in commit order, so once the marker is heard, everything committed before
   * it has been heard too: what `heard` holds then is final, with no fixed wait.
   */
  async function barrier(marker: string): Promise<void> {
    await t.dataSource.query(`SELECT pg_notify($1, $2)`, [CHANNEL, marker]);
    await eventually(async () => heard.some((h) => h.payload === marker), 5_000, `the marker ${marker}`);
  }
  const payloads = () => heard.filter((h) => h.channel === CHANNEL).map((h) => h.payload);

  it('refuses a manager outside a transaction, and writes nothing', async () => {
    const m = message();
    await expect(writer.add(t.dataSource.manager, m)).rejects.toThrow(
      'OutboxWriter.add needs the EntityManager of an open transaction',
    );
    expect(await rowsFor(m.idempotencyKey)).toEqual([]);
    await barrier('after-refusal');
    expect(payloads()).toEqual(['after-refusal']);
  });

  it("refuses a query runner's manager with no transaction started, and writes nothing", async () => {
    const m = message();
    const runner = t.dataSource.createQueryRunner();
    try {
      await runner.connect();
      await expect(writer.add(runner.manager, m)).rejects.toThrow(
        'OutboxWriter.add needs the EntityManager of an open transaction',
      );
    } finally {
      await runner.release();
    }
    expect(await rowsFor(m.idempotencyKey)).toEqual([]);
  });

  it('inside a transaction writes one pending row with attempts 0 and returns its id', async () => {
    const m = message();
    const id = await t.dataSource.transaction((em) => writer.add(em, m));
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await rowsFor(m.idempotencyKey)).toEqual([
      {
        id,
        type: 'fulfillment.dispatch',
        payload: m.payload,
        status: 'pending',
        attempts: 0,
        lastError: null,
        dispatchedAt: null,
        hasNextAttempt: true,
        hasCreatedAt: true,
      },
    ]);
    const [{ due }] = await t.dataSource.query(`SELECT next_attempt_at <= now() AS due FROM outbox_message WHERE id = $1`, [id]);
    expect(due).toBe(true);
  });

  it('a second add with the same idempotencyKey returns null and writes nothing', async () => {
    const m = message();
    const first = await t.dataSource.transaction((em) => writer.add(em, m));
    const second = await t.dataSource.transaction((em) =>
      writer.add(em, { ...m, type: 'other.type', payload: { other: true } }),
    );
    expect(first).not.toBeNull();
    expect(second).toBeNull();
    const rows = await rowsFor(m.idempotencyKey);
    expect(rows.map((r: { id: string; type: string; payload: unknown }) => [r.id, r.type, r.payload])).toEqual([
      [first, 'fulfillment.dispatch', m.payload],
    ]);
    // Only the first add announced anything.
    await barrier('after-duplicate');
    expect(payloads()).toEqual([first, 'after-duplicate']);
  });

  it('the same key twice in one transaction: the second add returns null', async () => {
    const m = message();
    const ids = await t.dataSource.transaction(async (em) => [await writer.add(em, m), await writer.add(em, m)]);
    expect(ids[0]).not.toBeNull();
    expect(ids[1]).toBeNull();
    expect((await rowsFor(m.idempotencyKey)).length).toBe(1);
  });

  it('a rolled-back transaction leaves no row', async () => {
    const m = message();
    let written: string | null = null;
    await expect(
      t.dataSource.transaction(async (em) => {
        written = await writer.add(em, m);
        throw new Error('the business change failed');
      }),
    ).rejects.toThrow('the business change failed');
    expect(written).not.toBeNull();
    expect(await rowsFor(m.idempotencyKey)).toEqual([]);
    const [{ n }] = await t.dataSource.query(`SELECT count(*)::int AS n FROM outbox_message WHERE id = $1`, [written]);
    expect(n).toBe(0);
  });

  describe('NOTIFY on the schema\'s outbox channel', () => {
    // What earlier tests committed is heard before each of these starts (a notification of theirs
    // can arrive late on a loaded machine), so each test hears only its own.
    beforeEach(async () => {
      await barrier('settled');
      heard = [];
    });

    it('a transaction that adds and rolls back announces nothing', async () => {
      const m = message();
      let written: string | null = null;
      await expect(
        t.dataSource.transaction(async (em) => {
          written = await writer.add(em, m);
          throw new Error('rolled back');
        }),
      ).rejects.toThrow('rolled back');
      expect(written).not.toBeNull();
      // A bounded look first (up to 300 ms), then the marker proves nothing was merely late.
      const deadline = Date.now() + 300;
      while (Date.now() < deadline && payloads().length === 0) await new Promise((r) => setTimeout(r, 25));
      expect(payloads()).toEqual([]);
      await barrier('after-rollback');
      expect(payloads()).toEqual(['after-rollback']);
    });

    it('a transaction that commits announces exactly once, with the new id as payload, and only at commit', async () => {
      const m = message();
      let id: string | null = null;
      await t.dataSource.transaction(async (em) => {
        id = await writer.add(em, m);
        // Still open: a marker committed now overtakes it, and nothing of ours has been heard.
        await barrier('while-open');
        expect(payloads()).toEqual(['while-open']);
      });
      expect(id).not.toBeNull();
      await barrier('after-commit');
      expect(heard).toEqual([
        { channel: CHANNEL, payload: 'while-open' },
        { channel: CHANNEL, payload: id },
        { channel: CHANNEL, payload: 'after-commit' },
      ]);
    });

    it('two messages in one transaction: two notifications, one per id', async () => {
      const [a, b] = [message(), message()];
      const ids = await t.dataSource.transaction(async (em) => [await writer.add(em, a), await writer.add(em, b)]);
      await barrier('after-two');
      expect(payloads()).toEqual([ids[0], ids[1], 'after-two']);
    });
  });
});
