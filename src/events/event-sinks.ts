import { Inject, Injectable } from '@nestjs/common';
import type { KeyObject } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { PaymentEventType, AnyPaymentEvent } from '../common/host-events';
import type { ResolvedEventSink, ResolvedOptions } from '../config/options';
import { MetricsService } from '../observability/metrics.service';
import { discardAnswer } from '../common/bounded-answer';
import type { HandlerOutcome } from '../outbox/outbox.state';
import { PW_OPTIONS } from '../config/tokens';
import { SECRET_KEY_PREFIX, secretKeyOf, signV1a } from '../providers/standard-keys';
import { injectTraceparent } from '../observability/tracing';

interface Sink {
  name: string;
  url: string;
  types: readonly PaymentEventType[] | '*';
  timeoutMs: number;
  /** The `webhook-signature` of one attempt: `v1,<base64>` for a `whsec_` secret, `v1a,<base64>` for a `whsk_`. */
  sign(eventId: string, at: Date, body: string): string;
}

const RETRYABLE_STATUSES = new Set([408, 425, 429]);

/**
 * The HTTP sinks of EVENT_SINKS: each event POSTed to the sink's URL, signed as Standard Webhooks
 * with the sink's secret: a `whsec_` key signs `v1` (the `standardwebhooks` package signs, so what a
 * receiver verifies with it is what is sent), a `whsk_` private key signs `v1a` (ed25519, verified
 * with its `whpk_`; docs/events.md#over-http). `webhook-id` is the event's id on every attempt,
 * `webhook-timestamp` the attempt's time. Answers are read like a carrier's: 2xx done; a network
 * error, a timeout, 408, 425, 429 or 5xx retried; any other 4xx dead at once.
 */
@Injectable()
export class EventSinks {
  private readonly byName = new Map<string, Sink>();

  constructor(
    @Inject(PW_OPTIONS) options: ResolvedOptions,
    private readonly metrics: MetricsService,
  ) {
    for (const definition of options.eventSinks) this.byName.set(definition.name, sinkOf(definition));
  }

  all(): Sink[] {
    return [...this.byName.values()];
  }

  get(name: string): Sink | undefined {
    return this.byName.get(name);
  }

  async deliver(sink: Sink, event: AnyPaymentEvent): Promise<HandlerOutcome> {
    const body = JSON.stringify(event);
    const now = new Date();
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': 'nestjs-payment-webhooks',
      'webhook-id': event.id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': sink.sign(event.id, now, body),
    };
    // A sink that traces joins the trace of the change it hears of.
    injectTraceparent(headers);
    let response: Response;
    try {
      response = await fetch(sink.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(sink.timeoutMs), redirect: 'manual' });
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError';
      this.metrics.sinkCalls.labels(sink.name, timedOut ? 'timeout' : 'network').inc();
      return { kind: 'retry', reason: timedOut ? `sink ${sink.name}: no answer within ${sink.timeoutMs} ms` : `sink ${sink.name}: network error`, mayHaveHappened: true };
    }
    // The answer's body is not needed: not a byte of it is read (a sink cannot make this process
    // hold it), and cancelling it closes the connection rather than drain it.
    await discardAnswer(response);
    const status = response.status;
    this.metrics.sinkCalls.labels(sink.name, String(status)).inc();
    if (status >= 200 && status < 300) return { kind: 'done' };
    const reason = `sink ${sink.name} answered ${status}`;
    if (status >= 500 || RETRYABLE_STATUSES.has(status)) {
      return { kind: 'retry', reason, retryAfterMs: retryAfter(response.headers.get('retry-after')) };
    }
    if (status >= 300 && status < 400) return { kind: 'retry', reason: `${reason} (a redirect; check its url)` };
    return { kind: 'dead', reason };
  }
}

function sinkOf(definition: ResolvedEventSink): Sink {
  return {
    name: definition.name,
    url: definition.url,
    types: definition.types,
    timeoutMs: definition.timeoutMs,
    sign: signerOf(definition.secret),
  };
}

/** The key is decoded once, when the sink is made; each attempt signs with its own time. */
function signerOf(secret: string): Sink['sign'] {
  if (secret.startsWith(SECRET_KEY_PREFIX)) {
    const key: KeyObject = secretKeyOf(secret);
    return (eventId, at, body) => signV1a(key, `${eventId}.${Math.floor(at.getTime() / 1000)}.${body}`);
  }
  const webhook = new Webhook(secret);
  return (eventId, at, body) => webhook.sign(eventId, at, body);
}

/** `Retry-After` in seconds or as an HTTP date. */
function retryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
