import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { DomainError, ValidationFailed } from '../common/domain-error';
import { capJsonDepth } from '../common/json-depth';
import type { Page } from '../common/pagination';
import { PW_CONNECTION } from '../database/data-source';
import type { ProviderAdapter } from '../providers';
import { PW_PROVIDERS } from '../config/tokens';
import { InboxQueueService } from '../webhooks/inbox-queue.service';
import { ArchivedDelivery, type ArchiveFilter, InboxStore } from '../webhooks/inbox.store';
import {
  REPROCESS_MAX_SELECTED,
  type DeliveryDetail,
  type DeliveryView,
  type ListDeliveriesQuery,
  type ReprocessFilter,
  type ReprocessRequest,
} from './dto/operations.dto';
import { activeTraceparent } from '../observability/tracing';

/**
 * The delivery archive of the admin API (docs/operations.md#archive-and-replays): the receiver's
 * own table is the record.
 */
@Injectable()
export class DeliveryArchiveService {
  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly inbox: InboxStore,
    private readonly inboxQueue: InboxQueueService,
    @Inject(PW_PROVIDERS) private readonly providers: ReadonlyMap<string, ProviderAdapter>,
  ) {}

  /** Newest first, a page at a time; every filter is served by an index (see InboxStore.archivePage). */
  async list(query: ListDeliveriesQuery): Promise<Page<DeliveryView>> {
    const page = await this.inbox.archivePage(
      this.dataSource,
      archiveFilter(query),
      query,
    );
    return { items: page.items.map(view), nextCursor: page.nextCursor };
  }

  async get(id: string): Promise<DeliveryDetail> {
    const row = await this.inbox.archivedDelivery(this.dataSource, id);
    if (!row) throw new DomainError('DELIVERY.NOT_FOUND', 'no such delivery');
    const { headers, body, ...rest } = row;
    const provider = this.providers.get(row.provider);
    return { ...view(rest), headers: redact(provider, headers), body: redactFields(provider, parseBody(body)) };
  }

  /**
   * Runs processing again; safe at any time, because the lifecycle decides. A delivery whose
   * processing is running right now (its row is locked) answers 409 rather than wait; two runs
   * never overlap. A final delivery that can still change (failed, unmatched, rejected) goes back to
   * `received`; a processed or ignored one is left as it is and the run finds nothing to do.
   */
  async reprocess(id: string): Promise<void> {
    await this.dataSource.transaction((em) => this.inbox.reopenForReplay(em, id));
    // Committed: a Redis that is away only delays the run (the sweeper enqueues the row).
    await this.inboxQueue.requeueAfterCommit([id], { expedite: true, trace: activeTraceparent() });
  }

  /**
   * Many deliveries run again, each as `reprocess` would (docs/operations.md#replaying-many-deliveries):
   * by ids, or by the archive's filter (at most REPROCESS_MAX_SELECTED selected, else nothing
   * changes). Opened again in one statement, enqueued in bulk after the commit. A delivery whose
   * processing is running right now is skipped, not waited for: that run decides it. Returns how
   * many were put on the queue.
   */
  async reprocessMany(request: ReprocessRequest): Promise<number> {
    const { ids, filter } = request;
    const hasIds = ids !== undefined && ids !== null;
    const hasFilter = filter !== undefined && filter !== null;
    if (hasIds && hasFilter) throw new ValidationFailed([{ field: 'filter', message: 'give either ids or filter, not both' }]);
    if (!hasIds && !hasFilter) throw new ValidationFailed([{ field: 'ids', message: 'give either ids or filter' }]);
    const queued = await this.dataSource.transaction(async (em) => {
      const selected = hasIds ? [...new Set(ids)] : await this.selectByFilter(em, filter!);
      return this.inbox.reopenManyForReplay(em, selected);
    });
    // Committed: a Redis that is away only delays the runs (the sweeper enqueues the rows).
    await this.inboxQueue.requeueAfterCommit(queued, { expedite: true, trace: activeTraceparent() });
    return queued.length;
  }

  private async selectByFilter(em: EntityManager, filter: ReprocessFilter): Promise<string[]> {
    const matching = archiveFilter(filter);
    const ids = await this.inbox.idsMatching(em, matching, REPROCESS_MAX_SELECTED + 1);
    if (ids.length <= REPROCESS_MAX_SELECTED) return ids;
    const selected = await this.inbox.countMatching(em, matching);
    throw new ValidationFailed([
      {
        field: 'filter',
        message: `the filter selects ${selected} deliveries; at most ${REPROCESS_MAX_SELECTED} may be reprocessed in one call`,
      },
    ]);
  }
}

function view(row: ArchivedDelivery): DeliveryView {
  return { ...row, receivedAt: row.receivedAt.toISOString(), processedAt: row.processedAt?.toISOString() ?? null };
}

/** Signature values never leave the database. */
function redact(provider: ProviderAdapter | undefined, headers: Record<string, string>): Record<string, string> {
  const secret = new Set(provider?.signatureHeaders ?? []);
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, secret.has(k) ? '[redacted]' : v]));
}

/** Signature values inside a stored body (the adapter's `signatureFields`) are not shown either. */
function redactFields(provider: ProviderAdapter | undefined, body: unknown): unknown {
  for (const path of provider?.signatureFields ?? []) {
    const names = path.split('.');
    let at: unknown = body;
    for (const name of names.slice(0, -1)) at = at && typeof at === 'object' && !Array.isArray(at) ? (at as Record<string, unknown>)[name] : undefined;
    const last = names[names.length - 1];
    if (at && typeof at === 'object' && !Array.isArray(at) && last in at) (at as Record<string, unknown>)[last] = '[redacted]';
  }
  return body;
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

/** The archive's filter from a query or a bulk reprocess's filter (the same fields; `from`/`to` on `receivedAt`). */
function archiveFilter(query: ReprocessFilter & { eventId?: string; resourceId?: string }): ArchiveFilter {
  return {
    status: query.status,
    endpointId: query.endpointId,
    provider: query.provider,
    eventType: query.eventType,
    eventId: query.eventId,
    resourceId: query.resourceId,
    receivedFrom: query.from ? new Date(query.from) : undefined,
    receivedBefore: query.to ? new Date(query.to) : undefined,
  };
}
