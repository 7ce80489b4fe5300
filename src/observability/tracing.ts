import type * as Otel from '@opentelemetry/api';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * Traces through `@opentelemetry/api`, an optional peer: a host's SDK (or the standalone service's,
 * see otel-sdk.ts) makes them real; without the package, or with it and no SDK, every function here
 * returns at once and nothing is stored. docs/operations.md#traces lists every span and attribute.
 *
 * A span's context crosses the queue and the outbox as a W3C `traceparent` string kept on the row
 * (webhook_inbox.trace_context, outbox_message.trace_context), so a link survives a restart, a
 * retry on another worker and a replay. Attributes are identifiers and outcomes only: never a
 * secret, a signature, a body, a header or an address.
 */

/** The instrumentation scope of every span of the module. */
export const TRACER_NAME = 'nestjs-payment-webhooks';

/** Attribute names (messaging conventions, and the module's own under `payment_webhooks.`). */
export const ATTR = {
  system: 'messaging.system',
  destination: 'messaging.destination.name',
  messageId: 'messaging.message.id',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  provider: 'payment_webhooks.provider',
  account: 'payment_webhooks.merchant_account_id',
  eventType: 'payment_webhooks.event_type',
  /** The delivery's id in the archive (`GET /admin/webhook-deliveries/{id}`), not the provider's delivery id. */
  inboxId: 'payment_webhooks.inbox_id',
  outcome: 'payment_webhooks.outcome',
  status: 'payment_webhooks.status',
  attempt: 'payment_webhooks.attempt',
  outboxType: 'payment_webhooks.outbox.type',
} as const;

/** `messaging.system` of every span. */
export const MESSAGING_SYSTEM = 'payment_webhooks';

type Api = typeof Otel;
let api: Api | null | undefined;

/** The API package, loaded once; null when the host has not installed it. */
function otel(): Api | null {
  if (api === undefined) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      api = require('@opentelemetry/api') as Api;
    } catch {
      api = null;
    }
  }
  return api;
}

let tracerOf: Otel.Tracer | undefined;
function tracer(a: Api): Otel.Tracer {
  // A proxy: a host that registers its SDK after this module started still gets the spans.
  return (tracerOf ??= a.trace.getTracer(TRACER_NAME));
}

/**
 * A start time for a span begun earlier: a performance timestamp, which the SDK anchors to the
 * clock it ends spans on (an epoch time from the monotonic clock would drift from it).
 */
export function spanClock(): number {
  return performance.now();
}

/** A context to start spans in, opaque outside this file. */
export interface TraceParent {
  readonly ctx: unknown;
}

/** The context of a span recorded as a `traceparent`, or undefined for anything else. */
function contextOf(a: Api, traceparent: string | null | undefined): Otel.Context | undefined {
  if (!traceparent) return undefined;
  // W3C trace context: lowercase hex; a version after 00 may append fields, ff is invalid.
  const m = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/.exec(traceparent);
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, more] = m;
  if (version === 'ff' || (version === '00' && more !== undefined)) return undefined;
  const spanContext: Otel.SpanContext = { traceId, spanId, traceFlags: parseInt(flags, 16) & 1, isRemote: true };
  if (!a.trace.isSpanContextValid(spanContext)) return undefined;
  return a.trace.setSpanContext(a.ROOT_CONTEXT, spanContext);
}

function spanContextOf(a: Api, traceparent: string | null | undefined): Otel.SpanContext | undefined {
  const ctx = contextOf(a, traceparent);
  return ctx && a.trace.getSpanContext(ctx);
}

/** A span's context as a W3C `traceparent`. */
function traceparentOf(span: Otel.Span): string {
  const sc = span.spanContext();
  return `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags & 1}`;
}

/**
 * Runs `work` outside whatever span is active (as a job of a queue runs): work a request or a
 * transaction hands on, to run after it, belongs to the trace its rows name, not to the request's.
 */
export function detached<T>(work: () => T): T {
  const a = otel();
  return a ? a.context.with(a.ROOT_CONTEXT, work) : work();
}

