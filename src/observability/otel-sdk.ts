import { existsSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import type { tracing } from '@opentelemetry/sdk-node';

/**
 * OpenTelemetry for the standalone service (src/main.ts), never for a host: nothing that
 * src/index.ts exports imports this file, and the module's own spans use `@opentelemetry/api`
 * only. When OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, the
 * OpenTelemetry Node SDK starts with an OTLP trace exporter (`http/protobuf` by default,
 * `http/json`), the `http`, `pg` and `ioredis` instrumentations and the W3C trace context
 * propagator. The SDK reads its other standard OTEL_* variables itself (headers, timeout, sampler,
 * batch sizes, resource attributes). See docs/configuration.md#traces.
 *
 * It has to start before `http`, `pg`, `ioredis` and Nest are loaded (an instrumentation patches a
 * package when it is required), so main.ts's first import is ./otel-start, which calls
 * startStandaloneTracing(). The SDK packages are optional: they load here with `require`, and
 * when one is missing the service says what to install and runs without tracing.
 */

/** The OTLP protocols the standalone service exports traces with. */
export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** The exporter package of each protocol. */
export const EXPORTER_PACKAGES: Record<OtlpProtocol, string> = {
  'http/protobuf': '@opentelemetry/exporter-trace-otlp-proto',
  'http/json': '@opentelemetry/exporter-trace-otlp-http',
};

/** What tracing needs besides the exporter. */
export const SDK_PACKAGES = [
  '@opentelemetry/api',
  '@opentelemetry/sdk-node',
  '@opentelemetry/instrumentation-http',
  '@opentelemetry/instrumentation-pg',
  '@opentelemetry/instrumentation-ioredis',
] as const;

export const DEFAULT_SERVICE_NAME = 'payment-webhooks';

/**
 * Span attributes that are personal data, never exported (no IP address or user agent in a
 * trace): the HTTP instrumentation's client address (also from X-Forwarded-For) and user agent,
 * under the stable and the older semantic conventions.
 */
export const PERSONAL_ATTRIBUTES = [
  'client.address',
  'network.peer.address',
  'net.peer.ip',
  'net.sock.peer.addr',
  'http.client_ip',
  'user_agent.original',
  'http.user_agent',
] as const;

/** `exporter`, exporting each span without its PERSONAL_ATTRIBUTES. */
export function withoutPersonalData(exporter: tracing.SpanExporter): tracing.SpanExporter {
  const strip = (span: tracing.ReadableSpan): tracing.ReadableSpan => {
    if (!PERSONAL_ATTRIBUTES.some((key) => key in span.attributes)) return span;
    const attributes = { ...span.attributes };
    for (const key of PERSONAL_ATTRIBUTES) delete attributes[key];
    // The span itself stays the prototype: its methods (spanContext()) and other fields are read through.
    return Object.create(span, { attributes: { value: attributes, enumerable: true } }) as tracing.ReadableSpan;
  };
  return {
    export: (spans, done) => exporter.export(spans.map(strip), done),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/** A bad OTEL_* value: one line naming the variable (the value may hold a credential). */
export class TracingConfigurationError extends Error {
  constructor(
    readonly variable: string,
    readonly problem: string,
  ) {
    super(`${variable}: ${problem}`);
    this.name = 'TracingConfigurationError';
  }
}

/** How the standalone service traces, read from the environment; null when tracing is off. */
export interface TracingSettings {
  /** The variable that turned tracing on. */
  endpointVariable: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' | 'OTEL_EXPORTER_OTLP_ENDPOINT';
  protocol: OtlpProtocol;
  /** The packages to load: the SDK's, then the exporter of the protocol. */
  packages: string[];
  /** The `service.name` to set, or undefined when OTEL_RESOURCE_ATTRIBUTES sets it. */
  serviceName: string | undefined;
  /** OTEL_PROPAGATORS is set: the SDK builds the propagators it names. */
  propagatorsFromEnv: boolean;
  /** ROUTE_PREFIX, for the probes that are not traced (isProbe). */
  routePrefix: string;
}

/** An environment value, or undefined when unset or blank (as the SDK reads them). */
function value(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name]?.trim();
  return v ? v : undefined;
}

/** Reads the OTEL_* variables the standalone service acts on. Throws TracingConfigurationError. */
export function readTracingSettings(env: NodeJS.ProcessEnv): TracingSettings | null {
  const endpointVariable = value(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')
    ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
    : value(env, 'OTEL_EXPORTER_OTLP_ENDPOINT')
      ? 'OTEL_EXPORTER_OTLP_ENDPOINT'
      : null;
  if (endpointVariable === null) return null;
  if (value(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return null;

  const exporters = value(env, 'OTEL_TRACES_EXPORTER')
    ?.split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  if (exporters?.includes('none')) return null;
  if (exporters && exporters.some((e) => e !== 'otlp')) {
    throw new TracingConfigurationError('OTEL_TRACES_EXPORTER', 'must be otlp or none (the standalone service exports traces over OTLP only)');
  }

  let url: URL | null = null;
  try {
    url = new URL(value(env, endpointVariable)!);
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new TracingConfigurationError(endpointVariable, 'must be an http:// or https:// URL');
  }

  const protocolVariable = value(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL')
    ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
    : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = value(env, protocolVariable) ?? 'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new TracingConfigurationError(protocolVariable, 'must be http/protobuf or http/json (the standalone service has no gRPC exporter)');
  }

  // OTEL_SERVICE_NAME wins; then a service.name in OTEL_RESOURCE_ATTRIBUTES; then ours.
  const resourceNamesService = /(^|,)\s*service\.name\s*=/.test(value(env, 'OTEL_RESOURCE_ATTRIBUTES') ?? '');
  const serviceName = value(env, 'OTEL_SERVICE_NAME') ?? (resourceNamesService ? undefined : DEFAULT_SERVICE_NAME);

  return {
    endpointVariable,
    protocol,
    packages: [...SDK_PACKAGES, EXPORTER_PACKAGES[protocol]],
    serviceName,
    propagatorsFromEnv: value(env, 'OTEL_PROPAGATORS') !== undefined,
    routePrefix: value(env, 'ROUTE_PREFIX') ?? '',
  };
}

/**
 * What to `npm install` for `name`: with the range this package was built and tested with (its
 * package.json's devDependencies: the SDK packages are not dependencies of it), else the name.
 */
export function installSpec(name: string): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; devDependencies?: Record<string, string> };
      if (pkg.name === 'nestjs-payment-webhooks') {
        const range = pkg.devDependencies?.[name];
        return range ? `${name}@${range}` : name;
      }
    } catch {
      // not here: one level up
    }
    if (dirname(dir) === dir) return name;
  }
}

/** The packages of `packages` that cannot be resolved from here. */
export function missingPackages(packages: readonly string[], resolve: (id: string) => string = require.resolve): string[] {
  return packages.filter((name) => {
    try {
      resolve(name);
      return false;
    } catch {
      return true;
    }
  });
}

/**
 * `GET /health`, `/health/ready` and `/metrics` (under ROUTE_PREFIX): probes and scrapes, not
 * traced. `routePrefix` as ROUTE_PREFIX is written (`pay`, `/pay/`, `/api/pay`).
 */
export function isProbe(method: string | undefined, url: string | undefined, routePrefix = ''): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  const prefix = routePrefix.trim().replace(/^\/+|\/+$/g, '');
  const path = (url ?? '').split('?')[0].replace(/\/+$/, '');
  const base = prefix ? `/${prefix}` : '';
  return path === `${base}/health` || path === `${base}/health/ready` || path === `${base}/metrics`;
}

