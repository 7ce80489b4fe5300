import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';

/**
 * The OpenTelemetry SDK as a host registers it, exporting to memory: a tracer provider, the async
 * context manager and the W3C propagator, global for the test file (Jest gives each file its own
 * globals). Returns the exporter the spans end in.
 *
 * Call it while Jest collects the file's tests (at the top of the file, or in a `describe` body),
 * not inside a test or a hook: it registers an `afterAll` that takes the three globals down again
 * once the file's (or that describe's) tests and their own `afterAll`s are done, so nothing
 * registered here outlives the suite in the worker.
 */
export function useInMemoryTracing(): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  afterAll(async () => {
    trace.disable();
    // Disables the context manager too.
    context.disable();
    propagation.disable();
    await provider.shutdown();
  });
  return exporter;
}

/** The finished spans named `name` (exactly, or by prefix with a trailing `*`). */
export function spansNamed(exporter: InMemorySpanExporter, name: string): ReadableSpan[] {
  const prefix = name.endsWith('*') ? name.slice(0, -1) : undefined;
  return exporter.getFinishedSpans().filter((s) => (prefix !== undefined ? s.name.startsWith(prefix) : s.name === name));
}

/** The spans whose attribute `key` is `value`. */
export function spansWith(exporter: InMemorySpanExporter, key: string, value: unknown): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((s) => s.attributes[key] === value);
}

/** A span's parent span id (SDK 2: `parentSpanContext`). */
export function parentOf(span: ReadableSpan): string | undefined {
  return span.parentSpanContext?.spanId;
}

/** The span ids a span links to. */
export function linksOf(span: ReadableSpan): string[] {
  return span.links.map((l) => l.context.spanId);
}
