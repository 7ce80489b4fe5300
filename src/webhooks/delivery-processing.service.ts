import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { PW_CONNECTION } from '../database/data-source';
import { runTransaction } from '../database/transaction';
import { MetricsService } from '../observability/metrics.service';
import { DeliveryContext, ProviderEventsService } from '../payments/provider-events.service';
import type { ProviderEvent } from '../common/provider-event';
import { codeOf, DomainError } from '../common/domain-error';
import { ItemFailed, MicroBatcher } from '../common/micro-batcher';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS, PW_PROVIDERS } from '../config/tokens';
import type { ProcessingResult } from './inbox.state';
import { DeliveryToProcess, InboxStore } from './inbox.store';
import { deliveriesInProcess } from './delivery-reactions';
import type { ProviderAdapter } from '../providers';
import { EndpointRegistry } from './endpoint-registry';

export type { ProcessingResult } from './inbox.state';

/** The key a delivery's payment is locked by: a batch decides its deliveries in this order. */
function resourceOrder(d: DeliveryToProcess): string {
  return `${d.provider}\u0000${d.merchantAccountId}\u0000${d.resourceId ?? ''}`;
}

/**
 * A payment not registered yet: the delivery waits for its next attempt. Not a failure of its
 * batch (it wrote nothing), so the batch commits and only this delivery's attempt is recorded.
 */
class NotYet {
  constructor(readonly error: DomainError) {}
}

/** The code a delivery's error is recorded under (its `last_error`, and at the end its outcome). */
const codeOfFailure = (err: unknown): string => codeOf(err, 'internal_error');

/** A delivery for the processing batcher: what the queue's job says about its attempt. */
export interface ProcessingRequest {
  inboxId: string;
  finalAttempt: boolean;
  parkUnmatched: boolean;
}

/** A locked delivery of a batch, and what deciding it gave. */
interface Decided {
  delivery: DeliveryToProcess;
  result: ProcessingResult | NotYet;
}

