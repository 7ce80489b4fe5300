// Rewrites package.json and package-lock.json in the current folder for the standalone service's
// runtime (the Docker image): the framework packages, peers of the package for a host, become
// dependencies of the service at the versions the lock holds, and dev dependencies go. Then
// `npm ci --omit=dev` installs exactly the locked tree the tests ran against, without the dev tools.
// The OpenTelemetry SDK packages the service loads when OTEL_EXPORTER_OTLP_ENDPOINT is set
// (src/observability/otel-sdk.ts: SDK_PACKAGES and EXPORTER_PACKAGES) are not peers of the package
// (a host brings its own SDK, of any line): they are dev dependencies, made dependencies here too.
// The image's build checks that every package of those lists is in it (docker/Dockerfile).
// Usage (in a copy of package.json + package-lock.json): node runtime-manifest.js
const { readFileSync, writeFileSync } = require('node:fs');

const TRACING_PACKAGES = [
  '@opentelemetry/api',
  '@opentelemetry/sdk-node',
  '@opentelemetry/exporter-trace-otlp-proto',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/instrumentation-http',
  '@opentelemetry/instrumentation-pg',
  '@opentelemetry/instrumentation-ioredis',
];

const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const root = lock.packages[''];
const dependencies = { ...pkg.dependencies };
for (const name of Object.keys(pkg.peerDependencies ?? {})) {
  const spec = pkg.devDependencies?.[name];
  if (!spec) throw new Error(`peer ${name} has no dev dependency to take its locked version from`);
  dependencies[name] = spec;
}
for (const name of TRACING_PACKAGES) {
  const spec = pkg.devDependencies?.[name];
  if (!spec) throw new Error(`tracing package ${name} has no dev dependency to take its locked version from`);
  dependencies[name] = spec;
}
pkg.dependencies = dependencies;
root.dependencies = dependencies;
delete pkg.peerDependencies;
delete pkg.peerDependenciesMeta;
delete root.peerDependencies;
delete root.peerDependenciesMeta;
delete pkg.devDependencies;
delete root.devDependencies;
writeFileSync('package.json', `${JSON.stringify(pkg, null, 2)}\n`);
writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);
