import type { Job, Queue } from 'bullmq';

/** Ids looked up at once: their lookups overlap on the connection instead of waiting for each other. */
const CHUNK = 500;

/**
 * Puts work whose row says "run" back on a queue, keyed by the row's id. A job still waiting or
 * running is left alone (a delayed one is promoted when `expedite`); a finished job kept under
 * the same id is replaced, since BullMQ would silently ignore a new job with that id. Many ids go
 * in chunks: the jobs of a chunk are read together and its new jobs added in one bulk. Returns how
 * many jobs were added or promoted.
 */
export async function requeueJobs(
  queue: Queue,
  ids: readonly string[],
  addMany: (ids: string[]) => Promise<Job[]>,
  { expedite = false } = {},
): Promise<number> {
  let count = 0;
  for (let at = 0; at < ids.length; at += CHUNK) {
    const chunk = ids.slice(at, at + CHUNK);
    const jobs = await Promise.all(chunk.map((id) => queue.getJob(id)));
    const states = await Promise.all(jobs.map((job) => job?.getState()));
    const toAdd: string[] = [];
    const toRemove: Job[] = [];
    const toPromote: Job[] = [];
    chunk.forEach((id, i) => {
      const job = jobs[i];
      const state = states[i];
      if (!job) {
        toAdd.push(id);
      } else if (state === 'delayed') {
        if (expedite) toPromote.push(job);
      } else if (state === 'completed' || state === 'failed' || state === 'unknown') {
        toRemove.push(job);
        toAdd.push(id);
      }
    });
    await Promise.all([
      ...toPromote.map((job) => job.promote().catch(() => undefined)), // it may have started meanwhile
      ...toRemove.map((job) => job.remove().catch(() => undefined)), // it may have been removed meanwhile
    ]);
    if (toAdd.length > 0) await addMany(toAdd);
    count += toPromote.length + toAdd.length;
  }
  return count;
}
