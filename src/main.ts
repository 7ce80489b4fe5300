// First: OpenTelemetry starts (when OTEL_* asks for it) before http, pg, ioredis and Nest load.
import './observability/otel-start';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { existsSync } from 'node:fs';
import { AppModule } from './app.module';
import { loadStandaloneConfig, StandaloneConfig } from './config/env';
import { ConfigurationError } from './config/validate';
import { DEFAULT_TUNING } from './config/options';
import { applyServerLimits } from './http/server-limits';
import { createStandaloneApp } from './standalone';
import { createLogger, PinoNestLogger } from './observability/logger';
import { unsupportedNode } from './common/engine';
import { shutdownTracing, takeTracingNote } from './observability/otel-sdk';

function readConfig(): StandaloneConfig {
  try {
    // A local .env fills what the environment leaves unset (the environment wins).
    if (existsSync('.env')) process.loadEnvFile('.env');
    return loadStandaloneConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigurationError) {
      // One line, naming the variable; never the value.
      process.stderr.write(`Configuration error: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

async function bootstrap(): Promise<void> {
  const config = readConfig();
  const pino = createLogger();
  // How tracing started, or what to install for it (docs/configuration.md#traces).
  const tracing = takeTracingNote();
  if (tracing) pino[tracing.level](tracing.message);
  const module = await AppModule.register(config, pino);
  const nestLogger = new PinoNestLogger(pino);
  const logger = new Logger('Main');
  // A worker-only process has no app to configure: it says it here (configurePaymentWebhooksApp does for the others).
  const engine = config.runHttp ? null : unsupportedNode();
  if (engine) pino.warn(engine);
  if (config.runHttp) {
    const app = await createStandaloneApp(module, config.httpAdapter, nestLogger);
    app.enableShutdownHooks();
    // Request and header timeouts, keep-alive, a connection cap: before listening (Node reads its
    // checking interval then). See src/http/server-limits.ts.
    applyServerLimits(app.getHttpServer(), { ...DEFAULT_TUNING, ...config.options.tuning });
    // Every interface unless HOST names one (Fastify would listen on localhost only unless told).
    if (config.host !== undefined) await app.listen(config.port, config.host);
    else if (config.httpAdapter === 'fastify') await app.listen(config.port, '0.0.0.0');
    else await app.listen(config.port);
    const prefix = config.options.routePrefix;
    logger.log(
      `listening on ${config.host ?? ''}:${config.port} (${config.httpAdapter}) with ${config.options.endpoints.length} webhook endpoint(s) at ` +
        `${prefix}/webhooks/{id}; Swagger UI at ${prefix}/docs; workers ${config.options.runWorkers ? 'on' : 'off'}`,
    );
  } else {
    const app = await NestFactory.createApplicationContext(module, { logger: nestLogger, abortOnError: false });
    app.enableShutdownHooks();
    logger.log('worker-only process started');
  }
}

void bootstrap().catch(async (err: Error) => {
  process.stderr.write(`Start failed: ${err.message}\n`);
  // The spans of the failed start (a refused connection) are exported first.
  await shutdownTracing();
  process.exit(1);
});
