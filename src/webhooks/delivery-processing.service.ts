import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { PW_CONNECTION } from '../database/data-source';
import { runTransaction } from '../database/transaction';
import { MetricsService } from '../observability/metrics.service';
import { PaymentEventsService } from '../payments/payment-events.service';
import type { InboxStatus, ProcessingResult } from './inbox.state';
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


/** An error whose code becomes the delivery's `last_error` code and, at the end, its outcome. */
export function errorCode(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && /^[A-Za-z0-9_.]{1,64}$/.test(code) ? code : 'internal_error';
}

/**
 * Runs one delivery's processing transaction (ARCHITECTURE "Processing transaction"): lock the
 * row; a row already final does nothing; otherwise decide, apply and mark it, all or nothing.
 */
@Injectable()
export class DeliveryProcessingService {
  private readonly logger = new Logger('DeliveryProcessing');

  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly payments: PaymentEventsService,
    private readonly metrics: MetricsService,
  ) {}

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
    const rows: LockedDelivery[] = await em.query(
      `SELECT id, endpoint_id AS "endpointId", provider, merchant_account_id AS "merchantAccountId",
              event_id AS "eventId", event_type AS "eventType", resource_id AS "resourceId", body, status
         FROM webhook_inbox WHERE id = $1 FOR UPDATE`,
      [id],
    );
    return rows[0];
  }

  /** Normalises the recorded event, then hands it to the payment domain in this transaction. */
  private async decide(em: EntityManager, delivery: LockedDelivery, parkUnmatched: boolean): Promise<ProcessingResult> {
    const adapter = PROVIDERS[delivery.provider as ProviderName];
    const event = adapter?.normalize(JSON.parse(delivery.body) as Record<string, unknown>, delivery.eventType) ?? null;
    if (!event) return { status: 'ignored', outcome: 'no_handler' };
    return this.payments.apply(
      em,
      { eventId: delivery.eventId, provider: delivery.provider, merchantAccountId: delivery.merchantAccountId },
      event,
      parkUnmatched,
    );
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
