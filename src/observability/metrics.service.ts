import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DataSource } from 'typeorm';
import { withTimeout } from '../common/with-timeout';
import { PW_CONNECTION } from '../database/data-source';

/**
 * The module's Prometheus metrics, in a registry of its own (a host's default registry is left
 * alone). Counters and histograms are per process; the backlog gauges are read from the database
 * at scrape time, so every process reports the same truth.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  /** Every answer of the receive path: accepted, duplicate, each 4xx reason, unavailable (503). */
  readonly deliveries = new Counter({
    name: 'pw_webhook_deliveries_total',
    help: 'Webhook deliveries by endpoint, provider and answer',
    labelNames: ['endpoint', 'provider', 'answer'] as const,
    registers: [this.registry],
  });

  /** Reads of a provider's API while processing (the object a Stripe thin notification names), by result. */
  readonly providerApiCalls = new Counter({
    name: 'pw_provider_api_calls_total',
    help: "Reads of a provider's API while processing, by provider and result (found, not_found, or the error code)",
    labelNames: ['provider', 'result'] as const,
    registers: [this.registry],
  });

  /** (v4) Polls of a provider about a payment whose webhook never came (docs/operations.md#when-webhooks-stop). */
  readonly paymentsPolled = new Counter({
    name: 'pw_payments_polled_total',
    help: 'Polls of a provider about a payment, by provider and result (changed: a new fact recorded; unchanged; error)',
    labelNames: ['provider', 'result'] as const,
    registers: [this.registry],
  });

  readonly providerApiDuration = new Histogram({
    name: 'pw_provider_api_duration_seconds',
    help: "Time of one read of a provider's API while processing, retries of the official client included",
    labelNames: ['provider'] as const,
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly receiveDuration = new Histogram({
    name: 'pw_webhook_receive_duration_seconds',
    help: 'Time to answer a webhook delivery',
    labelNames: ['answer'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  /** Which configured secret verified a delivery: when the old one of a rotation stops matching, it can go. */
  readonly secretMatches = new Counter({
    name: 'pw_webhook_secret_matches_total',
    help: 'Verified deliveries by endpoint and index of the configured secret that matched',
    labelNames: ['endpoint', 'secret_index'] as const,
    registers: [this.registry],
  });

  /**
   * When each configured secret last verified a delivery (unix seconds), labelled by its index,
   * never its value: a secret of a rotation that no sender uses any more can go.
   */
  readonly secretLastUsed = new Gauge({
    name: 'pw_webhook_secret_last_used_seconds',
    help: 'Unix time of the last delivery verified with each configured secret, by endpoint and index of the secret',
    labelNames: ['endpoint', 'secret_index'] as const,
    registers: [this.registry],
  });

  readonly processingOutcomes = new Counter({
    name: 'pw_processing_outcomes_total',
    help: 'Processing results by provider, delivery status and outcome',
    labelNames: ['provider', 'status', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly processingDuration = new Histogram({
    name: 'pw_processing_duration_seconds',
    help: 'Time of one processing transaction',
    labelNames: ['provider'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [this.registry],
  });

  /** Every attempt at an outbox message, by type (fulfillment.dispatch, event.order.paid…) and handler outcome. */
  readonly outboxAttempts = new Counter({
    name: 'pw_outbox_attempts_total',
    help: 'Outbox message attempts by message type and outcome (done, retry, dead)',
    labelNames: ['type', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly sinkCalls = new Counter({
    name: 'pw_event_sink_calls_total',
    help: 'Event deliveries to HTTP sinks by sink and answer (HTTP status, timeout, network)',
    labelNames: ['sink', 'status'] as const,
    registers: [this.registry],
  });

  readonly carrierCalls = new Counter({
    name: 'pw_carrier_calls_total',
    help: 'Carrier calls by carrier and status (HTTP status, timeout, network, adapter_error)',
    labelNames: ['carrier', 'status'] as const,
    registers: [this.registry],
  });

  readonly carrierDuration = new Histogram({
    name: 'pw_carrier_call_duration_seconds',
    help: 'Carrier call latency',
    labelNames: ['carrier'] as const,
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  // The DataSource is no longer read here (each store reads its own gauges, see readFromDatabase);
  // the parameter stays while callers construct the service with it.
  constructor(@InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource) {}

  /**
   * Gauges read at scrape time by the context that owns their table (a store registers them at
   * start): `read` answers every gauge of the group in one query, once per scrape. A database that
   * is away (or a read over 2 s) gives NaN, not a failed scrape: the other metrics matter most then.
   */
  readFromDatabase<G extends string>(gauges: Record<G, string>, read: () => Promise<Record<G, number>>): void {
    let snapshot: Promise<Record<G, number>> | undefined;
    const failed = Object.fromEntries(Object.keys(gauges).map((g) => [g, NaN])) as Record<G, number>;
    const current = () =>
      (snapshot ??= withTimeout(read(), 2_000, 'gauges')
        .catch(() => failed)
        .finally(() => setImmediate(() => (snapshot = undefined))));
    for (const [name, help] of Object.entries(gauges) as Array<[G, string]>) {
      new Gauge({
        name,
        help,
        registers: [this.registry],
        async collect() {
          this.set((await current())[name]);
        },
      });
    }
  }

  /**
   * One gauge with one label, read at scrape time likewise (`pw_endpoint_silent{endpoint}`): `read`
   * answers each label's value. A database that is away (or a read over 2 s) leaves the series
   * out of that scrape.
   */
  readLabelledFromDatabase(name: string, help: string, label: string, read: () => Promise<ReadonlyMap<string, number>>): void {
    new Gauge({
      name,
      help,
      labelNames: [label],
      registers: [this.registry],
      async collect() {
        const values = await withTimeout(read(), 2_000, name).catch(() => new Map<string, number>());
        this.reset();
        for (const [value, n] of values) this.labels(value).set(n);
      },
    });
  }
}
