// First: the OpenTelemetry SDK starts (when configured) before anything it instruments is loaded.
import './tracing.js';
import 'reflect-metadata';
import { INestApplication, Logger } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { configurePaymentWebhooksApp } from 'nestjs-payment-webhooks';
import { AppModule } from './app.module.js';

async function bootstrap(): Promise<void> {
  // Read before the app exists: it decides how the app is created.
  const platform = process.env.HTTP_PLATFORM ?? 'express';
  if (platform !== 'express' && platform !== 'fastify') throw new Error(`HTTP_PLATFORM must be express or fastify, not "${platform}"`);

  // Nest's default body parser stays on: the host's own JSON routes need it.
  // (On Fastify, the module's Swagger UI needs @fastify/static installed.)
  const app: INestApplication =
    platform === 'fastify' ? await NestFactory.create(AppModule, new FastifyAdapter()) : await NestFactory.create(AppModule);

  app.setGlobalPrefix('api');
  // Before listen(): keeps the webhook route's raw bytes away from the body parser (the signature
  // covers them) and mounts the module's Swagger UI at /api/payments/docs.
  configurePaymentWebhooksApp(app);
  // SIGTERM closes the app: in-flight requests, workers, queues and connections end cleanly.
  app.enableShutdownHooks();

  const port = Number(app.get(ConfigService).get<string>('PORT', '3000'));
  // Every interface (Fastify would listen on localhost only by default).
  await app.listen(port, '0.0.0.0');
  new Logger('HostApp').log(`listening on :${port} (${platform})`);
}

bootstrap().catch((err: unknown) => {
  console.error('host-app failed to start:', err);
  process.exit(1);
});
