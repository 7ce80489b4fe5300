import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { PW_CONNECTION } from '../database/data-source';
import { runTransaction } from '../database/transaction';
import { MetricsService } from '../observability/metrics.service';
import { DeliveryContext, PaymentEventsService } from '../payments/payment-events.service';
import type { PaymentEvent } from '../payments/payment-event';
import { DomainError } from '../common/domain-error';
import { MicroBatcher } from '../common/micro-batcher';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS } from '../config/tokens';
import type { InboxStatus, ProcessingResult } from './inbox.state';
import { deliveriesInProcess } from './delivery-reactions';
import { PROVIDERS } from './providers';
import type { ProviderName } from '../config/options';

export type { ProcessingResult } from './inbox.state';

/** A delivery as the processing transaction reads it (locked). */
export interface LockedDelivery {
  id: string;
  endpointId: string;
  provider: string;
  merchantAccountId: string;
  eventId: string;
  eventType: string;
  resourceId: string | null;
  body: string;
  status: InboxStatus;
}


const LOCKED_COLUMNS = `id, endpoint_id AS "endpointId", provider, merchant_account_id AS "merchantAccountId",
  event_id AS "eventId", event_type AS "eventType", resource_id AS "resourceId", body, status`;

function contextOf(d: LockedDelivery, servedAccounts?: string[] | '*'): DeliveryContext {
  const ctx: DeliveryContext = { eventId: d.eventId, provider: d.provider, merchantAccountId: d.merchantAccountId };
  if (servedAccounts !== undefined) ctx.servedAccounts = servedAccounts;
  return ctx;
}

/** The key a delivery's payment is locked by: a batch decides its deliveries in this order. */
function resourceOrder(d: LockedDelivery): string {
  return `${d.provider}\u0000${d.merchantAccountId}\u0000${d.resourceId ?? ''}`;
}

/** A payment not registered yet: the delivery waits for its next attempt (nothing was written). */
class NotYet {
  constructor(readonly error: DomainError) {}
}

/** An error whose code becomes the delivery's `last_error` code and, at the end, its outcome. */
export function errorCode(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && /^[A-Za-z0-9_.]{1,64}$/.test(code) ? code : 'internal_error';
}

/** A delivery for the processing batcher: what the queue's job says about its attempt. */
export interface ProcessingRequest {
  inboxId: string;
  finalAttempt: boolean;
  parkUnmatched: boolean;
}

/** The error a delivery's processing ended in; thrown to the queue by `submit`, so it retries. */
class Failed {
  constructor(readonly error: unknown) {}
}

/**
 * Runs deliveries' processing transactions (ARCHITECTURE "Processing transaction"): lock the row;
 * a row already final does nothing; otherwise decide, apply and mark it, all or nothing.
 *
 * Deliveries the workers take at the same moment share one transaction (group commit: one
 * BEGIN/COMMIT, one lock and one update of their rows, one flush of the WAL), each decided in
 * turn, in the order of their payments' keys so two batches take their locks in the same order.
 * A delivery that fails never fails its batch-mates: the batch rolls back whole, and each of its
 * deliveries runs again at once in a transaction of its own, where only the failing one fails.
 */