/** The active span's `traceparent` (a worker's, an operator's request), or null when nothing is traced. */
export function activeTraceparent(): string | null {
  const a = otel();
  if (!a) return null;
  const span = a.trace.getActiveSpan();
  return span && span.isRecording() ? traceparentOf(span) : null;
}

/**
 * Where a delivery's receipt spans belong: under the active span (the server span of a host's or
 * the standalone service's HTTP instrumentation), else under the sender's own `traceparent`.
 */
export function requestParent(headers: IncomingHttpHeaders): TraceParent | undefined {
  const a = otel();
  if (!a) return undefined;
  const active = a.context.active();
  if (a.trace.getSpan(active)) return { ctx: active };
  const sent = headers.traceparent;
  const ctx = typeof sent === 'string' ? contextOf(a, sent.trim()) : undefined;
  return { ctx: ctx ?? active };
}

/** A receipt span of one event: its `traceparent` is stored with the event's row. */
export interface ReceiptSpan {
  readonly traceparent: string;
  end(outcome: string): void;
}

/** What a receipt span is about: identifiers only. */
export interface ReceiptFacts {
  provider: string;
  endpointId: string;
  eventId?: string;
  merchantAccountId?: string;
  eventType?: string;
}

function receiptAttributes(facts: ReceiptFacts): Otel.Attributes {
  const attributes: Otel.Attributes = {
    [ATTR.system]: MESSAGING_SYSTEM,
    [ATTR.operationType]: 'receive',
    [ATTR.operationName]: 'receive',
    [ATTR.destination]: facts.endpointId,
    [ATTR.provider]: facts.provider,
  };
  if (facts.eventId !== undefined) attributes[ATTR.messageId] = facts.eventId;
  if (facts.merchantAccountId) attributes[ATTR.account] = facts.merchantAccountId;
  if (facts.eventType !== undefined) attributes[ATTR.eventType] = facts.eventType;
  return attributes;
}

/**
 * Starts `webhook receive <provider>` for one event of a delivery (an Adyen delivery has one per
 * item), from the moment the delivery arrived; undefined when nothing records it.
 */
export function startReceipt(parent: TraceParent | undefined, startTime: number, facts: ReceiptFacts): ReceiptSpan | undefined {
  const a = otel();
  if (!a || !parent) return undefined;
  const span = tracer(a).startSpan(
    `webhook receive ${facts.provider}`,
    { kind: a.SpanKind.CONSUMER, startTime, attributes: receiptAttributes(facts) },
    parent.ctx as Otel.Context,
  );
  if (!span.isRecording()) return undefined;
  return {
    traceparent: traceparentOf(span),
    end(outcome: string) {
      span.setAttribute(ATTR.outcome, outcome);
      if (outcome !== 'accepted' && outcome !== 'duplicate') span.setStatus({ code: a.SpanStatusCode.ERROR });
      span.end();
    },
  };
}

/**
 * The receipt spans of a delivery's events (one, or a batch's). Without a span to start them under
 * (no server span, no `traceparent` sent), each would open a trace of its own: the later ones then
 * become children of the first, so that a batch stays one trace.
 */
export function startReceipts(parent: TraceParent | undefined, startTime: number, facts: readonly ReceiptFacts[]): Array<ReceiptSpan | undefined> {
  const a = otel();
  let under = parent;
  return facts.map((f) => {
    const receipt = startReceipt(under, startTime, f);
    if (a && receipt && under && !a.trace.getSpan(under.ctx as Otel.Context)) under = { ctx: contextOf(a, receipt.traceparent) };
    return receipt;
  });
}

/** A delivery refused before any event of it was recorded (unknown endpoint, bad signature, …): one receipt span, ended. */
export function refusedReceipt(parent: TraceParent | undefined, startTime: number, facts: ReceiptFacts, outcome: string): void {
  startReceipt(parent, startTime, facts)?.end(outcome);
}

