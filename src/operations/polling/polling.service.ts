import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { afterCommit } from '../../database/transaction';
import { TransactionEvents } from '../../outbox/transaction-events';
import type { PollEndpointRequestedEvent } from '../../common/internal-events';
import { PW_CONNECTION } from '../../database/data-source';
import type { ResolvedOptions } from '../../config/options';
import { Clock, CLOCK, PW_OPTIONS } from '../../config/tokens';
import { DomainError } from '../../common/domain-error';
import { JobProducer } from '../../jobs/job-producer';
import { JobName } from '../../jobs/queues';
import { MetricsService } from '../../observability/metrics.service';
import { inActionSpan } from '../../observability/tracing';
import { commandAmount, Money } from '../../payments/money';
import { keyEvents, type PaymentReader, type PaymentReading, ProviderApiError, RATE_LIMITED } from '../../providers';
import { EndpointRegistry } from '../../webhooks/endpoint-registry';
import { InboxIngestService } from '../../webhooks/inbox-ingest.service';
import type { ResolvedEndpoint } from '../../webhooks/signature-verifier';
import { PaymentCapturesStore } from '../../payments/payment-captures.store';
import { PaymentPollStore, PollCandidate, PollResult, PollScope } from '../../payments/payment-store';

/** At most this many calls to a provider's API per second, per endpoint (docs/operations.md#when-webhooks-stop). */
export const POLLS_PER_SECOND = 10;
/**
 * What the window keeps beyond a second between a call and the tenth after it: the provider counts
 * requests as they reach it, and two sent a second apart may reach it closer together.
 */
const WINDOW_MARGIN_MS = 250;
/** A run ends after this long (the next sweep starts another), so one endpoint's job never holds on for ever. */
const RUN_MAX_MS = 60_000;
/** The wait after a `429` that said no `Retry-After`; it doubles while the provider keeps refusing. */
const RATE_LIMITED_WAIT_MS = 2_000;
/** The longest pause a `429` makes (a longer `Retry-After` is cut to it). */
const MAX_PAUSE_MS = 15 * 60_000;
/** An operator's poll the provider did not answer is asked again this long after, while it has been claimed fewer than REQUEST_TRIES times. */
const REQUEST_RETRY_MS = 60_000;
const REQUEST_TRIES = 10;

/** An endpoint that can poll: its reader, the payments it polls, and the endpoint the inbox records with. */
interface PollingEndpoint {
  endpoint: ResolvedEndpoint;
  reader: PaymentReader;
  scope: PollScope;
}

/**
 * Polling (docs/operations.md#when-webhooks-stop): asks the provider about payments whose webhook
 * never came and records what it answers through the inbox, as a delivery of source `poll` keyed
 * on the business fact (`poll:<payment id>:<status>:<refunded>`), processed like any other. Each
 * endpoint polls in a job of its own (one at a time across every process: the job's id is the
 * endpoint's), at most POLLS_PER_SECOND calls a second, and waits when the provider answers `429`.
 * It runs on the workers, never on the receive path, and records on the operator surface's own pool.
 */
