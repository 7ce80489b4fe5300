import type { INestApplication, LoggerService, Type, DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ApiExceptionFilter } from './http/api-errors';
import type { HttpAdapterName } from './config/env';
import { configurePaymentWebhooksApp } from './configure-app';

/** The JSON body limit of the standalone service's API routes (the webhook route has its own). */
const JSON_LIMIT_BYTES = 1_048_576;

/**
 * Fastify answers a path parameter longer than its `maxParamLength` (100 by default) with its own
 * `414`, before any route runs; an endpoint id that long is simply unknown (`404 unknown_endpoint`).
 * A whole request line is already bounded by Node's header limit (16 KiB).
 */
export const FASTIFY_MAX_PARAM_LENGTH = 16_384;

/**
 * The standalone service's HTTP app on Express or Fastify (`HTTP_ADAPTER`): JSON bodies only (a
 * form post from another site never reaches a route), every error answered with a code, and the
 * module's webhook and docs handling. A host composes its own app instead and calls
 * configurePaymentWebhooksApp.
 */
export async function createStandaloneApp(
  module: Type | DynamicModule,
  platform: HttpAdapterName,
  logger?: LoggerService,
): Promise<INestApplication> {
  const adapter = platform === 'fastify' ? await fastifyAdapter() : undefined;
  // A failed start is reported by the caller in one line (abortOnError would exit from inside Nest).
  const options = { bodyParser: false, logger, abortOnError: false };
  const app = adapter ? await NestFactory.create(module, adapter, options) : await NestFactory.create(module, options);
  prepareStandaloneApp(app);
  return app;
}

/** Also what the test suites apply to their apps, so they run what the service runs. */
export function prepareStandaloneApp(app: INestApplication): void {
  configurePaymentWebhooksApp(app);
  if (app.getHttpAdapter().getType() === 'express') {
    // Fastify parses JSON itself (and nothing else, as the adapter is created with no body parser).
    (app as INestApplication & { useBodyParser(type: string, options: unknown): void }).useBodyParser('json', {
      limit: JSON_LIMIT_BYTES,
    });
  }
  // Errors no route saw (an unparseable body, an unknown path) get a code too.
  app.useGlobalFilters(new ApiExceptionFilter());
}

/** `@nestjs/platform-fastify` is an optional peer: loaded only when asked for. */
export async function fastifyAdapter(): Promise<import('@nestjs/platform-fastify').FastifyAdapter> {
  let platform: typeof import('@nestjs/platform-fastify');
  try {
    platform = await import('@nestjs/platform-fastify');
  } catch {
    throw new Error('HTTP_ADAPTER=fastify needs the @nestjs/platform-fastify package (npm install @nestjs/platform-fastify)');
  }
  return new platform.FastifyAdapter({ bodyLimit: JSON_LIMIT_BYTES, routerOptions: { maxParamLength: FASTIFY_MAX_PARAM_LENGTH } });
}
