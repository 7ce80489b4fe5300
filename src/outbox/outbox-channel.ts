/**
 * The NOTIFY channel a committed outbox message is announced on: one per schema, so deployments
 * sharing a database never wake each other's relays. (Channel names are at most 63 bytes.)
 */
export function outboxChannel(schema: string): string {
  return `${schema.slice(0, 53)}_pw_outbox`;
}

/** The same channel as SQL, from the connection's own schema (the writer runs inside a caller's transaction). */
export const OUTBOX_CHANNEL_SQL = `left(current_schema(), 53) || '_pw_outbox'`;
