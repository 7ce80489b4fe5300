import { DEFAULT_TUNING } from '../config/options';
import { jobOf, JOBS, jobsOf, unhandledJobs } from './job-registry';
import { JobName, QueueName } from './queues';

const tuning = { ...DEFAULT_TUNING, inboxAttempts: 6, inboxBackoffMs: 250 };

describe('the job registry', () => {
  it('gives every job a queue, and every queue its jobs', () => {
    expect(Object.fromEntries(Object.values(QueueName).map((q) => [q, jobsOf(q)]))).toEqual({
      inbox: [JobName.ProcessDelivery],
      outbox: [JobName.DispatchOutboxMessage],
      maintenance: [JobName.PurgeExpired],
      backfill: [JobName.RunBackfill],
    });
  });

  it('keys each job on the row it carries, so the same row is one job', () => {
    expect(jobOf(JobName.ProcessDelivery, { inboxId: 'i1' }, tuning)).toEqual({
      name: 'process-delivery',
      data: { inboxId: 'i1' },
      opts: { jobId: 'i1', attempts: 6, backoff: { type: 'exponential', delay: 250, jitter: 0.5 }, removeOnComplete: { age: 3_600, count: 10_000 }, removeOnFail: { age: 604_800 } },
    });
    expect(jobOf(JobName.DispatchOutboxMessage, { messageId: 'm1' }, tuning).opts.jobId).toBe('m1');
    expect(jobOf(JobName.RunBackfill, { backfillId: 'b1' }, tuning).opts).toMatchObject({ jobId: 'b1', attempts: 8, removeOnComplete: true });
  });

  it('the start-up check: every job handled on its own queue passes', () => {
    const handled = new Map(Object.values(QueueName).map((q) => [q, new Set(jobsOf(q))]));
    expect(unhandledJobs(handled)).toEqual([]);
  });

  it('the start-up check names a job no processor handles, and one handled on another queue', () => {
    const handled = new Map([
      [QueueName.Inbox, new Set([JobName.ProcessDelivery, JobName.RunBackfill])],
      [QueueName.Outbox, new Set([JobName.DispatchOutboxMessage])],
      [QueueName.Maintenance, new Set([JobName.PurgeExpired])],
    ]);
    expect(unhandledJobs(handled)).toEqual([
      'job "run-backfill" (queue "backfill") has no processor',
      'job "run-backfill" is handled on queue "inbox", not its own',
    ]);
  });

  it('wire names never change (jobs queued by an earlier release must still be taken)', () => {
    expect(Object.keys(JOBS).sort()).toEqual(['dispatch', 'process-delivery', 'retention', 'run-backfill']);
  });
});
