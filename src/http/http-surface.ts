import { Inject, Injectable, Logger, OnModuleInit, type INestApplication, type Type } from '@nestjs/common';
import { ApplicationConfig } from '@nestjs/core';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { createRequire } from 'node:module';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS } from '../payment-webhooks.constants';
import { joinPaths } from './route-prefix';

/** The paths of the module inside the app: what the request hooks of configurePaymentWebhooksApp match. */
export interface ModulePaths {
  /** Global prefix + route prefix: `''` or `/api/pay`. */
  base: string;
  webhooks: string;
  docs: string;
  docsJson: string;
}

/**
 * Where the module's routes live once the host has composed the app (its global prefix, the
 * module's `routePrefix`), and the Swagger UI of the module's routes at `<base>/docs`. The UI is
 * mounted when the app initialises (after a host's `setGlobalPrefix()`), for an app that
 * `configurePaymentWebhooksApp` prepared.
 */
@Injectable()
export class HttpSurface implements OnModuleInit {
  private readonly logger = new Logger('PaymentWebhooksDocs');
  private app: INestApplication | undefined;
  private docsEnabled = false;
  private mounted = false;
  private initialized = false;
  private cached: { globalPrefix: string; paths: ModulePaths } | undefined;
  /** The module's own modules with routes, for the document (a host's routes are not the module's). */
  private documented: Type[] = [];

  constructor(
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    private readonly appConfig: ApplicationConfig,
  ) {}

  paths(): ModulePaths {
    const globalPrefix = this.appConfig.getGlobalPrefix();
    if (this.cached?.globalPrefix !== globalPrefix) {
      const base = joinPaths(globalPrefix, this.options.routePrefix);
      this.cached = {
        globalPrefix,
        paths: { base, webhooks: `${base}/webhooks`, docs: `${base}/docs`, docsJson: `${base}/docs-json` },
      };
    }
    return this.cached.paths;
  }

  /** Called by configurePaymentWebhooksApp before the app starts. */
  attach(app: INestApplication, docs: boolean, documented: Type[]): void {
    this.app = app;
    this.docsEnabled = docs;
    this.documented = documented;
    if (this.initialized) this.mountDocs();
  }

  onModuleInit(): void {
    this.initialized = true;
    this.mountDocs();
  }

  /** The OpenAPI document of the module's routes, as served at `/docs-json`. */
  document(app: INestApplication): OpenAPIObject {
    const config = new DocumentBuilder()
      .setTitle('Payment webhooks')
      .setDescription(
        'Idempotent payment webhooks: signed deliveries recorded once, processed in one transaction, ' +
          'fulfilled once through an outbox. Every route but webhooks and health needs the admin token.',
      )
      .setVersion('1')
      .setLicense('MIT', 'https://opensource.org/license/mit')
      // The paths already carry the host's global prefix and the route prefix: the server is the
      // origin that serves this document, whatever it is.
      .addServer('/', 'The service serving this document (paths include any global and route prefix)')
      // The admin token is a static secret, not a JWT: addBearerAuth() would say `bearerFormat: JWT`.
      .addSecurity('admin', {
        type: 'http',
        scheme: 'bearer',
        description: 'The static ADMIN_TOKEN: `Authorization: Bearer <ADMIN_TOKEN>`.',
      })
      .addBasicAuth({ type: 'http', scheme: 'basic', description: 'Any user name, ADMIN_TOKEN as the password (for a browser).' }, 'adminBasic')
      .addTag('webhooks', 'Signed deliveries from payment providers, verified and recorded once; no admin token.')
      .addTag('orders', 'Orders, the provider payments they expect, and their lifecycle (paid, canceled, fulfilled once).')
      .addTag('payments', 'Provider payments as recorded here, with their status and refunds.')
      .addTag('admin', 'The operator\'s routes: the delivery archive and replay, the outbox, reconciliation and retention.')
      .addTag('operations', 'Liveness and readiness probes (no auth) and Prometheus metrics (admin token).')
      .build();
    return SwaggerModule.createDocument(app, config, { include: this.documented.length ? this.documented : undefined });
  }

  private mountDocs(): void {
    const app = this.app;
    if (!app || !this.docsEnabled || this.mounted) return;
    if (app.getHttpAdapter().getType() === 'fastify' && !resolvable('@fastify/static')) {
      this.logger.warn('the Swagger UI is off: on Fastify it needs the @fastify/static package (npm install @fastify/static)');
      return;
    }
    this.mounted = true;
    const { docs, docsJson } = this.paths();
    // Paths are given whole (global prefix included); the document is built at the first request.
    SwaggerModule.setup(docs, app, () => this.document(app), {
      jsonDocumentUrl: docsJson,
      // The JSON document only: no YAML copy at a URL nobody guards.
      raw: ['json'],
      swaggerOptions: { persistAuthorization: true },
    });
  }
}

function resolvable(name: string): boolean {
  try {
    createRequire(__filename).resolve(name);
    return true;
  } catch {
    return false;
  }
}
