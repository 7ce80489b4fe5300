/**
 * The module's BullMQ queues and job names, one enum each (Immich keeps them so): a queue carries
 * work, the database decides what it means. Keys live under the module's `queuePrefix`.
 */
export enum QueueName {
  /** A recorded delivery's processing (job id = inbox id). */
  Inbox = 'inbox',
  /** An outbox message's delivery, whatever its type (job id = message id). */
  Outbox = 'outbox',
  /** Retention and other scheduled upkeep. */
  Maintenance = 'maintenance',
  /** A backfill's walk of a provider's events API (job id = backfill id). */
  Backfill = 'backfill',
}

export enum JobName {
  ProcessDelivery = 'process-delivery',
  DeliverMessage = 'dispatch',
  Retention = 'retention',
  RunBackfill = 'run-backfill',
}

/** The scheduler ids of repeated jobs (one schedule per id, across every process). */
export enum JobSchedule {
  RetentionDaily = 'retention-daily',
}
