import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { OutboxStatus } from './outbox.state';

export { OUTBOX_STATUSES, type OutboxStatus } from './outbox.state';

/** An intent to reach another system, written in the business transaction that decided it. */
@Entity({ name: 'outbox_message' })
export class OutboxMessage {
  @PrimaryColumn('uuid')
  id: string;

  @Column({ type: 'text' })
  type: string;

  @Column({ type: 'jsonb' })
  payload: Record<string, unknown>;

  @Column({ name: 'idempotency_key', type: 'text' })
  idempotencyKey: string;

  @Column({ type: 'text' })
  status: OutboxStatus;

  @Column({ type: 'integer' })
  attempts: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz' })
  nextAttemptAt: Date;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'dispatched_at', type: 'timestamptz', nullable: true })
  dispatchedAt: Date | null;

  /** When a call for it last began: set before each call, so a crash mid-call leaves a trace. */
  @Column({ name: 'last_call_at', type: 'timestamptz', nullable: true })
  lastCallAt: Date | null;

  /** The worker working on it, and until when (taken over by another only after that). */
  @Column({ name: 'lease_owner', type: 'text', nullable: true })
  leaseOwner: string | null;

  @Column({ name: 'lease_until', type: 'timestamptz', nullable: true })
  leaseUntil: Date | null;

  /** Messages sharing it are delivered in order while at their first attempt. */
  @Column({ name: 'ordering_key', type: 'text', nullable: true })
  orderingKey: string | null;
}
