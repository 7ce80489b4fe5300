import type { JobsOptions } from 'bullmq';

/**
 * The NOTIFY channel a committed outbox message is announced on: one per schema, so deployments
 * sharing a database never wake each other's relays. (Channel names are at most 63 bytes.)
 */
export function outboxChannel(schema: string): string {
  return `${schema.slice(0, 53)}_pw_outbox`;
}

/** The same channel as SQL, from the connection's own schema (the writer runs inside a caller's transaction). */
export const OUTBOX_CHANNEL_SQL = `left(current_schema(), 53) || '_pw_outbox'`;

export interface OutboxJobData {
  messageId: string;
}

/**
 * A message's job: id = message id. Retries are scheduled by the dispatcher itself from the
 * message's own attempt count (the database decides); BullMQ's attempts only cover a dispatcher
 * that crashed on its own infrastructure (database down), after which the relay's sweeper enqueues
 * the message again.
 */
export function outboxJobOptions(messageId: string): JobsOptions {
  return {
    jobId: messageId,
    attempts: 5,
    backoff: { type: 'exponential', delay: 1_000, jitter: 0.5 },
    removeOnComplete: { age: 3_600, count: 10_000 },
    removeOnFail: { age: 7 * 24 * 3_600 },
  };
}
