/**
 * A `--require` preload for the benchmark's "tracing off" row: the service's own code runs as if
 * `@opentelemetry/api` were not installed. When a file outside node_modules (the module's code,
 * src/observability/tracing.ts) resolves it or any of its subpaths, resolution fails with
 * MODULE_NOT_FOUND, exactly as `require` fails when the package is absent, so tracing.ts takes its
 * "not installed" path. Packages keep their own copy: prom-client, a dependency of the module,
 * requires `@opentelemetry/api` itself (for exemplars), which is also why npm installs the API
 * with the module and "API, no SDK" is what an installation runs by default.
 *
 *   node --require dist/tools/bench-otel-absent.js dist/src/main.js
 */
import Module = require('node:module');

const HIDDEN = '@opentelemetry/api';

interface Resolver {
  _resolveFilename(request: string, parent: { filename?: string | null } | undefined, isMain: boolean, options?: unknown): string;
}
const resolver = Module as unknown as Resolver;
const resolve = resolver._resolveFilename;

resolver._resolveFilename = function (request, parent, isMain, options) {
  const fromPackage = /[\\/]node_modules[\\/]/.test(parent?.filename ?? '');
  if (!fromPackage && (request === HIDDEN || request.startsWith(`${HIDDEN}/`))) {
    const err = new Error(`Cannot find module '${request}' (hidden by tools/bench-otel-absent)`) as NodeJS.ErrnoException;
    err.code = 'MODULE_NOT_FOUND';
    throw err;
  }
  return resolve.call(this, request, parent, isMain, options);
};
