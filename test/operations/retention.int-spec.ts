import { getQueueToken } from '@nestjs/bullmq';
import type { Job, Queue } from 'bullmq';
import { signedHeaders } from '../../src/testing/sign';
import { AUTH, createTestApp, eventually, secretOf, TestApp, truncateAll } from '../support/app';
import { bodies, driver, uniqueId } from '../support/domain';

/**
 * POST /admin/retention/purge and the daily run (CONTRACT §4): deliveries in processed, ignored,
 * rejected or unmatched older than INBOX_RETENTION_DAYS, and dispatched outbox messages likewise,
 * are deleted; received and failed deliveries and pending/dead messages never are.
 */

const FINAL = ['processed', 'ignored', 'rejected', 'unmatched'];
const KEPT = ['received', 'failed'];
const OUTCOME: Record<string, string | null> = {
  processed: 'applied',
  ignored: 'no_handler',
  rejected: 'amount_mismatch',
  unmatched: 'payment_not_found',
  received: null,
  failed: 'internal_error',
};

describe('retention (INBOX_RETENTION_DAYS = 7)', () => {
  let t: TestApp;
  let d: ReturnType<typeof driver>;

  beforeAll(async () => {
    t = await createTestApp({ inboxRetentionDays: 7 });
    d = driver(t);
  });
  afterAll(async () => {
    await t?.close();
  });
  beforeEach(() => truncateAll(t.dataSource));

  const purge = () => d.http().post('/admin/retention/purge').set(AUTH);

  /** `count` deliveries through the receive path (parallel batches of 50); their inbox ids. */
  async function receive(count: number): Promise<string[]> {
    const eventIds: string[] = [];
    for (let start = 0; start < count; start += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, count - start) }, () => {
          const { eventId, body } = bodies.paymos('invoice.paid', uniqueId('inv'));
          eventIds.push(eventId);
          const text = JSON.stringify(body);
          return d
            .http()
            .post('/webhooks/paymos-a')
            .set(signedHeaders('paymos', secretOf('paymos-a'), text, { eventId }))
            .send(text)
            .then((res) => {
              if (res.status !== 200) throw new Error(`delivery refused: ${res.status} ${res.text}`);
            });
        }),
      );
    }
    const rows: Array<{ id: string }> = await t.dataSource.query(`SELECT id FROM webhook_inbox WHERE event_id = ANY($1)`, [
      eventIds,
    ]);
    expect(rows.length).toBe(count);
    return rows.map((r) => r.id);
  }

  /** Sets status, outcome and received_at (`age` is an SQL interval before now). */
  async function age(ids: string[], status: string, interval: string): Promise<void> {
    await t.dataSource.query(
      `UPDATE webhook_inbox
          SET status = $2, outcome = $3, received_at = now() - $4::interval,
              processed_at = CASE WHEN $2 = 'received' THEN NULL ELSE now() - $4::interval END
        WHERE id = ANY($1)`,
      [ids, status, OUTCOME[status], interval],
    );
  }

  /** `count` outbox messages as a support mark-paid writes them; their ids. */
  async function messages(count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const order = await d.createOrder();
      await d.http().post(`/orders/${order.id}/mark-paid`).set(AUTH).send({ reason: 'paid at the counter' }).expect(200);
      const [{ id }] = await t.dataSource.query(`SELECT id FROM outbox_message WHERE payload->>'orderId' = $1`, [order.id]);
      ids.push(id);
    }
    return ids;
  }

  async function setMessages(ids: string[], status: string, interval: string): Promise<void> {
    await t.dataSource.query(
      `UPDATE outbox_message
          SET status = $2, created_at = now() - $3::interval,
              dispatched_at = CASE WHEN $2 = 'dispatched' THEN now() - $3::interval ELSE NULL END,
              attempts = CASE WHEN $2 = 'pending' THEN 0 ELSE 1 END
        WHERE id = ANY($1)`,
      [ids, status, interval],
    );
  }

  const inboxIds = async (): Promise<string[]> =>
    (await t.dataSource.query(`SELECT id FROM webhook_inbox ORDER BY id`)).map((r: { id: string }) => r.id);
  const outboxIds = async (): Promise<string[]> =>
    (await t.dataSource.query(`SELECT id FROM outbox_message ORDER BY id`)).map((r: { id: string }) => r.id);
  const sorted = (ids: string[]) => [...ids].sort();

  it('deletes exactly the old final deliveries and old dispatched messages; keeps everything else', async () => {
    const statuses = [...FINAL, ...KEPT];
    const ids = await receive(statuses.length * 6);
    const oldFinal: string[] = [];
    const kept: string[] = [];
    for (const [s, status] of statuses.entries()) {
      const mine = ids.slice(s * 6, s * 6 + 6);
      // Old: 8 days, 30 days, a minute past the window. Young: a minute inside it, 6 days, today.
      await age([mine[0]], status, '8 days');
      await age([mine[1]], status, '30 days');
      await age([mine[2]], status, '7 days 1 minute');
      await age([mine[3]], status, '6 days 23 hours 59 minutes');
      await age([mine[4]], status, '6 days');
      await age([mine[5]], status, '0 seconds');
      if (FINAL.includes(status)) {
        oldFinal.push(...mine.slice(0, 3));
        kept.push(...mine.slice(3));
      } else {
        kept.push(...mine);
      }
    }

    const outbox = await messages(9);
    const [oldDispatched, youngDispatched, oldPending, oldDead] = [outbox.slice(0, 3), outbox.slice(3, 5), outbox.slice(5, 7), outbox.slice(7)];
    await setMessages(oldDispatched, 'dispatched', '8 days');
    await setMessages(youngDispatched, 'dispatched', '6 days');
    await setMessages(oldPending, 'pending', '30 days');
    await setMessages(oldDead, 'dead', '30 days');

    // An idempotency key two days old: cleared too, but it is neither a delivery nor a message.
    const key = await d
      .http()
      .post('/orders')
      .set({ ...AUTH, 'Idempotency-Key': 'retention-key-1' })
      .send({
        amount: '10.00',
        currency: 'EUR',
        shipTo: { name: 'A', line1: 'B', city: 'C', postalCode: 'D', country: 'GB' },
        items: [{ sku: 'S', quantity: 1 }],
      });
    expect(key.status).toBe(201);
    await t.dataSource.query(`UPDATE idempotency_keys SET created_at = now() - interval '2 days'`);

    const res = await purge();
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ deleted: oldFinal.length + oldDispatched.length });
    expect(res.body.deleted).toBe(4 * 3 + 3);
    expect((await t.dataSource.query(`SELECT count(*)::int AS n FROM idempotency_keys`))[0].n).toBe(0);

    expect(await inboxIds()).toEqual(sorted(kept));
    expect(await outboxIds()).toEqual(sorted([...youngDispatched, ...oldPending, ...oldDead]));
    // Received and failed ones, old or not, all remain.
    const remaining: Array<{ status: string; n: number }> = await t.dataSource.query(
      `SELECT status, count(*)::int AS n FROM webhook_inbox GROUP BY status ORDER BY status`,
    );
    expect(remaining).toEqual(
      [...statuses].sort().map((status) => ({ status, n: KEPT.includes(status) ? 6 : 3 })),
    );

    // Nothing left to purge.
    const again = await purge();
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ deleted: 0 });
    expect(await inboxIds()).toEqual(sorted(kept));
  });

  it('1,200 old deliveries and more: deleted across batches, the count exact', async () => {
    const old = await receive(1_200);
    await age(old, 'processed', '10 days');
    const oldFailed = await receive(5);
    await age(oldFailed, 'failed', '10 days');
    const young = await receive(5);
    await age(young, 'ignored', '1 day');
    const outbox = await messages(2);
    await setMessages(outbox, 'dispatched', '9 days');

    const res = await purge();
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ deleted: 1_202 });
    expect(await inboxIds()).toEqual(sorted([...oldFailed, ...young]));
    expect(await outboxIds()).toEqual([]);
    expect((await purge()).body).toEqual({ deleted: 0 });
  });

  it('exactly 1,000 old deliveries (a multiple of the batch): 1,000', async () => {
    const old = await receive(1_000);
    await age(old, 'unmatched', '8 days');
    const res = await purge();
    expect(res.body).toEqual({ deleted: 1_000 });
    expect(await inboxIds()).toEqual([]);
    expect((await purge()).body).toEqual({ deleted: 0 });
  });

  it('nothing at all: {"deleted": 0}', async () => {
    const res = await purge();
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ deleted: 0 });
  });

  it('without the token: 401, and nothing is deleted', async () => {
    const ids = await receive(2);
    await age(ids, 'processed', '30 days');
    const res = await d.http().post('/admin/retention/purge');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'unauthorized' });
    expect(await inboxIds()).toEqual(sorted(ids));
  });

  it('workers off: no daily scheduler is registered by this process', async () => {
    const queue = t.get<Queue>(getQueueToken('maintenance'));
    expect(await queue.getJobSchedulers()).toEqual([]);
  });
});

