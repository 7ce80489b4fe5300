import { Column, Entity, PrimaryColumn } from 'typeorm';

export const OUTBOX_STATUSES = ['pending', 'dispatched', 'dead'] as const;
export type OutboxStatus = (typeof OUTBOX_STATUSES)[number];

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

  /** When a carrier call for it last began: set before each call, so a crash mid-call leaves a trace. */
  @Column({ name: 'last_call_at', type: 'timestamptz', nullable: true })
  lastCallAt: Date | null;
}
