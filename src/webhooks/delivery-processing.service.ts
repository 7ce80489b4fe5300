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
import { PW_OPTIONS, PW_PROVIDERS, PW_RECEIVE_PRESSURE } from '../config/tokens';
import type { ReceivePressure } from '../jobs/receive-pressure';
import type { ProcessingResult } from './inbox.state';
import { DeliveryToProcess, InboxStore } from './inbox.store';
import { deliveriesInProcess } from './delivery-reactions';
import { AdapterCallError, callAdapter, type FetchedState, type HealthAlert, type ProviderAdapter } from '../providers';
import { EndpointRegistry } from './endpoint-registry';
import type { ProcessingSpan } from '../observability/tracing';
import { uuid7Time } from '../common/uuid7';
import { EndpointHealthService } from './endpoint-health.service';

export type { ProcessingResult } from './inbox.state';

/** How long one processing transaction may hold a receiving process's one slot before others start beside it. */
const STALLED_MS = 200;

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

/**
 * A delivery that names its state without carrying it (a thin notification): it wrote nothing;
 * its state is read from the provider outside the transaction, and it is decided again with it.
 */
class NeedsFetch {
  constructor(readonly delivery: DeliveryToProcess) {}
}

/** A delivery's state as its provider's API answered it: absent where it carries its own. */
type FetchedStates = ReadonlyMap<string, FetchedState>;

/** The object a delivery names does not exist at its provider. */
const GONE = Symbol('gone');
type Reading = ProviderEvent | null | typeof GONE;

/**
 * A fetch's deadline: room for two calls of the provider's API, each bounded by the fetch's own
 * `timeoutMs` (a call and one retry, as Stripe's client makes), and this much besides for the wait
 * between them and reading the answers. The adapter's own error comes first; this bounds one that
 * never answers.
 */
const FETCH_DEADLINE_SLACK_MS = 5_000;
const fetchDeadlineMs = (providerApiTimeoutMs: number) => 2 * providerApiTimeoutMs + FETCH_DEADLINE_SLACK_MS;

/** The code a delivery's error is recorded under (its `last_error`, and at the end its outcome). */
const codeOfFailure = (err: unknown): string => codeOf(err, 'internal_error');

/** A delivery for the processing batcher: what the queue's job says about its attempt. */
export interface ProcessingRequest {
  inboxId: string;
  finalAttempt: boolean;
  parkUnmatched: boolean;
  /** The state its provider's API answered, once read (set by this service when it submits the delivery again). */
  state?: FetchedState;
  /** The attempt's span, when traced: started once the row is locked, active while it is decided. */
  trace?: ProcessingSpan;
}

/** A locked delivery of a batch, and what deciding it gave. */
interface Decided {
  delivery: DeliveryToProcess;
  result: ProcessingResult | NotYet | NeedsFetch;
  /** The payment's id where the row did not know it (a thin notification of a charge names it only in the object). */
  resourceId?: string;
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
 *
 * A delivery whose provider must be asked for the state it names (a Stripe thin notification) is
 * left alone by its first transaction, which answers its batch-mates at once; the provider's API
 * is then called outside any batch, with no transaction open and no row locked, and the delivery
 * is submitted again with what it answered, to be decided in a later batch.
 */
@Injectable()
export class DeliveryProcessingService {
  private readonly logger = new Logger('DeliveryProcessing');
  private readonly batcher: MicroBatcher<ProcessingRequest, ProcessingResult | NeedsFetch | null>;
  /** Per multi-account endpoint, the accounts it serves: an event of any other is `account_mismatch`. */
  private readonly servedAccounts = new Map<string, string[] | '*'>();
  private readonly providerApiTimeoutMs: number;
  /** Longest wait for an adapter's `normalize` or `wants` that returns a promise. */
  private readonly adapterTimeoutMs: number;
  /** Stored bodies already parsed, by the row object a lock returned (gone with it). */
  private readonly parsed = new WeakMap<DeliveryToProcess, Record<string, unknown>>();

