/**
 * The module's PostgreSQL advisory locks. Each is taken in the two-key form
 * `(lock, hashtext(schema))`, so two deployments sharing one database in different schemas never
 * wait for each other.
 */
export enum AdvisoryLock {
  /** One process applies migrations; the others wait, then find nothing to do. */
  Migrations = 72_001,
  /** One process sweeps the inbox at a time (transaction-level). */
  InboxSweeper = 72_002,
}

/** The two key arguments of `pg_advisory_*lock(…)` for `lock`, the schema bound as `$<param>`. */
export function advisoryLockArgs(lock: AdvisoryLock, param = 1): string {
  return `${lock}, hashtext($${param})`;
}
