/**
 * The module's BullMQ queues, job names and schedules, one enum each (Immich keeps them so): a
 * queue carries work, the database decides what it means. Keys live under the module's
 * `queuePrefix`. The values are wire names, kept in Redis: a job queued by an earlier release must
 * still find its processor, so a value never changes even when a member is renamed.
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
  /** (v4) Polling: the sweep, and each endpoint's run (job id = `poll-<endpoint id>`). */
  Polling = 'polling',
}

export enum JobName {
  ProcessDelivery = 'process-delivery',
  DispatchOutboxMessage = 'dispatch',
  PurgeExpired = 'retention',
  RunBackfill = 'run-backfill',
  PollSweep = 'poll-sweep',
  PollEndpoint = 'poll-endpoint',
  /** Declares the endpoints that became silent (docs/operations.md#endpoint-health). */
  CheckEndpointSilence = 'endpoint-silence',
}

/** The scheduler ids of repeated jobs (one schedule per id, across every process). */
export enum JobSchedule {
  RetentionDaily = 'retention-daily',
  PollSweep = 'poll-sweep',
  EndpointSilence = 'endpoint-silence',
}