/** What processing tells its span once the delivery's row is locked. */
export interface ProcessedRow {
  id: string;
  provider: string;
  endpointId: string;
  eventId: string;
  merchantAccountId: string;
  eventType: string;
  traceContext: string | null;
}

/**
 * The span of one processing attempt, `webhook process <provider>`: started once the worker has
 * read its row (the provider, and the receipt to link to, are on it), timed from when the worker
 * took the job. Its parent is what triggered the attempt (an operator's reprocess, a registration
 * that released it) or else the receipt, so a delivery stays one trace; it always links to the receipt.
 */
export class ProcessingSpan {
  private span: Otel.Span | undefined;
  private ctx: Otel.Context | undefined;

  private constructor(
    private readonly a: Api,
    private readonly startTime: number,
    private readonly trigger: string | undefined,
    private readonly attempt: number,
  ) {}

  /** Undefined when the API is not installed (so processing carries nothing). */
  static begin(trigger: string | undefined, attempt: number): ProcessingSpan | undefined {
    const a = otel();
    return a ? new ProcessingSpan(a, spanClock(), trigger, attempt) : undefined;
  }

  /** The row is locked: the span starts (once, however many transactions the attempt takes). */
  rowLocked(row: ProcessedRow): void {
    if (this.span) return;
    const { a } = this;
    const receipt = spanContextOf(a, row.traceContext);
    const parent = contextOf(a, this.trigger) ?? (receipt && a.trace.setSpanContext(a.ROOT_CONTEXT, receipt)) ?? a.ROOT_CONTEXT;
    const span = tracer(a).startSpan(
      `webhook process ${row.provider}`,
      {
        kind: a.SpanKind.CONSUMER,
        startTime: this.startTime,
        links: receipt ? [{ context: receipt }] : [],
        attributes: {
          [ATTR.system]: MESSAGING_SYSTEM,
          [ATTR.operationType]: 'process',
          [ATTR.operationName]: 'process',
          [ATTR.destination]: row.endpointId,
          [ATTR.messageId]: row.eventId,
          [ATTR.provider]: row.provider,
          [ATTR.eventType]: row.eventType,
          [ATTR.inboxId]: row.id,
          [ATTR.attempt]: this.attempt,
        },
      },
      parent,
    );
    if (!span.isRecording()) return;
    if (row.merchantAccountId) span.setAttribute(ATTR.account, row.merchantAccountId);
    this.span = span;
    this.ctx = a.trace.setSpan(a.context.active(), span);
  }

  /** Runs `fn` with this span active: what it writes (outbox messages) and runs (statements, calls) belongs to it. */
  within<T>(fn: () => T): T {
    return this.ctx ? this.a.context.with(this.ctx, fn) : fn();
  }

  /** The attempt ended: the delivery's status and outcome (or the failure's code). */
  end(status: string, outcome: string, failed = false): void {
    const span = this.span;
    if (!span) return;
    this.span = undefined;
    span.setAttributes({ [ATTR.status]: status, [ATTR.outcome]: outcome });
    if (failed || status === 'failed') span.setStatus({ code: this.a.SpanStatusCode.ERROR });
    span.end();
  }
}

/** What a dispatch span is about. */
export interface DispatchFacts {
  messageId: string;
  type: string;
  attempt: number;
  /** The `traceparent` of the span that wrote the message. */
  traceContext: string | null;
  /** The `traceparent` of an operator's retry that asked for the attempt: then the span's parent. */
  trigger?: string;
}

/** The span of one outbox attempt, `outbox dispatch <type>`. */
export interface DispatchSpan {
  within<T>(fn: () => T): T;
  end(outcome: string, failed: boolean): void;
}

/**
 * Starts `outbox dispatch <type>` for one attempt: a child of the span that wrote the message (so
 * the paid order's carrier call is in its delivery's trace), or of an operator's retry that asked
 * for it, and linked to the writer either way.
 */
