import { isProbe, missingPackages, readTracingSettings, TracingConfigurationError } from './otel-sdk';

const ENDPOINT = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };

function problem(env: NodeJS.ProcessEnv): string {
  try {
    readTracingSettings(env);
  } catch (err) {
    if (err instanceof TracingConfigurationError) return err.message;
    throw err;
  }
  throw new Error('no configuration error');
}

describe('readTracingSettings', () => {
  it('is off without an OTLP endpoint, whatever else is set', () => {
    expect(readTracingSettings({})).toBeNull();
    expect(readTracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: '  ', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_SERVICE_NAME: 'x' })).toBeNull();
  });

  it('is on with either endpoint variable, http/protobuf by default, as payment-webhooks', () => {
    expect(readTracingSettings(ENDPOINT)).toEqual({
      endpointVariable: 'OTEL_EXPORTER_OTLP_ENDPOINT',
      protocol: 'http/protobuf',
      packages: [
        '@opentelemetry/api',
        '@opentelemetry/sdk-node',
        '@opentelemetry/instrumentation-http',
        '@opentelemetry/instrumentation-pg',
        '@opentelemetry/instrumentation-ioredis',
        '@opentelemetry/exporter-trace-otlp-proto',
      ],
      serviceName: 'payment-webhooks',
      propagatorsFromEnv: false,
      routePrefix: '',
    });
    expect(readTracingSettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector.example/v1/traces' })?.endpointVariable).toBe(
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    );
  });

  it('takes the traces protocol over the general one', () => {
    expect(readTracingSettings({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })?.packages.at(-1)).toBe('@opentelemetry/exporter-trace-otlp-http');
    const both = readTracingSettings({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' });
    expect(both?.protocol).toBe('http/json');
  });

  it('refuses a protocol it has no exporter for, naming the variable it came from', () => {
    expect(problem({ ...ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toBe(
      'OTEL_EXPORTER_OTLP_PROTOCOL: must be http/protobuf or http/json (the standalone service has no gRPC exporter)',
    );
    expect(problem({ ...ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/xml' })).toMatch(/^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: /);
  });

  it('refuses an endpoint that is not an http(s) URL, never quoting it', () => {
    const message = problem({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318?token=SECRET' });
    expect(message).toBe('OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:// or https:// URL');
    expect(problem({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'grpc://collector:4317' })).toMatch(/^OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: /);
  });

  it('is off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none; another exporter is refused', () => {
    expect(readTracingSettings({ ...ENDPOINT, OTEL_SDK_DISABLED: 'TRUE' })).toBeNull();
    expect(readTracingSettings({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
    expect(readTracingSettings({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'otlp' })).not.toBeNull();
    expect(problem({ ...ENDPOINT, OTEL_TRACES_EXPORTER: 'zipkin' })).toMatch(/^OTEL_TRACES_EXPORTER: must be otlp or none/);
  });

  it('names the service: OTEL_SERVICE_NAME, else a service.name in OTEL_RESOURCE_ATTRIBUTES (left to the SDK), else payment-webhooks', () => {
    expect(readTracingSettings({ ...ENDPOINT, OTEL_SERVICE_NAME: 'checkout', OTEL_RESOURCE_ATTRIBUTES: 'service.name=x' })?.serviceName).toBe('checkout');
    expect(readTracingSettings({ ...ENDPOINT, OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod, service.name=x' })?.serviceName).toBeUndefined();
    expect(readTracingSettings({ ...ENDPOINT, OTEL_RESOURCE_ATTRIBUTES: 'service.namespace=shop' })?.serviceName).toBe('payment-webhooks');
  });

  it('leaves the propagators to the SDK when OTEL_PROPAGATORS names them', () => {
    expect(readTracingSettings({ ...ENDPOINT, OTEL_PROPAGATORS: 'tracecontext,baggage' })?.propagatorsFromEnv).toBe(true);
  });
});

describe('missingPackages', () => {
  it('lists the packages that do not resolve', () => {
    const resolve = (id: string) => {
      if (id.endsWith('-pg')) throw new Error('not found');
      return id;
    };
    expect(missingPackages(['@opentelemetry/sdk-node', '@opentelemetry/instrumentation-pg'], resolve)).toEqual(['@opentelemetry/instrumentation-pg']);
    expect(missingPackages(['@opentelemetry/sdk-node'])).toEqual([]);
  });
});

describe('isProbe', () => {
  it('is a GET or HEAD of /health, /health/ready or /metrics under the route prefix', () => {
    expect(isProbe('GET', '/health')).toBe(true);
    expect(isProbe('GET', '/health/')).toBe(true);
    expect(isProbe('HEAD', '/health/ready?x=1')).toBe(true);
    expect(isProbe('GET', '/metrics')).toBe(true);
    expect(isProbe('GET', '/api/pay/metrics', '/api/pay/')).toBe(true);
    expect(isProbe('GET', '/pay/health/ready', 'pay')).toBe(true);
    expect(isProbe('GET', '/health', 'pay')).toBe(false);
    expect(isProbe('POST', '/health')).toBe(false);
    expect(isProbe('GET', '/orders/health')).toBe(false);
    expect(isProbe('GET', '/webhooks/metrics')).toBe(false);
  });
});