/**
 * Runs deliveries' processing transactions (docs/design.md#the-processing-transaction): lock the
 * row; a row already final does nothing; otherwise decide, apply and mark it, all or nothing.
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
  private readonly batcher: MicroBatcher<ProcessingRequest, ProcessingResult | null>;
  /** Per multi-account endpoint, the accounts it serves: an event of any other is `account_mismatch`. */
  private readonly servedAccounts = new Map<string, string[] | '*'>();

  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly payments: ProviderEventsService,
    private readonly inbox: InboxStore,
    private readonly metrics: MetricsService,
    private readonly endpoints: EndpointRegistry,
    @Inject(PW_PROVIDERS) private readonly providers: ReadonlyMap<string, ProviderAdapter>,
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
  submit(request: ProcessingRequest): Promise<ProcessingResult | null> {
    return this.batcher.submit(request);
  }

  private async processBatch(requests: ProcessingRequest[]): Promise<Array<ProcessingResult | null | ItemFailed>> {
    const processAlone = (r: ProcessingRequest) =>
      this.process(r.inboxId, r.finalAttempt, r.parkUnmatched).catch((err: unknown) => new ItemFailed(err));
    if (requests.length === 1) return [await processAlone(requests[0])];
    const started = process.hrtime.bigint();
    let decided: Map<string, Decided>;
    try {
      decided = await runTransaction(this.dataSource, async (em) => {
        const rows = await this.inbox.lockForProcessing(em, requests.map((r) => r.inboxId));
        for (const row of rows) deliveriesInProcess.of(em).add(row.id);
        const inPaymentOrder = rows
          .filter((d) => d.status === 'received')
          .sort((a, b) => resourceOrder(a).localeCompare(resourceOrder(b)) || a.id.localeCompare(b.id));
        const parkUnmatched = new Map(requests.map((r) => [r.inboxId, r.parkUnmatched]));
        const byId = new Map<string, Decided>();
        const normalized = inPaymentOrder.map((delivery) => ({ delivery, event: this.normalize(delivery) }));
        // Every payment and order the batch may touch, locked up front in two statements.
        await this.payments.prefetch(
          em,
          normalized.flatMap(({ delivery, event }) => (event ? [{ ctx: this.contextOf(delivery), event }] : [])),
        );
        for (const { delivery, event } of normalized) {
          byId.set(delivery.id, { delivery, result: await this.decideOrWait(em, delivery, event, parkUnmatched.get(delivery.id) ?? false) });
        }
        await this.inbox.markFinished(
          em,
          [...byId.values()].filter((d): d is { delivery: DeliveryToProcess; result: ProcessingResult } => !(d.result instanceof NotYet)),
        );
        return byId;
      });
    } catch (err) {
      // One of them failed (or two batches met in a deadlock): nothing of the batch was kept, and
      // each delivery runs now on its own, so only the failing one fails.
      this.logger.debug?.(`a batch of ${requests.length} deliveries runs one by one: ${(err as Error)?.message ?? String(err)}`);
      return Promise.all(requests.map(processAlone));
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return Promise.all(
      requests.map(async (request) => {
        const entry = decided.get(request.inboxId);
        // A duplicate job, a replay of a finished delivery, or a row purged meanwhile: nothing to do.
        if (!entry) return null;
        if (entry.result instanceof NotYet) {
          await this.recordFailure(request.inboxId, entry.result.error, request.finalAttempt);
          this.metrics.processingOutcomes.labels(entry.delivery.provider, request.finalAttempt ? 'failed' : 'retrying', codeOfFailure(entry.result.error)).inc();
          return new ItemFailed(entry.result.error);
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
    delivery: DeliveryToProcess,
    event: ProviderEvent | null,
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
        const [delivery] = await this.inbox.lockForProcessing(em, [inboxId]);
        // A duplicate job, a replay of a finished delivery, or a row purged meanwhile: nothing to do.
        if (!delivery || delivery.status !== 'received') return null;
        deliveriesInProcess.of(em).add(delivery.id);
        provider = delivery.provider;
        const result = await this.decide(em, delivery, parkUnmatched);
        await this.inbox.markFinished(em, [{ delivery, result }]);
        return result;
      });
    } catch (err) {
      await this.recordFailure(inboxId, err, finalAttempt);
      this.metrics.processingOutcomes.labels(provider, finalAttempt ? 'failed' : 'retrying', codeOfFailure(err)).inc();
      throw err;
    }
    if (!result) return null;
    timer({ provider });
    this.metrics.processingOutcomes.labels(provider, result.status, result.outcome).inc();
    return result;
  }

  /** The recorded event in the payment domain's terms; null for a type or resource we do not act on. */
  private normalize(delivery: DeliveryToProcess): ProviderEvent | null {
    const adapter = this.providers.get(delivery.provider);
    const endpoint = this.endpoints.get(delivery.endpointId);
    // The endpoint as configured now (its `capture` mode, say); gone from the configuration, none.
    const settings = endpoint && endpoint.provider === adapter ? endpoint.settings : undefined;
    return adapter?.normalize(JSON.parse(delivery.body) as Record<string, unknown>, delivery.eventType, settings) ?? null;
  }

  /** The delivery's context: its row's key, and the accounts its endpoint serves when it serves many. */
  private contextOf(delivery: DeliveryToProcess): DeliveryContext {
    const ctx: DeliveryContext = { eventId: delivery.eventId, provider: delivery.provider, merchantAccountId: delivery.merchantAccountId };
    const servedAccounts = this.servedAccounts.get(delivery.endpointId);
    if (servedAccounts !== undefined) ctx.servedAccounts = servedAccounts;
    return ctx;
  }

  /** Hands the (normalised) event to the payment domain in this transaction. */
  private async decide(
    em: EntityManager,
    delivery: DeliveryToProcess,
    parkUnmatched: boolean,
    event: ProviderEvent | null = this.normalize(delivery),
  ): Promise<ProcessingResult> {
    if (!event) return { status: 'ignored', outcome: 'no_handler' };
    // Keyed in its endpoint's scope: the receive path found it of an account its endpoint does not
    // serve, which no reading of its body since (a normalize that declares no account) undoes.
    if (delivery.keyScope !== '') return { status: 'rejected', outcome: 'account_mismatch' };
    return this.payments.apply(em, this.contextOf(delivery), event, parkUnmatched);
  }

  /** In a short transaction of its own, since the processing one was rolled back. */
  private async recordFailure(inboxId: string, err: unknown, finalAttempt: boolean): Promise<void> {
    const code = codeOfFailure(err);
    const text = `${code}: ${(err as Error)?.message ?? String(err)}`.slice(0, 1_000);
    try {
      await this.inbox.recordFailure(this.dataSource, inboxId, { code, text }, finalAttempt);
    } catch (recordErr) {
      this.logger.warn(`could not record the failure of delivery ${inboxId}: ${(recordErr as Error).message}`);
    }
  }
}
