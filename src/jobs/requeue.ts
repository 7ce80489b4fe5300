import type { Job, Queue } from 'bullmq';

/**
 * Puts work whose row says "run" back on a queue, keyed by the row's id. A job still waiting or
 * running is left alone (a delayed one is promoted when `expedite`); a finished job kept under
 * the same id is replaced, since BullMQ would silently ignore a new job with that id. Returns how
 * many jobs were added or promoted.
 */
export async function requeueJobs(
  queue: Queue,
  ids: readonly string[],
  add: (id: string) => Promise<Job>,
  { expedite = false } = {},
): Promise<number> {
  let count = 0;
  for (const id of ids) {
    const job = await queue.getJob(id);
    if (job) {
      const state = await job.getState();
      if (state === 'delayed') {
        if (expedite) {
          await job.promote().catch(() => undefined); // it may have started meanwhile
          count++;
        }
        continue;
      }
      if (state !== 'completed' && state !== 'failed' && state !== 'unknown') continue;
      await job.remove().catch(() => undefined); // it may have been removed meanwhile
    }
    await add(id);
    count++;
  }
  return count;
}
