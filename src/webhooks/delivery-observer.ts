import { Inject, Injectable } from '@nestjs/common';
import type { Response } from 'express';
import type { Logger } from 'pino';
import { MetricsService } from '../observability/metrics.service';
import { PW_LOGGER } from '../payment-webhooks.constants';

/** What the receive path notes on `res.locals` as it goes. */
interface DeliveryNotes {
  pwEndpoint?: string;
  pwProvider?: string;
  pwEventId?: string;
  pwAnswer?: string;
}

/**
 * One log line and the metrics of each delivery, written when its answer has gone out: endpoint,
 * provider, event id, answer and duration. Never a header or a body (signatures, personal data).
 */
@Injectable()
export class DeliveryObserver {
  /** Delivery lines carry only the fields above, so the root logger's redaction (half the cost of a line) is skipped. */
  private readonly logger: Logger;
  /** Metric children per label set: looking labels up on every delivery costs more than the increment. */
  private readonly counters = new Map<string, { deliveries: { inc(): void }; duration: { observe(v: number): void } }>();

  constructor(
    private readonly metrics: MetricsService,
    @Inject(PW_LOGGER) logger: Logger,
  ) {
    this.logger = logger.child({}, { redact: { paths: [] } });
  }

  begin(res: Response, endpoint: string, provider: string): void {
    const started = process.hrtime.bigint();
    const notes = res.locals as DeliveryNotes;
    notes.pwEndpoint = endpoint;
    notes.pwProvider = provider;
    res.once('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const answer = notes.pwAnswer ?? `http_${res.statusCode}`;
      const key = `${endpoint}\u0000${provider}\u0000${answer}`;
      let children = this.counters.get(key);
      if (!children) {
        children = {
          deliveries: this.metrics.deliveries.labels(endpoint, provider, answer),
          duration: this.metrics.receiveDuration.labels(answer),
        };
        this.counters.set(key, children);
      }
      children.deliveries.inc();
      children.duration.observe(seconds);
      this.logger.info(
        { endpoint, provider, eventId: notes.pwEventId ?? null, answer, status: res.statusCode, durationMs: Math.round(seconds * 1e4) / 10 },
        'webhook delivery',
      );
    });
  }

  secretMatched(endpoint: string, secretIndex: number): void {
    this.metrics.secretMatches.labels(endpoint, String(secretIndex)).inc();
  }
}