@Injectable()
export class DeliveryProcessingService {
  private readonly logger = new Logger('DeliveryProcessing');
  private readonly batcher: MicroBatcher<ProcessingRequest, ProcessingResult | null | Failed>;
  /** Per multi-account endpoint, the accounts it serves: an event of any other is `account_mismatch`. */
  private readonly servedAccounts = new Map<string, string[] | '*'>();

  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly payments: PaymentEventsService,
    private readonly metrics: MetricsService,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
  ) {
    for (const e of options.endpoints) {
      if (e.merchantAccountIds !== undefined) this.servedAccounts.set(e.id, e.merchantAccountIds.includes('*') ? '*' : e.merchantAccountIds);
    }
    this.batcher = new MicroBatcher((requests) => this.processBatch(requests), {
      maxBatch: options.tuning.processingBatchSize,
      maxInFlight: options.tuning.processingBatchesInFlight,
    });
  }

  /** Processes a delivery, with any others submitted at the same moment; throws as `process` does. */
  async submit(request: ProcessingRequest): Promise<ProcessingResult | null> {
    const result = await this.batcher.submit(request);
    if (result instanceof Failed) throw result.error;
    return result;
  }

  private async processBatch(requests: ProcessingRequest[]): Promise<Array<ProcessingResult | null | Failed>> {
    const alone = (r: ProcessingRequest) => this.process(r.inboxId, r.finalAttempt, r.parkUnmatched).catch((err: unknown) => new Failed(err));
    if (requests.length === 1) return [await alone(requests[0])];
    const started = process.hrtime.bigint();
    let decided: Map<string, { delivery: LockedDelivery; result: ProcessingResult | NotYet }>;
    try {
      decided = await runTransaction(this.dataSource, async (em) => {
        const ids = requests.map((r) => r.inboxId);
        const rows: LockedDelivery[] = await em.query(`SELECT ${LOCKED_COLUMNS} FROM webhook_inbox WHERE id = ANY($1) ORDER BY id FOR UPDATE`, [ids]);
        for (const row of rows) deliveriesInProcess.of(em).add(row.id);
        const byResource = rows
          .filter((d) => d.status === 'received')
          .sort((a, b) => resourceOrder(a).localeCompare(resourceOrder(b)) || a.id.localeCompare(b.id));
        const park = new Map(requests.map((r) => [r.inboxId, r.parkUnmatched]));
        const out = new Map<string, { delivery: LockedDelivery; result: ProcessingResult | NotYet }>();
        const normalized = byResource.map((delivery) => ({ delivery, event: this.normalize(delivery) }));
        // Every payment and order the batch may touch, locked up front in two statements.
        await this.payments.prefetch(
          em,
          normalized.flatMap(({ delivery, event }) => (event ? [{ ctx: this.contextOf(delivery), event }] : [])),
        );
        for (const { delivery, event } of normalized) {
          out.set(delivery.id, { delivery, result: await this.decideOrWait(em, delivery, event, park.get(delivery.id) ?? false) });
        }
        const finished = [...out.values()].filter((d): d is { delivery: LockedDelivery; result: ProcessingResult } => !(d.result instanceof NotYet));
        if (finished.length > 0) {
          await em.query(
            `UPDATE webhook_inbox w
                SET status = r.status, outcome = r.outcome, processed_at = now(), attempts = w.attempts + 1, last_error = NULL
               FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, status text, outcome text)
              WHERE w.id = r.id`,
            [JSON.stringify(finished.map(({ delivery, result }) => ({ id: delivery.id, ...result })))],
          );
        }
        return out;
      });
    } catch (err) {
      // One of them failed (or two batches met in a deadlock): nothing of the batch was kept, and
      // each delivery runs now on its own, so only the failing one fails.
      this.logger.debug?.(`a batch of ${requests.length} deliveries runs one by one: ${(err as Error)?.message ?? String(err)}`);
      return Promise.all(requests.map(alone));
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return Promise.all(
      requests.map(async (request) => {
        const entry = decided.get(request.inboxId);
        // A duplicate job, a replay of a finished delivery, or a row purged meanwhile: nothing to do.
        if (!entry) return null;
        if (entry.result instanceof NotYet) {
          await this.recordFailure(request.inboxId, entry.result.error, request.finalAttempt);
          this.metrics.processingOutcomes.labels(entry.delivery.provider, request.finalAttempt ? 'failed' : 'retrying', errorCode(entry.result.error)).inc();
          return new Failed(entry.result.error);
        }
        this.metrics.processingOutcomes.labels(entry.delivery.provider, entry.result.status, entry.result.outcome).inc();
        this.metrics.processingDuration.labels(entry.delivery.provider).observe(seconds);
        return entry.result;
      }),
    );
  }

  /**
   * Decides, except that an event whose payment is not known yet (which wrote nothing) is not a
   * failure of the batch: its attempt is recorded after the commit, and the queue retries it.
   */
  private async decideOrWait(
    em: EntityManager,
    delivery: LockedDelivery,
    event: PaymentEvent | null,
    parkUnmatched: boolean,
  ): Promise<ProcessingResult | NotYet> {
    try {
      return await this.decide(em, delivery, parkUnmatched, event);
    } catch (err) {
      if (err instanceof DomainError && err.code === 'PAYMENT.NOT_FOUND_YET') return new NotYet(err);
      throw err;
    }
  }

  /**
   * Processes a delivery; throws (after recording the attempt) so the queue retries. An event whose
   * payment is unknown is retried until `parkUnmatched`, then parked `unmatched`.
   */
  async process(inboxId: string, finalAttempt: boolean, parkUnmatched = finalAttempt): Promise<ProcessingResult | null> {
    let result: ProcessingResult | null;
    let provider = 'unknown';
    const timer = this.metrics.processingDuration.startTimer();
    try {
      // Work the change asks for after its commit (deliveries released, put back on the queue) runs
      // once this transaction has committed.
      result = await runTransaction(this.dataSource, async (em) => {
        const delivery = await this.lock(em, inboxId);
        // A duplicate job, a replay of a finished delivery, or a row purged meanwhile: nothing to do.
        if (!delivery || delivery.status !== 'received') return null;
        deliveriesInProcess.of(em).add(delivery.id);
        provider = delivery.provider;
        const result = await this.decide(em, delivery, parkUnmatched);
        await em.query(
          `UPDATE webhook_inbox
              SET status = $2, outcome = $3, processed_at = now(), attempts = attempts + 1, last_error = NULL
            WHERE id = $1`,
          [inboxId, result.status, result.outcome],
        );
        return result;
      });
    } catch (err) {
      await this.recordFailure(inboxId, err, finalAttempt);
      this.metrics.processingOutcomes.labels(provider, finalAttempt ? 'failed' : 'retrying', errorCode(err)).inc();
      throw err;
    }
    if (!result) return null;
    timer({ provider });
    this.metrics.processingOutcomes.labels(provider, result.status, result.outcome).inc();
    return result;
  }

  private async lock(em: EntityManager, id: string): Promise<LockedDelivery | undefined> {
    const rows: LockedDelivery[] = await em.query(`SELECT ${LOCKED_COLUMNS} FROM webhook_inbox WHERE id = $1 FOR UPDATE`, [id]);
    return rows[0];
  }

  /** The recorded event in the payment domain's terms; null for a type or resource we do not act on. */
  private normalize(delivery: LockedDelivery): PaymentEvent | null {
    const adapter = PROVIDERS[delivery.provider as ProviderName];
    return adapter?.normalize(JSON.parse(delivery.body) as Record<string, unknown>, delivery.eventType) ?? null;
  }

  /** The delivery's context: its row's key, and the accounts its endpoint serves when it serves many. */
  private contextOf(delivery: LockedDelivery): DeliveryContext {
    return contextOf(delivery, this.servedAccounts.get(delivery.endpointId));
  }

  /** Hands the (normalised) event to the payment domain in this transaction. */
  private async decide(
    em: EntityManager,
    delivery: LockedDelivery,
    parkUnmatched: boolean,
    event: PaymentEvent | null = this.normalize(delivery),
  ): Promise<ProcessingResult> {
    if (!event) return { status: 'ignored', outcome: 'no_handler' };
    return this.payments.apply(em, this.contextOf(delivery), event, parkUnmatched);
  }

  /** In a short transaction of its own, since the processing one was rolled back. */
  private async recordFailure(inboxId: string, err: unknown, finalAttempt: boolean): Promise<void> {
    const code = errorCode(err);
    const message = `${code}: ${(err as Error)?.message ?? String(err)}`.slice(0, 1_000);
    try {
      await this.dataSource.query(
        `UPDATE webhook_inbox
            SET attempts = attempts + 1,
                last_error = $2,
                status = CASE WHEN $3 AND status = 'received' THEN 'failed' ELSE status END,
                outcome = CASE WHEN $3 AND status = 'received' THEN $4 ELSE outcome END
          WHERE id = $1`,
        [inboxId, message, finalAttempt, code],
      );
    } catch (recordErr) {
      this.logger.warn(`could not record the failure of delivery ${inboxId}: ${(recordErr as Error).message}`);
    }
  }
}
