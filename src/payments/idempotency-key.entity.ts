import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A client's `Idempotency-Key` on `POST /orders`: the first response, kept 24 hours. */
@Entity({ name: 'idempotency_keys' })
export class IdempotencyKey {
  @PrimaryColumn({ type: 'text' })
  scope: string;

  @PrimaryColumn({ type: 'text' })
  key: string;

  @Column({ name: 'request_hash', type: 'text' })
  requestHash: string;

  @Column({ name: 'response_status', type: 'integer', nullable: true })
  responseStatus: number | null;

  /** The first response's JSON text, kept as text so a replay is the same bytes. */
  @Column({ name: 'response_body', type: 'text', nullable: true })
  responseBody: string | null;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;
}