@Injectable()
export class PollingService implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('Polling');
  private readonly endpoints = new Map<string, PollingEndpoint>();
  /** Set when the application shuts down: a run ends at its next wait, its claimed payments asked at their next turn. */
  private readonly stopping = new AbortController();
  /** Each endpoint's run in this process, the next waiting for it. */
  private readonly running = new Map<string, Promise<void>>();

  constructor(
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    @Inject(CLOCK) private readonly clock: Clock,
    registry: EndpointRegistry,
    private readonly store: PaymentPollStore,
    private readonly captures: PaymentCapturesStore,
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    private readonly ingest: InboxIngestService,
    private readonly jobs: JobProducer,
    private readonly metrics: MetricsService,
    private readonly events: TransactionEvents,
  ) {
    // Each account's payments are polled by one endpoint: the first configured one of their provider
    // that serves the account and can read payments (the one that sends their commands too). A later
    // endpoint leaves out the accounts an earlier one took; after one of any account, it takes none.
    const taken = new Map<string, { all: boolean; accounts: Set<string> }>();
    for (const definition of options.endpoints) {
      const endpoint = registry.get(definition.id);
      const reader = endpoint?.provider.readPayment;
      if (!endpoint || !reader || !reader.ready(endpoint.settings)) continue;
      const provider = endpoint.provider.name;
      const before = taken.get(provider) ?? { all: false, accounts: new Set<string>() };
      taken.set(provider, before);
      if (before.all) continue;
      const own = endpoint.merchantAccountIds ?? [endpoint.merchantAccountId!];
      const scope: PollScope =
        own === '*'
          ? { provider, accounts: '*', excluded: [...before.accounts], afterSeconds: definition.pollAfterSeconds ?? null }
          : { provider, accounts: own.filter((a) => !before.accounts.has(a)), excluded: [], afterSeconds: definition.pollAfterSeconds ?? null };
      if (own === '*') before.all = true;
      else for (const account of own) before.accounts.add(account);
      if (scope.accounts !== '*' && scope.accounts.length === 0) continue;
      this.endpoints.set(endpoint.id, { endpoint, reader, scope });
    }
  }

  /** The endpoints that poll on their own schedule (`pollAfterSeconds`). */
  scheduledEndpoints(): string[] {
    return [...this.endpoints.values()].filter((e) => e.scope.afterSeconds !== null).map((e) => e.endpoint.id);
  }

  /** Starts a run of each scheduled endpoint (a no-op for one whose run is waiting or running). */
  async sweep(): Promise<void> {
    for (const id of this.scheduledEndpoints()) await this.enqueue(id);
  }

  /**
   * `POST /admin/payments/{id}/poll`: the payment is asked about at once (at its endpoint's pace).
   * 404 for no such payment; 422 `not_supported` when no endpoint of its provider and account can read it.
   */
  async pollNow(paymentId: string): Promise<void> {
    const payment = await this.store.paymentOf(paymentId);
    if (!payment) throw new DomainError('PAYMENT.NOT_FOUND', `payment ${paymentId} not found`);
    const polling = [...this.endpoints.values()].find((e) => e.scope.provider === payment.provider && serves(e.scope, payment.merchantAccountId));
    if (!polling) {
      const detail = `no ${payment.provider} endpoint of merchant account "${payment.merchantAccountId}" can read its payments (a provider with a status read, and API credentials)`;
      throw new DomainError('COMMAND.NOT_SUPPORTED', detail, detail);
    }
    await this.store.request(paymentId, this.clock.now());
    await this.enqueue(polling.endpoint.id);
  }

  onModuleInit(): void {
    // A provider said events of an endpoint may never come (Stripe's event_generation_failure):
    // decided in the transaction that records what it said.
    this.events.on(['internal.poll.endpoint-requested'], (event, em) => this.pollOpenPayments(event, em));
  }

  /**
   * Every open payment an endpoint can read is made due at once, in the caller's transaction; its run
   * is started once that commits. An endpoint that cannot poll (no status read, no credentials) is
   * left as it is, and says so.
   */
  private async pollOpenPayments(event: PollEndpointRequestedEvent, em: EntityManager): Promise<void> {
    const polling = this.endpoints.get(event.endpointId);
    if (!polling) {
      this.logger.warn(`endpoint "${event.endpointId}": ${event.reason}, but it cannot poll its payments (no status read, or no API credentials)`);
      return;
    }
    const count = await this.store.requestOpen(polling.scope, this.clock.now(), em);
    afterCommit(em, async () => {
      this.logger.warn(`endpoint "${event.endpointId}": ${count} open payments asked about now (${event.reason})`);
      await this.enqueue(event.endpointId);
    });
  }

  beforeApplicationShutdown(): void {
    this.stopping.abort();
  }

  /** Best effort: an endpoint not enqueued now is at the next sweep. */
  private async enqueue(endpointId: string): Promise<void> {
    await this.jobs.add(JobName.PollEndpoint, { endpointId }).catch((err: Error) => {
      this.logger.warn(`endpoint "${endpointId}": polling not enqueued (the next sweep will): ${err.message}`);
    });
  }

  /**
   * One run of an endpoint: claims its due payments a second's worth at a time and asks about each
   * in turn, at most POLLS_PER_SECOND calls in any second, until none is due or the run has lasted
   * RUN_MAX_MS. One call at a time: a `429` is seen before the next call, which then waits what the
   * provider asked (doubling when it said nothing, at most MAX_PAUSE_MS). The run ends only once its
   * pause is over and its last second of calls has passed: the job is the endpoint's one run across
   * every process, so the next run cannot start sooner, nor call more than the bound allows. Runs of
   * one endpoint in one process (the job's and a direct call) take turns.
   */
  async run(endpointId: string): Promise<void> {
    const polling = this.endpoints.get(endpointId);
    if (!polling) return;
    const previous = this.running.get(endpointId) ?? Promise.resolve();
    const turn = previous.then(() => this.runAlone(polling));
    const settled = turn.catch(() => undefined);
    this.running.set(endpointId, settled);
    try {
      await turn;
    } finally {
      if (this.running.get(endpointId) === settled) this.running.delete(endpointId);
    }
  }

  private async runAlone(polling: PollingEndpoint): Promise<void> {
    const started = Date.now();
    const limiter = new CallWindow(POLLS_PER_SECOND, 1_000 + WINDOW_MARGIN_MS);
    const pause = { untilMs: 0, waitMs: RATE_LIMITED_WAIT_MS };
    const onRateLimited = (retryAfterMs: number | null) => {
      pause.untilMs = Math.max(pause.untilMs, Date.now() + Math.min(retryAfterMs ?? pause.waitMs, MAX_PAUSE_MS));
      if (retryAfterMs === null) pause.waitMs = Math.min(pause.waitMs * 2, MAX_PAUSE_MS);
    };
    const stop = this.stopping.signal;
    try {
      while (!stop.aborted && Date.now() - started < RUN_MAX_MS) {
        const due = await this.store.claimDue(polling.scope, this.clock.now(), POLLS_PER_SECOND);
        if (due.length === 0) {
          // Nothing due: the run ends once its pause and its last second of calls are over, having
          // looked again then (what was asked for meanwhile found no other run to start).
          const holdMs = Math.max(pause.untilMs - Date.now(), limiter.clearsInMs());
          if (holdMs <= 0) return;
          await sleep(holdMs, stop);
          continue;
        }
        for (const candidate of due) {
          if (stop.aborted) return;
          const waitMs = pause.untilMs - Date.now();
          if (waitMs > 0) await sleep(waitMs, stop);
          await limiter.take(stop);
          if (stop.aborted) return;
          await this.pollOne(polling, candidate, onRateLimited);
        }
      }
    } finally {
      // Held until the provider's pause is over and the window of the last calls has passed.
      const holdMs = Math.max(pause.untilMs - Date.now(), limiter.clearsInMs());
      if (holdMs > 0) await sleep(holdMs, stop);
    }
  }

  /** Asks about one payment and records what the provider said; never throws but for the database. */
  private async pollOne(polling: PollingEndpoint, candidate: PollCandidate, onRateLimited: (retryAfterMs: number | null) => void): Promise<void> {
    const provider = polling.scope.provider;
    let result: PollResult;
    let notBefore: number | null = null;
    /** The provider gave no answer (as opposed to one that says it has no such payment). */
    let retried = false;
    await inActionSpan('poll', async () => {
      let reading: PaymentReading;
      try {
        reading = await polling.reader.read(
          {
            providerPaymentId: candidate.providerPaymentId,
            merchantAccountId: candidate.merchantAccountId,
            amount: commandAmount(Money.fromMinor(candidate.amountMinor, candidate.currency)),
            captureIds: await this.captures.capturesOf(this.dataSource, { provider, merchantAccountId: candidate.merchantAccountId, providerPaymentId: candidate.providerPaymentId }),
          },
          { endpoint: polling.endpoint.settings, timeoutMs: this.options.tuning.providerApiTimeoutMs },
        );
      } catch (err) {
        result = 'error';
        retried = true;
        const limited = err instanceof ProviderApiError && err.code === RATE_LIMITED;
        const retryAfterMs = err instanceof ProviderApiError ? err.retryAfterMs : null;
        if (limited || retryAfterMs !== null) {
          onRateLimited(retryAfterMs);
          if (retryAfterMs !== null) notBefore = this.clock.now() + retryAfterMs;
        }
        this.logger.warn(`endpoint "${polling.endpoint.id}": poll of payment ${candidate.paymentId} failed: ${describe(err)}`);
        return;
      }
      result = await this.record(polling, candidate, reading);
    });
    this.metrics.paymentsPolled.inc({ provider, result: result! });
    // An operator's poll the provider did not answer is asked again (an endpoint without a schedule has no next turn).
    const askAgainAt = result! === 'error' && retried && candidate.requested && candidate.polls < REQUEST_TRIES ? Math.max(notBefore ?? 0, this.clock.now() + REQUEST_RETRY_MS) : null;
    await this.store.recordResult(candidate.paymentId, result!, notBefore, askAgainAt);
  }

  /** What the provider answered, through the inbox: `changed` when it is a fact not recorded before. */
  private async record(polling: PollingEndpoint, candidate: PollCandidate, reading: PaymentReading): Promise<PollResult> {
    if (!reading.found) {
      this.logger.warn(`endpoint "${polling.endpoint.id}": the provider has no payment ${candidate.providerPaymentId} (payment ${candidate.paymentId})`);
      return 'error';
    }
    if (reading.event === null) return 'unchanged';
    let keyed;
    try {
      [keyed] = keyEvents(polling.endpoint, [
        {
          eventId: `poll:${candidate.providerPaymentId}:${reading.status}:${reading.refunded}`,
          eventType: reading.event.eventType,
          resourceId: candidate.providerPaymentId,
          deliveryId: null,
          account: candidate.merchantAccountId,
          apiVersion: null,
          body: JSON.stringify(reading.event.body),
        },
      ]);
    } catch (err) {
      // What the provider answered cannot be an event (an unprintable status): as if it had not answered.
      this.logger.warn(`endpoint "${polling.endpoint.id}": what the provider answered of payment ${candidate.paymentId} cannot be recorded: ${describe(err)}`);
      return 'error';
    }
    const [recorded] = await this.ingest.record(polling.endpoint, [keyed], { 'user-agent': 'payment-webhooks-poll' }, 'poll');
    return recorded.status === 'accepted' ? 'changed' : 'unchanged';
  }
}

function serves(scope: PollScope, account: string): boolean {
  return scope.accounts === '*' ? !scope.excluded.includes(account) : scope.accounts.includes(account);
}


function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Waits `ms`, or less when `stop` is aborted. */
function sleep(ms: number, stop: AbortSignal): Promise<void> {
  if (stop.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      stop.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    stop.addEventListener('abort', done);
  });
}

/** At most `max` calls in any window of `windowMs`: `take` waits for the oldest call in the window to leave it. */
class CallWindow {
  private readonly starts: number[] = [];
  constructor(
    private readonly max: number,
    private readonly windowMs: number,
  ) {}

  /** How long until no call of the window is in it any more. */
  clearsInMs(): number {
    const last = this.starts[this.starts.length - 1];
    return last === undefined ? 0 : Math.max(0, last + this.windowMs - Date.now());
  }

  async take(stop: AbortSignal): Promise<void> {
    while (!stop.aborted) {
      const now = Date.now();
      while (this.starts.length > 0 && now - this.starts[0] > this.windowMs) this.starts.shift();
      if (this.starts.length < this.max) {
        this.starts.push(now);
        return;
      }
      await sleep(this.starts[0] + this.windowMs + 1 - now, stop);
    }
  }
}
