/**
 * The host's OpenTelemetry: the Node SDK with an OTLP/HTTP trace exporter and the `http`, `pg` and
 * `ioredis` instrumentations, started only when OTEL_EXPORTER_OTLP_ENDPOINT is set. The SDK reads
 * its other standard OTEL_* variables itself (OTEL_SERVICE_NAME, OTEL_EXPORTER_OTLP_HEADERS,
 * OTEL_BSP_SCHEDULE_DELAY, OTEL_TRACES_SAMPLER, ...).
 *
 * main.ts imports this file first. ES modules are evaluated in the order they are imported, so the
 * SDK has started (and its instrumentations hook `require`) before Nest, Express or Fastify,
 * TypeORM, BullMQ and the payment module are loaded: those are CommonJS packages that load `http`,
 * `pg` and `ioredis` with `require`, which the instrumentations patch. Do not use a top-level
 * `await` here: the imports after this one would not wait for it.
 *
 * The payment module's own spans (`webhook receive <provider>`, `webhook process <provider>`,
 * `outbox dispatch <type>`) go through `@opentelemetry/api`, so they are exported by whatever SDK
 * the host registers, instrumentations or not.
 */
import { NodeSDK } from '@opentelemetry/sdk-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';

/** Probes are not traced: they would be most of the traces. */
const PROBE = /^\/api\/(health|payments\/health(\/ready)?)\/?(\?|$)/;

function startTracing(): NodeSDK | undefined {
  if (!process.env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()) return undefined;
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME ?? 'host-app',
    // OTLP over HTTP with JSON bodies, to $OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces.
    traceExporter: new OTLPTraceExporter(),
    // Traces only: the SDK would otherwise also start OTLP metric and log exporters.
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({ ignoreIncomingRequestHook: (req) => PROBE.test(req.url ?? '') }),
      // Statements and commands inside a trace only, not every poll of the module's workers.
      new PgInstrumentation({ requireParentSpan: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
    ],
  });
  sdk.start();
  return sdk;
}

const sdk = startTracing();

/**
 * Exports the spans not yet sent and stops the SDK; AppModule calls it once the app has closed
 * (Nest's shutdown hooks, on SIGTERM). Resolves within `timeoutMs` whatever the collector does.
 */
export async function shutdownTracing(timeoutMs = 5_000): Promise<void> {
  if (!sdk) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    sdk.shutdown().catch((err: unknown) => console.error('tracing: the last spans were not exported:', err)),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
  ]);
  clearTimeout(timer);
}
