import { context, trace } from '@opentelemetry/api';
import { hrTimeToMilliseconds } from '@opentelemetry/core';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { linksOf, parentOf, useInMemoryTracing } from '../../test/support/tracing';
import { activeTraceparent, ATTR, inActionSpan, spanClock, ProcessingSpan, requestParent, startDispatch, startReceipt, type ReceiptFacts } from './tracing';

/**
 * The module's spans against an SDK exporting to memory (no app, no database): how a `traceparent`
 * is read (W3C trace context: lowercase hex only, a version after 00 may append fields, version ff
 * and all-zero ids are invalid), what each span's parent and links are, and that start times taken
 * with spanClock() give spans that start before they end.
 */
const exporter = useInMemoryTracing();
beforeEach(() => exporter.reset());

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const FACTS: ReceiptFacts = { provider: 'stripe', endpointId: 'stripe-main', eventId: 'evt_1', merchantAccountId: 'acct_1', eventType: 'payment_intent.succeeded' };

/** The one finished span (fails on none or several). */
function onlySpan(): ReadableSpan {
  const spans = exporter.getFinishedSpans();
  expect(spans).toHaveLength(1);
  return spans[0];
}

/** The receipt span of a delivery sent with `traceparent` (no server span active). */
function receiptSentWith(traceparent: string | string[] | undefined): ReadableSpan {
  const receipt = startReceipt(requestParent(traceparent === undefined ? {} : { traceparent }), spanClock(), FACTS);
  expect(receipt).toBeDefined();
  receipt!.end('accepted');
  return onlySpan();
}

