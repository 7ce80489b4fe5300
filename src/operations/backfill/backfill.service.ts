import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { isPrintableId, showUnprintable } from '../../common/printable';
import { JobProducer } from '../../jobs/job-producer';
import { JobName } from '../../jobs/queues';
import type { ResolvedOptions } from '../../config/options';
import { PW_CONNECTION } from '../../database/data-source';
import { exceedsJsonDepth, TOO_DEEP_DETAIL } from '../../common/json-depth';
import { PW_OPTIONS } from '../../config/tokens';
import { EndpointRegistry } from '../../webhooks/endpoint-registry';
import { InboxIngestService } from '../../webhooks/inbox-ingest.service';
import { InboxStore } from '../../webhooks/inbox.store';
import { asObject, HmacProvider, keyEvents, MalformedPayloadError } from '../../providers';
import type { ResolvedEndpoint } from '../../webhooks/signature-verifier';
import { WebhookError } from '../../webhooks/webhook.errors';
import type { BackfillRequest, BackfillStarted, BackfillView } from './backfill.dto';
import {
  AccountCursor,
  backfillUserAgent,
  createBackfill,
  failBackfill,
  findBackfill,
  finishBackfill,
  loadBackfill,
  runningBackfillIds,
  saveBackfillProgress,
} from './backfill.store';
import { DEFAULT_STRIPE_API, EventsApiError, StripeEventsClient } from './stripe-events';

/**
 * Backfill (docs/operations.md#backfill): walks Stripe's Events API page by page and records every
 * event through the receive path's own insert (InboxIngestService.record, source `backfill`), so it
 * is keyed, deduplicated and processed exactly as a webhook. Progress is saved per page, in one guarded
 * UPDATE (counts and cursor together), after the page's events are committed: a crash re-lists at
 * most the unfinished page, whose events are then found recorded. So that the counts stay those of
 * an uninterrupted run, a page's `accepted` is read from the inbox (rows of this backfill, by the
 * user agent it records them with), not from what record() answered this time. A listed event the
 * webhook route would answer with a 400 (an unusable id, a body too deep, …) is `refused`: counted
 * and skipped, and the walk goes on.
 */