export function startDispatch(facts: DispatchFacts): DispatchSpan | undefined {
  const a = otel();
  if (!a) return undefined;
  const writer = spanContextOf(a, facts.traceContext);
  const parent = contextOf(a, facts.trigger) ?? (writer ? a.trace.setSpanContext(a.ROOT_CONTEXT, writer) : a.ROOT_CONTEXT);
  const span = tracer(a).startSpan(
    `outbox dispatch ${facts.type}`,
    {
      kind: a.SpanKind.PRODUCER,
      links: writer ? [{ context: writer }] : [],
      attributes: {
        [ATTR.system]: MESSAGING_SYSTEM,
        [ATTR.operationType]: 'send',
        [ATTR.operationName]: 'dispatch',
        [ATTR.messageId]: facts.messageId,
        [ATTR.outboxType]: facts.type,
        [ATTR.attempt]: facts.attempt,
      },
    },
    parent,
  );
  if (!span.isRecording()) return undefined;
  const ctx = a.trace.setSpan(a.context.active(), span);
  return {
    within: (fn) => a.context.with(ctx, fn),
    end(outcome, failed) {
      span.setAttribute(ATTR.outcome, outcome);
      if (failed) span.setStatus({ code: a.SpanStatusCode.ERROR });
      span.end();
    },
  };
}

/**
 * Adds the active span's `traceparent` (and `tracestate`) to an outgoing call's headers, so a
 * carrier or sink that traces joins the trace. Through the registered propagator when there is
 * one; a no-op when nothing is traced.
 */
export function injectTraceparent(headers: Record<string, string>): void {
  const a = otel();
  if (!a) return;
  const span = a.trace.getActiveSpan();
  if (!span || !span.isRecording()) return;
  a.propagation.inject(a.context.active(), headers);
  if (headers.traceparent === undefined) headers.traceparent = traceparentOf(span);
}

/**
 * Runs an operator's action (mark-paid, reprocess, retry, backfill) in a span of its own,
 * `payment_webhooks <action>`, so what it triggers (processing, dispatches) links back to it.
 */
export async function inActionSpan<T>(action: string, fn: () => Promise<T>): Promise<T> {
  const a = otel();
  if (!a) return fn();
  const span = tracer(a).startSpan(`payment_webhooks ${action}`, { kind: a.SpanKind.INTERNAL, attributes: { [ATTR.system]: MESSAGING_SYSTEM } });
  if (!span.isRecording()) return fn();
  try {
    return await a.context.with(a.trace.setSpan(a.context.active(), span), fn);
  } catch (err) {
    span.setStatus({ code: a.SpanStatusCode.ERROR });
    throw err;
  } finally {
    span.end();
  }
}

/**
 * (v4) Runs a payment command's call to the provider in a span `payment command <type>`
 * (docs/operations.md#spans): a child of the active span (the outbox attempt, itself a child of the request
 * that wrote the message) and linked to that request. Attributes: provider, merchant account and
 * the outcome; never an amount's owner, a credential or a body.
 */
export async function inCommandSpan<T extends { ok: boolean }>(
  facts: { type: string; provider: string; merchantAccountId: string; traceContext: string | null },
  fn: () => Promise<T>,
): Promise<T> {
  const a = otel();
  if (!a) return fn();
  const writer = spanContextOf(a, facts.traceContext);
  const span = tracer(a).startSpan(`payment command ${facts.type}`, {
    kind: a.SpanKind.CLIENT,
    links: writer ? [{ context: writer }] : [],
    attributes: { [ATTR.system]: MESSAGING_SYSTEM, [ATTR.provider]: facts.provider, [ATTR.account]: facts.merchantAccountId },
  });
  if (!span.isRecording()) return fn();
  try {
    const result = await a.context.with(a.trace.setSpan(a.context.active(), span), fn);
    span.setAttribute(ATTR.outcome, result.ok ? 'accepted' : 'refused');
    if (!result.ok) span.setStatus({ code: a.SpanStatusCode.ERROR });
    return result;
  } catch (err) {
    span.setAttribute(ATTR.outcome, 'error');
    span.setStatus({ code: a.SpanStatusCode.ERROR });
    throw err;
  } finally {
    span.end();
  }
}