/** A line for the service's log once its logger exists, about how tracing started. */
export interface TracingNote {
  level: 'info' | 'warn';
  message: string;
}

interface RunningSdk {
  shutdown(): Promise<void>;
}

let sdk: RunningSdk | null = null;
let note: TracingNote | null = null;
let stopping: Promise<void> | null = null;

/** How long a shutdown waits for the last spans to be exported (a container's stop allows ~10 s). */
const FLUSH_TIMEOUT_MS = 5_000;

/**
 * Starts the SDK when the environment asks for it (readTracingSettings). Throws
 * TracingConfigurationError on a bad value; a missing or failing SDK package leaves tracing off,
 * with a note saying why.
 */
export function startTracing(env: NodeJS.ProcessEnv = process.env): void {
  if (sdk) return;
  const settings = readTracingSettings(env);
  if (!settings) return;
  const missing = missingPackages(settings.packages);
  if (missing.length > 0) {
    note = {
      level: 'warn',
      message:
        `tracing is off: ${settings.endpointVariable} is set but the OpenTelemetry SDK is not installed; ` +
        `install it with: npm install ${missing.map(installSpec).join(' ')}`,
    };
    return;
  }
  try {
    /* eslint-disable @typescript-eslint/no-require-imports */
    const { NodeSDK, core } = require('@opentelemetry/sdk-node') as typeof import('@opentelemetry/sdk-node');
    const { OTLPTraceExporter } = require(EXPORTER_PACKAGES[settings.protocol]) as typeof import('@opentelemetry/exporter-trace-otlp-proto');
    const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
    const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');
    const { IORedisInstrumentation } = require('@opentelemetry/instrumentation-ioredis') as typeof import('@opentelemetry/instrumentation-ioredis');
    /* eslint-enable @typescript-eslint/no-require-imports */
    const started = new NodeSDK({
      serviceName: settings.serviceName,
      // The exporter reads its endpoint, headers, timeout and compression from OTEL_EXPORTER_OTLP_*.
      // Without the client's IP address and user agent (PERSONAL_ATTRIBUTES).
      traceExporter: withoutPersonalData(new OTLPTraceExporter()),
      // Traces only: the service's metrics are at /metrics (Prometheus), its logs on stdout.
      metricReaders: [],
      logRecordProcessors: [],
      textMapPropagator: settings.propagatorsFromEnv ? undefined : new core.W3CTraceContextPropagator(),
      instrumentations: [
        new HttpInstrumentation({
          ignoreIncomingRequestHook: (req) => isProbe(req.method, req.url, settings.routePrefix),
          // A request through node:http (a Mollie fetch) is a client span only inside a trace. The
          // carrier, sink and Stripe calls use global fetch (undici), not traced here: the module
          // sends their traceparent itself (docs/configuration.md#traces).
          requireParentforOutgoingSpans: true,
        }),
        // Statements and commands inside a trace only, not every poll of the workers.
        new PgInstrumentation({ requireParentSpan: true }),
        new IORedisInstrumentation({ requireParentSpan: true }),
      ],
    });
    started.start();
    sdk = started;
    flushOnSignals();
    note = {
      level: 'info',
      message: `tracing on: OpenTelemetry exports spans over OTLP (${settings.protocol}) as service ${settings.serviceName ?? 'named by OTEL_RESOURCE_ATTRIBUTES'}`,
    };
  } catch (err) {
    note = { level: 'warn', message: `tracing is off: the OpenTelemetry SDK failed to start (${(err as Error).message.split('\n')[0]})` };
  }
}