describe('the daily retention run (workers on)', () => {
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  let queue: Queue;

  beforeAll(async () => {
    t = await createTestApp({ runWorkers: true, inboxRetentionDays: 7 });
    d = driver(t);
    queue = t.get<Queue>(getQueueToken('maintenance'));
  });
  afterAll(async () => {
    await t?.close();
  });

  it("the maintenance queue has the job scheduler 'retention-daily' with a cron pattern", async () => {
    const found = await eventually(
      async () => (await queue.getJobSchedulers()).find((s) => s.key === 'retention-daily'),
      10_000,
      'the retention-daily scheduler',
    );
    const scheduler = found!;
    expect(scheduler.name).toBe('retention');
    expect(scheduler.every).toBeUndefined();
    // Five fields: minute hour day-of-month month day-of-week, at a fixed time once a day.
    expect(scheduler.pattern).toMatch(/^\d{1,2} \d{1,2} \* \* \*$/);
    const [minute, hour] = scheduler.pattern!.split(' ').map(Number);
    expect(minute).toBeLessThan(60);
    expect(hour).toBeLessThan(24);
    expect(scheduler.next).toBeGreaterThan(Date.now());
    expect(scheduler.next! - Date.now()).toBeLessThanOrEqual(24 * 3_600_000);
    expect((await queue.getJobSchedulers()).filter((s) => s.key === 'retention-daily').length).toBe(1);
  });

  it('a retention job on that queue runs the same purge', async () => {
    await truncateAll(t.dataSource);
    const { eventId, body } = bodies.paymos('invoice.unknown_kind', uniqueId('inv'));
    expect((await d.send('paymos-a', 'paymos', body, { eventId })).status).toBe(200);
    // The inbox worker processes it (ignored); then it is made old.
    await d.processed(eventId);
    await t.dataSource.query(`UPDATE webhook_inbox SET received_at = now() - interval '8 days'`);
    const job = await queue.add('retention', {});
    const done = await eventually(
      async () => {
        const current: Job | undefined = await queue.getJob(job.id!);
        return current && (await current.getState()) === 'completed' ? current : undefined;
      },
      10_000,
      'the retention job',
    );
    expect(done!.returnvalue).toEqual({ deleted: 1 });
    expect((await t.dataSource.query(`SELECT count(*)::int AS n FROM webhook_inbox`))[0].n).toBe(0);
  });
});
