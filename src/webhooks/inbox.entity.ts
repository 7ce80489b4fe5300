import { Column, Entity, PrimaryGeneratedColumn, Unique } from 'typeorm';

import type { InboxStatus } from './inbox.state';

export { INBOX_STATUSES, type InboxStatus } from './inbox.state';

/**
 * One delivered event, recorded before any work. The key is the event's identity at the
 * provider, (provider, merchant account, event id): the same event reaching two endpoints of
 * one merchant is one row. An event its endpoint does not serve is keyed within that endpoint.
 */
@Entity({ name: 'webhook_inbox' })
@Unique('webhook_inbox_event_key', ['provider', 'merchantAccountId', 'eventId', 'keyScope'])
export class WebhookInbox {
  @PrimaryGeneratedColumn('uuid')
  id: string;

  @Column({ name: 'endpoint_id', type: 'text' })
  endpointId: string;

  @Column({ type: 'text' })
  provider: string;

  @Column({ name: 'merchant_account_id', type: 'text' })
  merchantAccountId: string;

  @Column({ name: 'event_id', type: 'text' })
  eventId: string;

  @Column({ name: 'event_type', type: 'text' })
  eventType: string;

  @Column({ name: 'resource_id', type: 'text', nullable: true })
  resourceId: string | null;

  @Column({ name: 'delivery_id', type: 'text', nullable: true })
  deliveryId: string | null;

  @Column({ name: 'api_version', type: 'text', nullable: true })
  apiVersion: string | null;

  /**
   * `''` for an event its endpoint serves; the endpoint's id for one it does not, which is then
   * keyed apart from the account it names (it never takes that account's key).
   */
  @Column({ name: 'key_scope', type: 'text', default: '' })
  keyScope: string;

  @Column({ name: 'source', type: 'text', default: 'webhook' })
  source: 'webhook' | 'backfill';

  /** The provider's headers as received; signature values are redacted when read back. */
  @Column({ type: 'jsonb' })
  headers: Record<string, string>;

  /** The raw body, exactly as signed. */
  @Column({ type: 'text' })
  body: string;

  @Column({ type: 'text', default: 'received' })
  status: InboxStatus;

  @Column({ type: 'text', nullable: true })
  outcome: string | null;

  @Column({ type: 'integer', default: 0 })
  attempts: number;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError: string | null;

  @Column({ name: 'received_at', type: 'timestamptz', default: () => 'now()' })
  receivedAt: Date;

  @Column({ name: 'processed_at', type: 'timestamptz', nullable: true })
  processedAt: Date | null;
}