/** How tracing started (or why not), once; null when it was never asked for. */
export function takeTracingNote(): TracingNote | null {
  const n = note;
  note = null;
  return n;
}

/** Exports the spans still buffered and stops the SDK (at most FLUSH_TIMEOUT_MS). Never throws. */
export function shutdownTracing(): Promise<void> {
  if (!sdk) return Promise.resolve();
  stopping ??= Promise.race([
    sdk.shutdown().catch(() => undefined),
    new Promise<void>((resolve) => setTimeout(resolve, FLUSH_TIMEOUT_MS).unref()),
  ]);
  return stopping;
}

const FLUSH_SIGNALS: NodeJS.Signals[] = ['SIGTERM', 'SIGINT'];

/**
 * Spans are exported after the app has closed and before the process ends. Nest's shutdown hooks
 * (app.enableShutdownHooks) handle a signal by closing the app, then removing their listeners and
 * raising the signal again. This listener, registered before them, leaves a signal that another
 * listener handles to that listener, and acts once one of those listeners has gone (the signal
 * raised again after the close): it exports, removes itself and raises the signal once more, so
 * the process ends as it would without tracing. A signal nothing else handles (one during the
 * start, before the app exists) is acted on at once.
 */
function flushOnSignals(): void {
  // The other listeners of the first signal: the app's shutdown is over once one of them is gone.
  let appListeners: unknown[] | null = null;
  const others = (signals: NodeJS.Signals[]): unknown[] =>
    signals.flatMap((s): unknown[] => process.listeners(s)).filter((l) => l !== onSignal);
  const onSignal = (signal: NodeJS.Signals) => {
    if (appListeners === null) {
      const handling = others([signal]);
      if (handling.length > 0) {
        appListeners = handling;
        return;
      }
    } else {
      // Another signal while the app is still closing: the app ignores it, and so does this.
      const now = others(FLUSH_SIGNALS);
      if (appListeners.every((l) => now.includes(l))) return;
    }
    void shutdownTracing().then(() => {
      for (const s of FLUSH_SIGNALS) process.removeListener(s, onSignal);
      process.kill(process.pid, signal);
      // PID 1 in a container ignores a signal it does not handle: end as the signal would have.
      setTimeout(() => process.exit(128 + (constants.signals[signal] ?? 0)), 1_000);
    });
  };
  for (const s of FLUSH_SIGNALS) process.on(s, onSignal);
}

/**
 * The standalone service's start of tracing (main.ts's first import, through ./otel-start): reads
 * a local `.env` first, as main.ts does (the environment wins), so OTEL_* can be set there too. A
 * bad OTEL_* value stops the process as every configuration error does: one line, exit code 1.
 */
export function startStandaloneTracing(): void {
  try {
    if (existsSync('.env')) process.loadEnvFile('.env');
  } catch {
    // main.ts reads it again and reports what is wrong with it.
  }
  try {
    startTracing(process.env);
  } catch (err) {
    if (!(err instanceof TracingConfigurationError)) throw err;
    process.stderr.write(`Configuration error: ${err.message}\n`);
    process.exit(1);
  }
}
