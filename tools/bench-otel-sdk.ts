/**
 * A `--require` preload for the benchmark's "tracing on" row: registers an OpenTelemetry SDK in the
 * service's process before the service loads, as a host would: a BasicTracerProvider with the
 * default BatchSpanProcessor (queue 2048, batches of 512, every 5 s) and an OTLP/HTTP (JSON) trace
 * exporter, the AsyncLocalStorage context manager and the W3C trace context propagator. No
 * instrumentation (http, pg, ioredis): the spans are the module's own. The exporter sends to
 * PW_BENCH_OTLP_TRACES_URL, the collector stub of tools/bench.ts (read here only, never by the
 * service).
 *
 *   PW_BENCH_OTLP_TRACES_URL=http://127.0.0.1:4318/v1/traces node --require dist/tools/bench-otel-sdk.js dist/src/main.js
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

const url = process.env.PW_BENCH_OTLP_TRACES_URL;
if (!url) {
  process.stderr.write('bench-otel-sdk: PW_BENCH_OTLP_TRACES_URL is not set\n');
  process.exit(2);
}

const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url }))] });
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
trace.setGlobalTracerProvider(provider);
