import { DEFAULT_TUNING } from '../config/options';
import { jobOf, JOBS, jobsOf, RETRY_AFTER_BACKOFF, retryAfterBackoff, unhandledJobs } from './job-registry';
import { JobName, QueueName } from './queues';

const tuning = { ...DEFAULT_TUNING, inboxAttempts: 6, inboxBackoffMs: 250 };

describe('the job registry', () => {
  it('gives every job a queue, and every queue its jobs', () => {
    expect(Object.fromEntries(Object.values(QueueName).map((q) => [q, jobsOf(q)]))).toEqual({
      inbox: [JobName.ProcessDelivery],
      outbox: [JobName.DispatchOutboxMessage],
      maintenance: [JobName.PurgeExpired, JobName.CheckEndpointSilence],
      backfill: [JobName.RunBackfill],
      polling: [JobName.PollSweep, JobName.PollEndpoint],
    });
  });

  it('keys each job on the row it carries, so the same row is one job', () => {
    expect(jobOf(JobName.ProcessDelivery, { inboxId: 'i1' }, tuning)).toEqual({
      name: 'process-delivery',
      data: { inboxId: 'i1' },
      opts: { jobId: 'i1', attempts: 6, backoff: { type: 'exponential-retry-after', delay: 250, jitter: 0.5 }, removeOnComplete: { age: 3_600, count: 10_000 }, removeOnFail: { age: 604_800 } },
    });
    expect(jobOf(JobName.DispatchOutboxMessage, { messageId: 'm1' }, tuning).opts.jobId).toBe('m1');
    expect(jobOf(JobName.RunBackfill, { backfillId: 'b1' }, tuning).opts).toMatchObject({ jobId: 'b1', attempts: 8, removeOnComplete: true });
    // One run of an endpoint at a time, across every process: what bounds its calls a second.
    expect(jobOf(JobName.PollEndpoint, { endpointId: 'stripe-main' }, tuning).opts).toEqual({ jobId: 'poll-stripe-main', attempts: 1, removeOnComplete: true, removeOnFail: true });
  });

  it('the start-up check: every job handled on its own queue passes', () => {
    const handled = new Map(Object.values(QueueName).map((q) => [q, new Set(jobsOf(q))]));
    expect(unhandledJobs(handled)).toEqual([]);
  });

  it('the start-up check names a job no processor handles, and one handled on another queue', () => {
    const handled = new Map([
      [QueueName.Inbox, new Set([JobName.ProcessDelivery, JobName.RunBackfill])],
      [QueueName.Outbox, new Set([JobName.DispatchOutboxMessage])],
      [QueueName.Maintenance, new Set([JobName.PurgeExpired, JobName.CheckEndpointSilence])],
      [QueueName.Polling, new Set([JobName.PollSweep, JobName.PollEndpoint])],
    ]);
    expect(unhandledJobs(handled)).toEqual([
      'job "run-backfill" (queue "backfill") has no processor',
      'job "run-backfill" is handled on queue "inbox", not its own',
    ]);
  });

  it('wire names never change (jobs queued by an earlier release must still be taken)', () => {
    expect(Object.keys(JOBS).sort()).toEqual(['dispatch', 'endpoint-silence', 'poll-endpoint', 'poll-sweep', 'process-delivery', 'retention', 'run-backfill']);
  });

  describe('the inbox backoff: exponential, never sooner than a Retry-After', () => {
    const job = { opts: { backoff: { type: RETRY_AFTER_BACKOFF, delay: 1_000, jitter: 0 } } };
    const withRetryAfter = (ms: number) => Object.assign(new Error('429'), { retryAfterMs: ms });

    it('doubles from the first delay as BullMQ exponential does', () => {
      expect([1, 2, 3, 4].map((n) => retryAfterBackoff(n, RETRY_AFTER_BACKOFF, new Error('x'), job))).toEqual([1_000, 2_000, 4_000, 8_000]);
    });

    it('waits as long as the provider asked when that is longer, and no longer than the backoff when it is shorter', () => {
      for (let i = 0; i < 50; i++) {
        const d = retryAfterBackoff(1, RETRY_AFTER_BACKOFF, withRetryAfter(30_000), job);
        // Never sooner than asked; spread over a quarter more so that the refused do not all return at once.
        expect(d >= 30_000 && d <= 37_500).toBe(true);
      }
      expect(retryAfterBackoff(3, RETRY_AFTER_BACKOFF, withRetryAfter(500), job)).toBe(4_000);
    });

    it('keeps the jitter within [delay·(1−jitter), delay]', () => {
      const jittered = { opts: { backoff: { type: RETRY_AFTER_BACKOFF, delay: 1_000, jitter: 0.5 } } };
      for (let i = 0; i < 50; i++) {
        const d = retryAfterBackoff(2, RETRY_AFTER_BACKOFF, new Error('x'), jittered);
        expect(d >= 1_000 && d <= 2_000).toBe(true);
      }
    });

    it('ignores a retryAfterMs that is not a finite number', () => {
      expect(retryAfterBackoff(1, RETRY_AFTER_BACKOFF, Object.assign(new Error('x'), { retryAfterMs: 'soon' }), job)).toBe(1_000);
      expect(retryAfterBackoff(1, RETRY_AFTER_BACKOFF, withRetryAfter(Infinity), job)).toBe(1_000);
    });
  });
});