  constructor(
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly payments: ProviderEventsService,
    private readonly inbox: InboxStore,
    private readonly metrics: MetricsService,
    private readonly endpoints: EndpointRegistry,
    private readonly health: EndpointHealthService,
    @Inject(PW_PROVIDERS) private readonly providers: ReadonlyMap<string, ProviderAdapter>,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
    @Inject(PW_RECEIVE_PRESSURE) pressure: ReceivePressure,
  ) {
    this.providerApiTimeoutMs = options.tuning.providerApiTimeoutMs;
    this.adapterTimeoutMs = options.tuning.adapterTimeoutMs;
    for (const e of options.endpoints) {
      if (e.merchantAccountIds !== undefined) this.servedAccounts.set(e.id, e.merchantAccountIds.includes('*') ? '*' : e.merchantAccountIds);
    }
    this.batcher = new MicroBatcher((requests) => this.processBatch(requests), {
      maxBatch: options.tuning.processingBatchSize,
      // Ingest before drain: a process that also receives webhooks runs one transaction at a time
      // (batches fill up to processingBatchSize instead, which costs less per delivery), so the HTTP
      // side keeps the event loop; a worker-only process runs as many as configured. Measured
      // (docs/benchmarks.md): new deliveries 1,140 -> 1,760-1,960/s at the same drain, one process
      // on 2 cores. A transaction that holds the one slot past STALLED_MS (a lock wait, a slow
      // in-transaction subscriber) no longer holds up the others: then the configured number run.
      maxInFlight: (oldestRunningMs) => (!pressure.receivesHere || oldestRunningMs > STALLED_MS ? options.tuning.processingBatchesInFlight : 1),
      recheckMs: STALLED_MS / 2,
    });
  }

  /**
   * Processes a delivery, with any others submitted at the same moment; throws as `process` does.
   * A delivery that needs its state read is read outside the batch, then submitted again with it.
   */
  async submit(request: ProcessingRequest): Promise<ProcessingResult | null> {
    const first = await this.batcher.submit(request);
    if (!(first instanceof NeedsFetch)) return first;
    const state = await this.traced(request.trace, () => this.fetchForAttempt(first.delivery, request.finalAttempt));
    const second = await this.batcher.submit({ ...request, state });
    // Submitted with its state, it never asks for it again.
    return second instanceof NeedsFetch ? null : second;
  }