describe('a sent traceparent (requestParent, no server span)', () => {
  it('version 00, sampled: the receipt is its child, in its trace', () => {
    const span = receiptSentWith(`00-${TRACE}-${SPAN}-01`);
    expect(span.spanContext().traceId).toBe(TRACE);
    expect(parentOf(span)).toBe(SPAN);
    expect(span.parentSpanContext?.isRemote).toBe(true);
  });

  it('surrounding whitespace is trimmed', () => {
    const span = receiptSentWith(`  00-${TRACE}-${SPAN}-01 `);
    expect(parentOf(span)).toBe(SPAN);
    expect(span.spanContext().traceId).toBe(TRACE);
  });

  it("version 00, not sampled: the sender's decision holds (the SDK's parent-based sampler), no receipt span", () => {
    expect(startReceipt(requestParent({ traceparent: `00-${TRACE}-${SPAN}-00` }), spanClock(), FACTS)).toBeUndefined();
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it('a later version (01) may append fields: accepted, read as version 00', () => {
    const span = receiptSentWith(`01-${TRACE}-${SPAN}-01-what-comes-later`);
    expect(parentOf(span)).toBe(SPAN);
    expect(span.spanContext().traceId).toBe(TRACE);
  });

  it('a later version without extra fields: accepted', () => {
    expect(parentOf(receiptSentWith(`cc-${TRACE}-${SPAN}-01`))).toBe(SPAN);
  });

  const refused: Array<[string, string]> = [
    ['uppercase trace id', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['uppercase span id', `00-${TRACE}-${SPAN.toUpperCase()}-01`],
    ['uppercase version', `0A-${TRACE}-${SPAN}-01`],
    ['uppercase flags', `00-${TRACE}-${SPAN}-0A`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with an extra field', `00-${TRACE}-${SPAN}-01-extra`],
    ['version 00 with an empty extra field', `00-${TRACE}-${SPAN}-01-`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['an all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['a long span id', `00-${TRACE}-${SPAN}0-01`],
    ['a version of one digit', `0-${TRACE}-${SPAN}-01`],
    ['no flags', `00-${TRACE}-${SPAN}`],
    ['not hex', `00-${TRACE.slice(0, 31)}g-${SPAN}-01`],
    ['empty', ''],
  ];
  it.each(refused)('%s: ignored, the receipt opens a trace of its own', (_name, traceparent) => {
    const span = receiptSentWith(traceparent);
    expect(parentOf(span)).toBeUndefined();
    expect(span.spanContext().traceId).not.toBe(TRACE);
    expect(trace.isSpanContextValid(span.spanContext())).toBe(true);
  });

  it('a header sent twice (an array): ignored', () => {
    expect(parentOf(receiptSentWith([`00-${TRACE}-${SPAN}-01`, `00-${TRACE}-${SPAN}-01`]))).toBeUndefined();
  });

  it('no header: a trace of its own', () => {
    expect(parentOf(receiptSentWith(undefined))).toBeUndefined();
  });

  it('an active span (a server span) wins over the header', () => {
    const server = trace.getTracer('test').startSpan('server');
    const parent = context.with(trace.setSpan(context.active(), server), () => requestParent({ traceparent: `00-${TRACE}-${SPAN}-01` }));
    startReceipt(parent, spanClock(), FACTS)!.end('accepted');
    server.end();
    const [receipt] = exporter.getFinishedSpans().filter((s) => s.name === 'webhook receive stripe');
    expect(parentOf(receipt)).toBe(server.spanContext().spanId);
    expect(receipt.spanContext().traceId).toBe(server.spanContext().traceId);
  });
});

describe('the receipt span', () => {
  it('started with spanClock() before the work, it starts before it ends, at the wall-clock time', async () => {
    const before = Date.now();
    const startTime = spanClock();
    await new Promise((r) => setTimeout(r, 20));
    const receipt = startReceipt(requestParent({}), startTime, FACTS);
    receipt!.end('accepted');
    const after = Date.now();
    const span = onlySpan();
    const start = hrTimeToMilliseconds(span.startTime);
    const end = hrTimeToMilliseconds(span.endTime);
    expect(start).toBeLessThanOrEqual(end);
    expect(hrTimeToMilliseconds(span.duration)).toBeGreaterThanOrEqual(15);
    // The performance timestamp was anchored to the epoch: the span is where the test ran (a
    // little slack either way for the two clocks' rounding).
    expect(start).toBeGreaterThanOrEqual(before - 5);
    expect(end).toBeLessThanOrEqual(after + 5);
  });

  it('has identifiers and the outcome; an accepted or duplicate one is not an error, a refusal is', () => {
    startReceipt(requestParent({}), spanClock(), FACTS)!.end('duplicate');
    const ok = onlySpan();
    expect(ok.name).toBe('webhook receive stripe');
    expect(ok.attributes).toEqual({
      [ATTR.system]: 'payment_webhooks',
      [ATTR.operationType]: 'receive',
      [ATTR.operationName]: 'receive',
      [ATTR.destination]: 'stripe-main',
      [ATTR.provider]: 'stripe',
      [ATTR.messageId]: 'evt_1',
      [ATTR.account]: 'acct_1',
      [ATTR.eventType]: 'payment_intent.succeeded',
      [ATTR.outcome]: 'duplicate',
    });
    expect(ok.status.code).toBe(0);
    exporter.reset();
    startReceipt(requestParent({}), spanClock(), FACTS)!.end('invalid_signature');
    expect(onlySpan().status.code).toBe(2);
  });

  it('an empty merchant account id is no attribute', () => {
    startReceipt(requestParent({}), spanClock(), { ...FACTS, merchantAccountId: '' })!.end('accepted');
    expect(Object.keys(onlySpan().attributes)).not.toContain(ATTR.account);
  });

  it("its traceparent is the span's own, and reads back as its context", () => {
    const receipt = startReceipt(requestParent({}), spanClock(), FACTS)!;
    receipt.end('accepted');
    const span = onlySpan();
    expect(receipt.traceparent).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
  });
});

describe('the process span', () => {
  const RECEIPT = `00-${TRACE}-${SPAN}-01`;
  const row = { id: 'inbox-1', provider: 'paymos', endpointId: 'paymos-a', eventId: 'evt_2', merchantAccountId: 'acc_1', eventType: 'invoice.paid', traceContext: RECEIPT };

  it('without a trigger: the receipt is its parent and its link; starts before it ends', () => {
    const processing = ProcessingSpan.begin(undefined, 1)!;
    processing.rowLocked(row);
    processing.end('processed', 'applied');
    const span = onlySpan();
    expect(span.name).toBe('webhook process paymos');
    expect(parentOf(span)).toBe(SPAN);
    expect(span.spanContext().traceId).toBe(TRACE);
    expect(linksOf(span)).toEqual([SPAN]);
    expect(hrTimeToMilliseconds(span.startTime)).toBeLessThanOrEqual(hrTimeToMilliseconds(span.endTime));
    expect(span.attributes[ATTR.account]).toBe('acc_1');
    expect(span.attributes[ATTR.status]).toBe('processed');
  });

  it("with an operator's trigger: the trigger is its parent, the receipt still its link", () => {
    const operator = '11111111111111111111111111111111';
    const action = '2222222222222222';
    const processing = ProcessingSpan.begin(`00-${operator}-${action}-01`, 3)!;
    processing.rowLocked(row);
    processing.end('processed', 'applied');
    const span = onlySpan();
    expect(parentOf(span)).toBe(action);
    expect(span.spanContext().traceId).toBe(operator);
    expect(linksOf(span)).toEqual([SPAN]);
    expect(span.attributes[ATTR.attempt]).toBe(3);
  });

  it('an invalid trigger is ignored: the receipt is the parent', () => {
    const processing = ProcessingSpan.begin(`ff-${TRACE.replace('4', '5')}-${SPAN}-01`, 1)!;
    processing.rowLocked(row);
    processing.end('processed', 'applied');
    expect(parentOf(onlySpan())).toBe(SPAN);
  });

  it('an empty merchant account id is no attribute', () => {
    const processing = ProcessingSpan.begin(undefined, 1)!;
    processing.rowLocked({ ...row, merchantAccountId: '' });
    processing.end('processed', 'applied');
    expect(Object.keys(onlySpan().attributes)).not.toContain(ATTR.account);
  });
});

describe('the dispatch span', () => {
  const WRITER = `00-${TRACE}-${SPAN}-01`;

  it('without a trigger: the writer is its parent and its link', () => {
    startDispatch({ messageId: 'm-1', type: 'fulfillment.dispatch', attempt: 1, traceContext: WRITER })!.end('dispatched', false);
    const span = onlySpan();
    expect(span.name).toBe('outbox dispatch fulfillment.dispatch');
    expect(parentOf(span)).toBe(SPAN);
    expect(linksOf(span)).toEqual([SPAN]);
  });

  it("an operator's retry: its span is the parent, the writer still the link", async () => {
    // The job runs elsewhere, later: only the action's traceparent crosses (the job data's `trace`).
    const trigger = await inActionSpan('retry', async () => activeTraceparent());
    expect(trigger).not.toBeNull();
    startDispatch({ messageId: 'm-1', type: 'fulfillment.dispatch', attempt: 1, traceContext: WRITER, trigger: trigger! })!.end('dispatched', false);
    const [action] = exporter.getFinishedSpans().filter((s) => s.name === 'payment_webhooks retry');
    const [dispatch] = exporter.getFinishedSpans().filter((s) => s.name === 'outbox dispatch fulfillment.dispatch');
    expect(parentOf(dispatch)).toBe(action.spanContext().spanId);
    expect(dispatch.spanContext().traceId).toBe(action.spanContext().traceId);
    expect(linksOf(dispatch)).toEqual([SPAN]);
  });
});
