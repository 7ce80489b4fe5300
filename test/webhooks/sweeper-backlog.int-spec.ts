import { getQueueToken } from '@nestjs/bullmq';
import { QueueName, JobName } from '../../src/jobs/queues';
import type { Queue } from 'bullmq';
import { InboxSweeper } from '../../src/webhooks/inbox-sweeper.service';

import { createTestApp, TestApp, truncateAll } from '../support/app';
import { bodies, driver } from '../support/domain';

/**
 * The inbox sweeper walks the whole backlog of `received` rows with a cursor, a batch per pass,
 * instead of re-reading its head: a row whose job was lost is reached however many rows (with
 * jobs of their own, say waiting out a retry backoff) sit before it. Workers off.
 */
describe('the inbox sweeper walks the whole backlog', () => {
  let t: TestApp;
  let d: ReturnType<typeof driver>;
  let queue: Queue;
  let sweeper: InboxSweeper;

  beforeAll(async () => {
    t = await createTestApp({ tuning: { sweepBatchSize: 2, sweepAfterMs: 1 } });
    d = driver(t);
    queue = t.get<Queue>(getQueueToken(QueueName.Inbox));
    sweeper = t.get(InboxSweeper);
  });
  afterAll(() => t?.close());
  beforeEach(async () => {
    await truncateAll(t.dataSource);
    await queue.obliterate({ force: true });
  });

  /** Five `received` deliveries through the receive path; their ids in the sweeper's order. */
  async function fiveDeliveries(): Promise<string[]> {
    for (let i = 0; i < 5; i++) {
      const { eventId, body } = bodies.paymos('invoice.paid', `inv_sweep_${i}`);
      const res = await d.send('paymos-a', 'paymos', body, { eventId });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'accepted', eventId });
    }
    const rows: Array<{ id: string; status: string }> = await t.dataSource.query(
      `SELECT id, status FROM webhook_inbox ORDER BY id`,
    );
    expect(rows.map((r) => r.status)).toEqual(Array(5).fill('received'));
    return rows.map((r) => r.id);
  }

  /** The ids that have a job, and each job's state. */
  async function jobStates(ids: string[]): Promise<Record<string, string>> {
    const states: Record<string, string> = {};
    for (const id of ids) {
      const job = await queue.getJob(id);
      if (job) states[id] = await job.getState();
    }
    return states;
  }

  it('successive passes enqueue 2, 2, 1 (every row reached), then start over from the head', async () => {
    const ids = await fiveDeliveries();
    await queue.obliterate({ force: true }); // every job lost: only the sweeper can bring them back
    expect(await jobStates(ids)).toEqual({});

    expect(await sweeper.runOnce()).toBe(2);
    expect(Object.keys(await jobStates(ids)).sort()).toEqual(ids.slice(0, 2));
    expect(await sweeper.runOnce()).toBe(2);
    expect(Object.keys(await jobStates(ids)).sort()).toEqual(ids.slice(0, 4));
    expect(await sweeper.runOnce()).toBe(1);
    const afterWalk = await jobStates(ids);
    expect(Object.keys(afterWalk).sort()).toEqual(ids);
    expect(Object.values(afterWalk)).toEqual(Array(5).fill('waiting'));
    // Each job is the row's own.
    for (const id of ids) expect((await queue.getJob(id))?.data).toEqual({ inboxId: id });

    // The walk is over: the next pass starts at the head again.
    await queue.obliterate({ force: true });
    expect(await sweeper.runOnce()).toBe(2);
    expect(Object.keys(await jobStates(ids)).sort()).toEqual(ids.slice(0, 2));
  });

  it('a row with no job behind four whose jobs wait out a long delay is reached within 3 passes', async () => {
    const ids = await fiveDeliveries();
    await queue.obliterate({ force: true });
    // The four rows first in the sweeper's order have jobs (delayed ten minutes); the last has none.
    for (const id of ids.slice(0, 4)) {
      await queue.add(JobName.ProcessDelivery, { inboxId: id }, { jobId: id, delay: 600_000 });
    }
    expect(await jobStates(ids)).toEqual(Object.fromEntries(ids.slice(0, 4).map((id) => [id, 'delayed'])));

    const counts: number[] = [];
    for (let pass = 0; pass < 3 && !(await queue.getJob(ids[4])); pass++) counts.push(await sweeper.runOnce());

    // Exactly one job added in all, for the fifth row; the delayed ones were left alone.
    expect(counts.reduce((a, b) => a + b, 0)).toBe(1);
    expect(counts[counts.length - 1]).toBe(1);
    const states = await jobStates(ids);
    expect(states[ids[4]]).toBe('waiting');
    expect(ids.slice(0, 4).map((id) => states[id])).toEqual(Array(4).fill('delayed'));
    expect((await queue.getJob(ids[4]))?.data).toEqual({ inboxId: ids[4] });
  });
});