  private async processBatch(requests: ProcessingRequest[]): Promise<Array<ProcessingResult | NeedsFetch | null | ItemFailed>> {
    const processAlone = (r: ProcessingRequest) =>
      this.processOnce(r.inboxId, r.finalAttempt, r.parkUnmatched, r.state, r.trace).catch((err: unknown) => new ItemFailed(err));
    const fetched: FetchedStates = new Map(requests.flatMap((r) => (r.state === undefined ? [] : [[r.inboxId, r.state] as const])));
    if (requests.length === 1) return [await processAlone(requests[0])];
    const started = process.hrtime.bigint();
    let decided: Map<string, Decided>;
    try {
      decided = await runTransaction(this.dataSource, async (em) => {
        const rows = await this.inbox.lockForProcessing(em, requests.map((r) => r.inboxId));
        const traces = new Map(requests.flatMap((r) => (r.trace ? [[r.inboxId, r.trace] as const] : [])));
        for (const row of rows) {
          deliveriesInProcess.of(em).add(row.id);
          // As alone: only a row still to process starts its span (a finished one's job does nothing).
          if (row.status === 'received') traces.get(row.id)?.rowLocked(row);
        }
        const inPaymentOrder = rows
          .filter((d) => d.status === 'received')
          .sort((a, b) => resourceOrder(a).localeCompare(resourceOrder(b)) || a.id.localeCompare(b.id));
        const parkUnmatched = new Map(requests.map((r) => [r.inboxId, r.parkUnmatched]));
        const byId = new Map<string, Decided>();
        const normalized: Array<{ delivery: DeliveryToProcess; event: Reading }> = [];
        for (const delivery of inPaymentOrder) {
          const state = fetched.get(delivery.id);
          if (state === undefined && (await this.wantsFetch(delivery))) byId.set(delivery.id, { delivery, result: new NeedsFetch(delivery) });
          else normalized.push({ delivery, event: await this.normalize(delivery, state) });
        }
        // Events that name a capture instead of their payment (PayPal refunds and disputes) are
        // decided after the others: a capture recorded by this very batch must be found for them,
        // or a refund would wait (or be parked) behind the capture that came with it.
        const namingCaptures = (r: { event: Reading }) => !!r.event && r.event !== GONE && r.event.resourceKind === 'capture';
        for (const phase of [normalized.filter((r) => !namingCaptures(r)), normalized.filter(namingCaptures)]) {
          if (phase.length === 0) continue;
          await this.aboutPayments(em, phase);
          // Every payment and order the phase may touch, locked up front in two statements.
          await this.payments.prefetch(
            em,
            phase.flatMap(({ delivery, event }) => (event && event !== GONE ? [{ ctx: this.contextOf(delivery), event }] : [])),
          );
          for (const { delivery, event } of phase) {
            byId.set(delivery.id, {
              delivery,
              result: await this.traced(traces.get(delivery.id), () => this.decideOrWait(em, delivery, event, parkUnmatched.get(delivery.id) ?? false)),
              ...learnedResource(delivery, event),
            });
          }
        }
        await this.inbox.markFinished(
          em,
          [...byId.values()].filter((d): d is Decided & { result: ProcessingResult } => !(d.result instanceof NotYet) && !(d.result instanceof NeedsFetch)),
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
        if (entry.result instanceof NeedsFetch) return entry.result;
        if (entry.result instanceof NotYet) {
          await this.recordFailure(request.inboxId, entry.result.error, request.finalAttempt, entry.resourceId);
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
    event: Reading,
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
  async process(inboxId: string, finalAttempt: boolean, parkUnmatched = finalAttempt, state?: FetchedState): Promise<ProcessingResult | null> {
    const first = await this.processOnce(inboxId, finalAttempt, parkUnmatched, state);
    if (!(first instanceof NeedsFetch)) return first;
    const second = await this.processOnce(inboxId, finalAttempt, parkUnmatched, await this.fetchForAttempt(first.delivery, finalAttempt));
    return second instanceof NeedsFetch ? null : second;
  }

  /** One transaction of `process`; a delivery whose state must be read first comes back as NeedsFetch, having written nothing. */
  private async processOnce(
    inboxId: string,
    finalAttempt: boolean,
    parkUnmatched: boolean,
    state: FetchedState | undefined,
    trace?: ProcessingSpan,
  ): Promise<ProcessingResult | NeedsFetch | null> {
    let result: ProcessingResult | NeedsFetch | null;
    let provider = 'unknown';
    let learned: string | undefined;
    const timer = this.metrics.processingDuration.startTimer();
    try {
      // Work the change asks for after its commit (deliveries released, put back on the queue) runs
      // once this transaction has committed.
      result = await runTransaction(this.dataSource, async (em) => {
        const [delivery] = await this.inbox.lockForProcessing(em, [inboxId]);
        // A duplicate job, a replay of a finished delivery, or a row purged meanwhile: nothing to do.
        if (!delivery || delivery.status !== 'received') return null;
        provider = delivery.provider;
        trace?.rowLocked(delivery);
        // Nothing written: the state is fetched once this transaction is over.
        if (state === undefined && (await this.wantsFetch(delivery))) return new NeedsFetch(delivery);
        deliveriesInProcess.of(em).add(delivery.id);
        const read: Array<{ delivery: DeliveryToProcess; event: Reading }> = [{ delivery, event: await this.normalize(delivery, state) }];
        await this.aboutPayments(em, read);
        const [{ event }] = read;
        const learnt = learnedResource(delivery, event);
        learned = learnt.resourceId;
        // Its statements from here on are the span's children (where the host traces pg).
        return this.traced(trace, async () => {
          const result = await this.decide(em, delivery, parkUnmatched, event);
          await this.inbox.markFinished(em, [{ delivery, result, ...learnt }]);
          return result;
        });
      });
    } catch (err) {
      await this.recordFailure(inboxId, err, finalAttempt, learned);
      this.metrics.processingOutcomes.labels(provider, finalAttempt ? 'failed' : 'retrying', codeOfFailure(err)).inc();
      throw err;
    }
    if (!result || result instanceof NeedsFetch) return result;
    timer({ provider });
    this.metrics.processingOutcomes.labels(provider, result.status, result.outcome).inc();
    return result;
  }

  /**
   * Events that name a capture instead of their payment (PayPal refunds and disputes), made about
   * the payment the capture was recorded for, in place; one statement for the batch.
   */
  private async aboutPayments(em: EntityManager, read: Array<{ delivery: DeliveryToProcess; event: Reading }>): Promise<void> {
    const events = read.flatMap((r, i) => (r.event && r.event !== GONE && r.event.resourceKind === 'capture' ? [{ i, ctx: this.contextOf(r.delivery), event: r.event }] : []));
    if (events.length === 0) return;
    const resolved = await this.payments.aboutPayments(em, events);
    events.forEach(({ i }, n) => {
      read[i].event = resolved[n];
    });
  }

  /** Runs `fn` in the attempt's span, when there is one. */
  private traced<T>(trace: ProcessingSpan | undefined, fn: () => T): T {
    return trace ? trace.within(fn) : fn();
  }

  /**
   * The recorded event in the payment domain's terms (read from the state its provider answered,
   * where it was fetched); null for a type or resource we do not act on, GONE when the object it
   * names does not exist. The adapter's answer is awaited within `adapterTimeoutMs` (a JavaScript
   * host may return a promise); a throw, a rejection, a timeout or a value that is neither an object
   * nor null fails this attempt (AdapterCallError), never the process.
   */
  private async normalize(delivery: DeliveryToProcess, state?: FetchedState): Promise<Reading> {
    if (state !== undefined && !state.found) return GONE;
    const adapter = this.providers.get(delivery.provider);
    if (!adapter) return null;
    const [body, eventType] = state !== undefined ? [state.body, state.eventType] : [this.bodyOf(delivery), delivery.eventType];
    const what = `provider "${adapter.name}" normalize`;
    const event: unknown = await callAdapter({
      what,
      timeoutMs: this.adapterTimeoutMs,
      call: () => adapter.normalize(body, eventType, this.settingsOf(delivery, adapter)),
    });
    if (event === null || event === undefined) return null;
    if (typeof event !== 'object') throw new AdapterCallError('provider_adapter_invalid', `${what} returned ${typeof event}, not an event object or null`);
    return event as ProviderEvent;
  }

  /**
   * The delivery's stored body, parsed once for all that reads it (whether it needs a fetch, the
   * fetch, normalize): a delivery of a provider that may fetch is asked before it is decided.
   */
  private bodyOf(delivery: DeliveryToProcess): Record<string, unknown> {
    let body = this.parsed.get(delivery);
    if (!body) this.parsed.set(delivery, (body = JSON.parse(delivery.body) as Record<string, unknown>));
    return body;
  }

  /** The delivery's endpoint as configured now (its `capture` mode, its API key); gone from the configuration, none. */
  private settingsOf(delivery: DeliveryToProcess, adapter: ProviderAdapter | undefined) {
    const endpoint = this.endpoints.get(delivery.endpointId);
    return endpoint && endpoint.provider === adapter ? endpoint.settings : undefined;
  }

  /**
   * Whether the delivery's state must be read from its provider before it is decided. Never for an
   * event of an account its endpoint does not serve: that one is rejected without a call made in
   * that account's name.
   */
  private async wantsFetch(delivery: DeliveryToProcess): Promise<boolean> {
    return delivery.keyScope === '' && (await this.namesState(delivery));
  }

  /**
   * Whether the delivery names a state its provider serves, which the service would act on: the
   * adapter's `wants`, awaited as `normalize` is; an answer other than true or false fails the attempt.
   */
  private async namesState(delivery: DeliveryToProcess): Promise<boolean> {
    const adapter = this.providers.get(delivery.provider);
    const fetcher = adapter?.fetchesState;
    if (adapter === undefined || fetcher === undefined) return false;
    const what = `provider "${adapter.name}" fetchesState.wants`;
    const wants: unknown = await callAdapter({
      what,
      timeoutMs: this.adapterTimeoutMs,
      call: () => fetcher.wants(this.bodyOf(delivery), delivery.eventType, this.settingsOf(delivery, adapter)),
    });
    if (typeof wants !== 'boolean') throw new AdapterCallError('provider_adapter_invalid', `${what} returned ${typeof wants}, not true or false`);
    return wants;
  }

  /**
   * Reads a delivery's state from its provider's API, with no transaction open. A failure is this
   * attempt's, recorded (and counted) as any processing failure, then thrown so the queue retries.
   */
  private async fetchForAttempt(delivery: DeliveryToProcess, finalAttempt: boolean): Promise<FetchedState> {
    const adapter = this.providers.get(delivery.provider)!;
    const timer = this.metrics.providerApiDuration.startTimer({ provider: delivery.provider });
    try {
      const what = `provider "${adapter.name}" fetchesState.fetch`;
      const state = fetchedState(
        what,
        await callAdapter({
          what,
          timeoutMs: fetchDeadlineMs(this.providerApiTimeoutMs),
          call: () => adapter.fetchesState!.fetch(this.bodyOf(delivery), delivery.eventType, this.settingsOf(delivery, adapter), { timeoutMs: this.providerApiTimeoutMs }),
          // What it throws is the attempt's failure as it is (its code, its retryAfterMs).
          passThrough: () => true,
        }),
      );
      this.metrics.providerApiCalls.labels(delivery.provider, state.found ? 'found' : 'not_found').inc();
      return state;
    } catch (err) {
      this.metrics.providerApiCalls.labels(delivery.provider, codeOfFailure(err)).inc();
      await this.recordFailure(delivery.id, err, finalAttempt);
      this.metrics.processingOutcomes.labels(delivery.provider, finalAttempt ? 'failed' : 'retrying', codeOfFailure(err)).inc();
      throw err;
    } finally {
      timer();
    }
  }


  /** The delivery's context: its row's key, and the accounts its endpoint serves when it serves many. */
  private contextOf(delivery: DeliveryToProcess): DeliveryContext {
    const ctx: DeliveryContext = { deliveryId: delivery.id, eventId: delivery.eventId, provider: delivery.provider, merchantAccountId: delivery.merchantAccountId };
    const servedAccounts = this.servedAccounts.get(delivery.endpointId);
    if (servedAccounts !== undefined) ctx.servedAccounts = servedAccounts;
    return ctx;
  }

  /** Hands the (normalised) event to the payment domain in this transaction. */
  private async decide(em: EntityManager, delivery: DeliveryToProcess, parkUnmatched: boolean, event: Reading): Promise<ProcessingResult> {
    // Keyed in its endpoint's scope: the receive path found it of an account its endpoint does not
    // serve, which no reading of its body since (a normalize that declares no account) undoes. A
    // notification of such an account was never fetched: what it names is what it would act on.
    const unserved = delivery.keyScope !== '';
    if (!event && !(unserved && (await this.namesState(delivery)))) {
      await this.recordHealthAlert(em, delivery);
      return { status: 'ignored', outcome: 'no_handler' };
    }
    if (unserved) return { status: 'rejected', outcome: 'account_mismatch' };
    if (!event) return { status: 'ignored', outcome: 'no_handler' };
    if (event === GONE) return { status: 'rejected', outcome: 'resource_not_found' };
    return this.payments.apply(em, this.contextOf(delivery), event, parkUnmatched);
  }

  /**
   * A provider's alert about its own health (its adapter's `healthAlert`: a Stripe thin
   * `v2.core.health.*`), kept with the endpoint's health in this transaction; one that says events
   * may be lost asks for a poll of the endpoint's open payments (docs/operations.md#endpoint-health).
   */
  private async recordHealthAlert(em: EntityManager, delivery: DeliveryToProcess): Promise<void> {
    const adapter = this.providers.get(delivery.provider);
    if (!adapter?.healthAlert) return;
    const what = `provider "${adapter.name}" healthAlert`;
    const alert = (await callAdapter({
      what,
      timeoutMs: this.adapterTimeoutMs,
      call: () => adapter.healthAlert!(this.bodyOf(delivery), delivery.eventType, this.settingsOf(delivery, adapter)),
    })) as HealthAlert | null | undefined;
    if (alert === null || alert === undefined) return;
    if (typeof alert !== 'object' || typeof alert.details !== 'object' || alert.details === null) {
      throw new AdapterCallError('provider_adapter_invalid', `${what} returned neither { details, eventsMayBeLost } nor null`);
    }
    await this.health.recordAlert(
      em,
      delivery.endpointId,
      // The delivery's id is a UUIDv7 made when it was received.
      { ...alert.details, type: delivery.eventType, eventId: delivery.eventId, receivedAt: new Date(uuid7Time(delivery.id)).toISOString() },
      alert.eventsMayBeLost === true,
    );
  }

  /** In a short transaction of its own, since the processing one was rolled back. */
  private async recordFailure(inboxId: string, err: unknown, finalAttempt: boolean, resourceId?: string): Promise<void> {
    const code = codeOfFailure(err);
    const text = `${code}: ${(err as Error)?.message ?? String(err)}`.slice(0, 1_000);
    try {
      await this.inbox.recordFailure(this.dataSource, inboxId, { code, text }, finalAttempt, resourceId);
    } catch (recordErr) {
      this.logger.warn(`could not record the failure of delivery ${inboxId}: ${(recordErr as Error).message}`);
    }
  }
}

/**
 * The payment id a decided event taught its row: one that had none (a thin notification of a charge
 * or a dispute), or one that named a capture and was found to be about that capture's payment
 * (`resourceKind` set to `payment` by the resolution), so that the archive, and the reopening of
 * refunds that came too early, find the row under its payment.
 */
function learnedResource(delivery: DeliveryToProcess, event: Reading): { resourceId?: string } {
  if (!event || event === GONE) return {};
  const resolvedFromCapture = event.resourceKind === 'payment' && event.resourceId !== delivery.resourceId;
  return delivery.resourceId === null || resolvedFromCapture ? { resourceId: event.resourceId } : {};
}

/** What a fetch answered, if the interface can take it: `{ found: false }`, or `{ found: true, body, eventType }`. */
function fetchedState(what: string, state: unknown): FetchedState {
  const found = (state as { found?: unknown } | null)?.found;
  if (found === false) return { found: false };
  if (found === true) {
    const { body, eventType } = state as { body: unknown; eventType: unknown };
    if (typeof body === 'object' && body !== null && !Array.isArray(body) && typeof eventType === 'string') {
      return { found: true, body: body as Record<string, unknown>, eventType };
    }
  }
  throw new AdapterCallError('provider_adapter_invalid', `${what} returned neither { found: false } nor { found: true, body, eventType }`);
}
