import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DomainError } from '../common/domain-error';
import { capJsonDepth } from '../http/json-depth';
import { keysetQuery, Page, toPage } from '../common/pagination';
import type { ProviderName } from '../config/options';
import { PW_CONNECTION } from '../database/data-source';
import { PROVIDERS } from '../webhooks/providers';
import { InboxQueueService } from '../webhooks/inbox-queue.service';
import type { InboxStatus } from '../webhooks/inbox.state';
import type { DeliveryDetail, DeliveryView, ListDeliveriesQuery } from './dto/operations.dto';

const COLUMNS = `id, endpoint_id AS "endpointId", provider, merchant_account_id AS "merchantAccountId",
  event_id AS "eventId", event_type AS "eventType", resource_id AS "resourceId", delivery_id AS "deliveryId",
  api_version AS "apiVersion", source, status, outcome, attempts, last_error AS "lastError", received_at AS "receivedAt", processed_at AS "processedAt"`;

type Row = Omit<DeliveryView, 'receivedAt' | 'processedAt'> & { receivedAt: Date; processedAt: Date | null };

/** The smallest UUIDv7 of a millisecond: ids and receivedAt share one clock (see the migration). */
function idFloor(ms: number): string {
  const hex = Math.max(0, ms).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}

/** The delivery archive of the admin API (CONTRACT §4): the receiver's own table is the record. */
@Injectable()
export class DeliveryArchiveService {
  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly inboxQueue: InboxQueueService,
  ) {}

  /**
   * Newest first, keyset on the time-ordered id; every filter has an index (status, endpoint,
   * event type, event id, resource id with the id; provider through the indexes led by provider;
   * a time window through the primary key).
   */
  async list(query: ListDeliveriesQuery): Promise<Page<DeliveryView>> {
    const from = query.from ? new Date(query.from) : undefined;
    const to = query.to ? new Date(query.to) : undefined;
    const { text, params, limit } = keysetQuery(
      `SELECT ${COLUMNS} FROM webhook_inbox`,
      [
        ['status = ?', query.status],
        ['endpoint_id = ?', query.endpointId],
        ['provider = ?', query.provider],
        ['event_type = ?', query.eventType],
        ['event_id = ?', query.eventId],
        ['resource_id = ?', query.resourceId],
        // The window on receivedAt, and the same window on the id, so the primary key serves it.
        ['received_at >= ?', from],
        ['id >= ?', from && idFloor(Math.floor(from.getTime()))],
        ['received_at < ?', to],
        ['id < ?', to && idFloor(Math.ceil(to.getTime()) + 1)],
      ],
      query,
    );
    const rows: Row[] = await this.dataSource.query(text, params);
    return toPage(rows, limit, view);
  }

  async get(id: string): Promise<DeliveryDetail> {
    const [row]: Array<Row & { headers: Record<string, string>; body: string }> = await this.dataSource.query(
      `SELECT ${COLUMNS}, headers, body FROM webhook_inbox WHERE id = $1`,
      [id],
    );
    if (!row) throw new DomainError('DELIVERY.NOT_FOUND', 'no such delivery');
    const { headers, body, ...rest } = row;
    return { ...view(rest), headers: redact(row.provider, headers), body: parseBody(body) };
  }

  /**
   * Runs processing again; safe at any time, because the transition guard decides. A delivery
   * whose processing is running right now (its row is locked) answers 409 rather than wait; two
   * runs never overlap. A final delivery that can still change (failed, unmatched, rejected) goes
   * back to `received`; a processed or ignored one is left as it is and the run finds nothing to do.
   */
  async reprocess(id: string): Promise<void> {
    await this.dataSource.transaction(async (em) => {
      let rows: Array<{ status: InboxStatus }>;
      try {
        rows = await em.query(`SELECT status FROM webhook_inbox WHERE id = $1 FOR UPDATE NOWAIT`, [id]);
      } catch (err) {
        if ((err as { code?: string }).code === '55P03') {
          throw new DomainError('DELIVERY.BUSY', 'busy', 'the delivery is being processed right now; try again shortly');
        }
        throw err;
      }
      if (rows.length === 0) throw new DomainError('DELIVERY.NOT_FOUND', 'no such delivery');
      await this.inboxQueue.reopen(em, id, rows[0].status);
    });
    // Committed: a Redis that is away only delays the run (the sweeper enqueues the row).
    await this.inboxQueue.requeueAfterCommit([id], { expedite: true });
  }
}

function view(row: Row): DeliveryView {
  return { ...row, receivedAt: row.receivedAt.toISOString(), processedAt: row.processedAt?.toISOString() ?? null };
}

/** Signature values never leave the database. */
function redact(provider: string, headers: Record<string, string>): Record<string, string> {
  const secret = new Set(PROVIDERS[provider as ProviderName]?.signatureHeaders ?? []);
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, secret.has(k) ? '[redacted]' : v]));
}

function parseBody(text: string): unknown {
  try {
    // Bodies deeper than MAX_JSON_DEPTH are refused at receipt; a row stored before that limit
    // existed is shown capped rather than failing the answer's serialisation.
    return capJsonDepth(JSON.parse(text));
  } catch {
    return text;
  }
}