@Injectable()
export class BackfillService {
  private readonly logger = new Logger('Backfill');

  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    private readonly jobs: JobProducer,
    private readonly registry: EndpointRegistry,
    private readonly ingest: InboxIngestService,
    private readonly inbox: InboxStore,
  ) {}

  async start(request: BackfillRequest): Promise<BackfillStarted> {
    const id = await createBackfill(this.dataSource, this.options.endpoints, request, Date.now());
    await this.enqueue(id);
    return { id, status: 'running' };
  }

  get(id: string): Promise<BackfillView> {
    return findBackfill(this.dataSource, id);
  }

  /** Best effort: a backfill left without its job is enqueued again by the sweep (BackfillProcessor). */
  async enqueue(id: string): Promise<void> {
    await this.jobs.add(JobName.RunBackfill, { backfillId: id }).catch((err: Error) => {
      this.logger.warn(`backfill ${id} recorded, not enqueued (the sweep will): ${err.message}`);
    });
  }

  /** Enqueues every running backfill again (a no-op for one whose job exists). */
  async sweep(): Promise<number> {
    const ids = await runningBackfillIds(this.dataSource);
    for (const id of ids) await this.enqueue(id);
    return ids.length;
  }

  /** Records that a backfill cannot go on; the reason is shown as its `error`. */
  async fail(id: string, reason: string): Promise<void> {
    await failBackfill(this.dataSource, id, reason);
    this.logger.warn(`backfill ${id} failed: ${reason}`);
  }

  /**
   * Walks what is left of a backfill, to its end. Throws on a database or Redis failure (the job is
   * retried and resumes from the saved cursor); an answer of the API that the client's retries did
   * not cure ends it `failed` with Stripe's message.
   */
  async run(id: string): Promise<void> {
    const row = await loadBackfill(this.dataSource, id);
    if (!row || row.status !== 'running') return;
    const definition = this.options.endpoints.find((e) => e.id === row.endpoint_id);
    const endpoint = this.registry.get(row.endpoint_id);
    if (!definition?.apiKey || !endpoint) {
      return this.fail(id, `endpoint ${row.endpoint_id} is no longer configured as a stripe endpoint with an apiKey`);
    }
    const client = new StripeEventsClient(definition.apiKey, definition.apiBaseUrl ?? DEFAULT_STRIPE_API);
    // Stripe's `created` is whole seconds: created ≥ since ⇔ created ≥ ⌈since⌉, likewise for until.
    const gte = Math.ceil(new Date(row.since).getTime() / 1000);
    const lt = Math.ceil(new Date(row.until).getTime() / 1000);
    const userAgent = backfillUserAgent(id);
    let cursors = row.cursors;

    for (let index = 0; index < row.accounts.length; index++) {
      const account = row.accounts[index];
      while (!cursors[index].done) {
        const cursor = cursors[index];
        let page;
        try {
          page = await client.page(gte, lt, cursor.startingAfter, account);
        } catch (err) {
          if (err instanceof EventsApiError) return this.fail(id, err.message);
          throw err;
        }
        // The head of this page the previous one already counted: events after its cursor whose ids
        // could not be the next cursor (see cursorId), listed again.
        let countedAlready = 0;
        while (countedAlready < (cursor.skip ?? 0) && countedAlready < page.events.length && cursorId(page.events[countedAlready]) === null) {
          countedAlready++;
        }
        const toRecord = page.events.slice(countedAlready);
        const outcomes = await Promise.all(toRecord.map((event) => this.recordListed(endpoint, event, account, userAgent)));
        const recorded: Array<{ merchantAccountId: string; eventId: string }> = [];
        outcomes.forEach((outcome, i) => {
          if ('recorded' in outcome) recorded.push(outcome.recorded);
          else this.logger.warn(`backfill ${id}: event ${shownId(toRecord[i])} refused (the webhook route would answer 400): ${outcome.refused}`);
        });
        const refused = toRecord.length - recorded.length;
        const accepted = await this.inbox.countRecordedByBackfill(this.dataSource, { provider: endpoint.provider.name, events: recorded, userAgent });
        const done = !page.hasMore || page.events.length === 0;
        // The next page starts after the last id that can be sent back and saved; the events listed
        // after it (refused: their ids are not printable) come first on that page and are not counted again.
        const lastCursor = page.events.findLastIndex((event) => cursorId(event) !== null);
        if (lastCursor < 0 && !done) {
          return this.fail(
            id,
            `the events API listed ${page.events.length} events in a row without an id the walk can continue after (printable text): it cannot go past them`,
          );
        }
        const afterLastCursor = page.events.length - 1 - lastCursor;
        const movedCursor: AccountCursor =
          lastCursor < 0
            ? { startingAfter: cursor.startingAfter, done }
            : { startingAfter: cursorId(page.events[lastCursor]), done, ...(!done && afterLastCursor > 0 ? { skip: afterLastCursor } : {}) };
        const nextCursors = cursors.map((c, i): AccountCursor => (i === index ? movedCursor : c));
        const saved = await saveBackfillProgress(this.dataSource, id, cursors, {
          cursors: nextCursors,
          listed: toRecord.length,
          accepted,
          duplicates: recorded.length - accepted,
          refused,
        });
        if (!saved) {
          this.logger.warn(`backfill ${id}: its progress moved elsewhere; this run stops`);
          return;
        }
        cursors = nextCursors;
      }
    }
    await finishBackfill(this.dataSource, id, cursors);
  }

  /**
   * Records one listed event through the webhook route's own checks, in its order: the depth limit,
   * a JSON object, the adapter's identify(), then the ingest (which refuses an event of a
   * multi-account endpoint that declares no account). What the route would answer 400 comes back
   * as refused, with its detail; anything else (the database or Redis away) is thrown, so the job
   * is retried.
   */
  private async recordListed(endpoint: ResolvedEndpoint, event: unknown, account: string | null, userAgent: string): Promise<ListedOutcome> {
    if (exceedsJsonDepth(event)) return { refused: TOO_DEEP_DETAIL };
    const envelope = asObject(event);
    if (!envelope) return { refused: 'the body is not a JSON object' };
    // A connected account's event says whose it is; should one not, it is that account's (we asked with its header).
    const body = account !== null && typeof envelope.account !== 'string' ? { ...envelope, account } : envelope;
    try {
      const identity = (endpoint.provider as HmacProvider).identify(body, {});
      // The account it is keyed on (refused, as on the route, when an endpoint of many has none).
      const [event] = keyEvents(endpoint, [{ ...identity, body: JSON.stringify(body) }]);
      await this.ingest.record(endpoint, [event], { 'user-agent': userAgent }, 'backfill');
      return { recorded: { merchantAccountId: event.merchantAccountId, eventId: event.eventId } };
    } catch (err) {
      if (err instanceof MalformedPayloadError) return { refused: err.detail };
      if (err instanceof WebhookError && err.code === 'malformed_payload') return { refused: err.detail ?? err.code };
      throw err;
    }
  }
}

/** A listed event recorded (accepted or duplicate: the inbox tells which), or refused with the route's 400 detail. */
type ListedOutcome = { recorded: { merchantAccountId: string; eventId: string } } | { refused: string };

/**
 * The event's id when it can be the walk's cursor: sent back as `starting_after` and saved in the
 * row. A printable id can; a NUL or a lone surrogate could be neither (jsonb refuses both, and no
 * URL can carry a lone surrogate), and such an event is refused anyway.
 */
function cursorId(event: unknown): string | null {
  const id = asObject(event)?.id;
  return isPrintableId(id) ? id : null;
}

/** A listed event's id as a log line can show it. */
function shownId(event: unknown): string {
  const id = asObject(event)?.id;
  return typeof id === 'string' ? JSON.stringify(showUnprintable(id)) : '(without an id)';
}
