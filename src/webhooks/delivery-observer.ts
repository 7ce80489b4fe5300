import { Inject, Injectable } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { rawRequest, rawResponse } from '../http/platform';
import { MetricsService } from '../observability/metrics.service';
import { CLOCK, Clock, PW_LOGGER, PW_RECEIVE_PRESSURE } from '../config/tokens';
import type { ReceivePressure } from '../jobs/receive-pressure';
import { spanClock, ReceiptSpan, refusedReceipt, requestParent, startReceipts, TraceParent } from '../observability/tracing';
import type { KeyedEvent } from '../providers';
import type { ResolvedEndpoint } from './signature-verifier';
import { countOf, EndpointTallies } from './endpoint-tallies';

/** What the receive path notes about a delivery as it goes (kept per Node request, on either platform). */
interface DeliveryNotes {
  eventId?: string;
  answer?: string;
}

/** What tracing keeps of a delivery between its arrival and its answer. */
interface TraceNotes {
  startedAt: number;
  parent: TraceParent | undefined;
  /** Receipt spans were started for its events: no refusal span at the end. */
  receipts: boolean;
}

/**
 * One log line and the metrics of each delivery, written when its answer has gone out: endpoint,
 * provider, event id, answer and duration. Never a header or a body (signatures, personal data).
 */
@Injectable()
export class DeliveryObserver {
  /** Delivery lines carry only the fields above, so the root logger's redaction (half the cost of a line) is skipped. */
  private readonly logger: Logger;
  /** The labelled counter and histogram per label set: looking labels up on every delivery costs more than the increment. */
  private readonly counters = new Map<string, { deliveries: { inc(): void }; duration: { observe(v: number): void } }>();
  private readonly notes = new WeakMap<IncomingMessage, DeliveryNotes>();
  private readonly traces = new WeakMap<IncomingMessage, TraceNotes>();

  constructor(
    private readonly metrics: MetricsService,
    @Inject(PW_LOGGER) logger: Logger,
    @Inject(PW_RECEIVE_PRESSURE) private readonly pressure: ReceivePressure,
    /** Endpoint health: a few increments per delivery, flushed to the database elsewhere (docs/operations.md#endpoint-health). */
    private readonly tallies: EndpointTallies,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {
    this.logger = logger.child({}, { redact: { paths: [] } });
  }

  /**
   * Starts observing a delivery: its line and metrics are written once its answer has gone out.
   * `configured`: the endpoint is one of the configuration's (its health is kept), not the label of an unknown one.
   */
  begin(req: unknown, res: unknown, endpoint: string, provider: string, configured = false): void {
    const started = process.hrtime.bigint();
    const request = rawRequest(req);
    if (this.notes.has(request)) return;
    const notes: DeliveryNotes = {};
    this.notes.set(request, notes);
    const trace: TraceNotes = { startedAt: spanClock(), parent: requestParent(request.headers), receipts: false };
    if (trace.parent) this.traces.set(request, trace);
    const response = rawResponse(res);
    // The workers of this process give way until the answer has gone (or the connection has).
    const endReceiving = this.pressure.receive();
    response.once('close', endReceiving);
    response.once('finish', () => {
      endReceiving();
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const answer = notes.answer ?? `http_${response.statusCode}`;
      // Refused before any event was recorded: the one receipt span says why.
      if (trace.parent && !trace.receipts) refusedReceipt(trace.parent, trace.startedAt, { provider, endpointId: endpoint, eventId: notes.eventId }, answer);
      const key = `${endpoint}\u0000${provider}\u0000${answer}`;
      let labelled = this.counters.get(key);
      if (!labelled) {
        labelled = {
          deliveries: this.metrics.deliveries.labels(endpoint, provider, answer),
          duration: this.metrics.receiveDuration.labels(answer),
        };
        this.counters.set(key, labelled);
      }
      labelled.deliveries.inc();
      labelled.duration.observe(seconds);
      if (configured) this.tallies.delivered(endpoint, countOf(answer, response.statusCode), this.clock.now());
      this.logger.info(
        { endpoint, provider, eventId: notes.eventId ?? null, answer, status: response.statusCode, durationMs: Math.round(seconds * 1e4) / 10 },
        'webhook delivery',
      );
    });
  }

  /** Notes what the delivery turned out to be (its event id, its answer) for its line and metrics. */
  note(req: unknown, what: DeliveryNotes): void {
    const notes = this.notes.get(rawRequest(req));
    if (notes) Object.assign(notes, what);
  }

  /**
   * Starts the receipt span of each event of an authentic delivery (one, or a batch's), from its
   * arrival; undefined for each event when nothing traces it.
   */
  startReceipts(req: unknown, endpoint: ResolvedEndpoint, events: readonly KeyedEvent[]): Array<ReceiptSpan | undefined> | undefined {
    const trace = this.traces.get(rawRequest(req));
    if (!trace) return undefined;
    trace.receipts = true;
    return startReceipts(
      trace.parent,
      trace.startedAt,
      events.map((event) => ({
        provider: endpoint.provider.name,
        endpointId: endpoint.id,
        eventId: event.eventId,
        merchantAccountId: event.merchantAccountId,
        eventType: event.eventType,
      })),
    );
  }

  /** A delivery verified with the endpoint's secret `secretIndex` at `nowMs` (rotation metrics, endpoint health). */
  secretMatched(endpoint: string, secretIndex: number, nowMs: number): void {
    const labels = [endpoint, String(secretIndex)];
    this.metrics.secretMatches.labels(...labels).inc();
    this.metrics.secretLastUsed.labels(...labels).set(Math.floor(nowMs / 1000));
    this.tallies.secretMatched(endpoint, secretIndex, nowMs);
  }
}
