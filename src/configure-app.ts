import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { json, urlencoded } from 'express';
import type { NextFunction, Request, Response } from 'express';
import { AdminAuthGuard } from './common/admin-auth.guard';
import { toApiError } from './common/api-errors';
import type { ResolvedOptions } from './config/options';
import { PW_OPTIONS } from './payment-webhooks.constants';

export interface ConfigureAppOptions {
  /** Body limit of the JSON routes (the webhook route has its own, WEBHOOK_MAX_BODY_BYTES). */
  jsonLimit?: string;
  /** Serve the Swagger UI at /docs and the OpenAPI document at /docs-json (admin token). Default true. */
  docs?: boolean;
}

/**
 * Prepares an app that hosts the module: JSON parsing for every route except `/webhooks`, whose
 * raw bytes the signature guard reads itself (the signature covers them, and an over-size or
 * non-JSON body must get the contract's answer, not the parser's); and the Swagger UI behind the
 * admin token. Create the app with `bodyParser: false` and call this before `listen`.
 */
export function configurePaymentWebhooksApp(app: INestApplication, options: ConfigureAppOptions = {}): void {
  const express = app as NestExpressApplication;
  const parsers = [json({ limit: options.jsonLimit ?? '1mb' }), urlencoded({ extended: false })];
  express.use((req: Request, res: Response, next: NextFunction) => {
    // Express matches routes case-insensitively; so must this, or the parser eats a webhook's bytes.
    if (WEBHOOK_PATH.test(req.path)) return next();
    let i = 0;
    const run = (err?: unknown): void => {
      if (err) return parserError(err as { status?: number; type?: string }, res);
      if (i === parsers.length) {
        const bad = findUnstorableText(req.body, 'body') ?? findUnstorableText(req.query, 'query');
        if (bad) {
          res.status(400).json({ error: 'validation_failed', details: [{ field: bad, message: 'must not contain NUL characters or unpaired surrogates' }] });
          return;
        }
        return next();
      }
      parsers[i++](req, res, run);
    };
    run();
  });
  if (options.docs ?? true) setupDocs(express);
}

/** The OpenAPI document of every route of the module (and of the host's, when embedded). */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Payment webhooks')
    .setDescription(
      'Idempotent payment webhooks: signed deliveries recorded once, processed in one transaction, ' +
        'fulfilled once through an outbox. Every route but webhooks and health needs the admin token.',
    )
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' }, 'admin')
    .addBasicAuth({ type: 'http', scheme: 'basic', description: 'any user name, ADMIN_TOKEN as the password' }, 'adminBasic')
    .build();
  return SwaggerModule.createDocument(app, config);
}

function setupDocs(app: NestExpressApplication): void {
  const auth = new AdminAuthGuard(app.get<ResolvedOptions>(PW_OPTIONS).adminToken);
  const guard = (req: Request, res: Response, next: NextFunction) => {
    try {
      auth.check(req.headers.authorization);
      next();
    } catch (err) {
      const { status, body } = toApiError(err);
      // A browser shows its login box on Basic.
      if (status === 401) res.setHeader('WWW-Authenticate', 'Basic realm="payment-webhooks", charset="UTF-8"');
      res.status(status).json(body);
    }
  };
  app.use('/docs', guard);
  app.use('/docs-json', guard);
  app.use('/docs-yaml', guard);
  SwaggerModule.setup('docs', app, buildOpenApiDocument(app), {
    jsonDocumentUrl: 'docs-json',
    // The JSON document only: no YAML copy at a URL nobody guards.
    raw: ['json'],
    swaggerOptions: { persistAuthorization: true },
  });
}

const WEBHOOK_PATH = /^\/webhooks\//i;
/** A NUL, or a UTF-16 surrogate without its pair. */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * The path of a string PostgreSQL cannot store (a NUL, an unpaired UTF-16 surrogate), or null:
 * such input is a 400 here rather than a 500 from the database later.
 */
export function findUnstorableText(value: unknown, path: string, depth = 0): string | null {
  if (typeof value === 'string') return UNSTORABLE.test(value) ? path : null;
  if (depth > 32 || value === null || typeof value !== 'object') return null;
  for (const [key, child] of Object.entries(value)) {
    if (UNSTORABLE.test(key)) return path;
    const field = Array.isArray(value) ? `${path}[${key}]` : path === 'body' || path === 'query' ? key : `${path}.${key}`;
    const found = findUnstorableText(child, field, depth + 1);
    if (found) return found;
  }
  return null;
}

/** A body the parser refused gets the API's error shape, not Express's HTML page. */
function parserError(err: { status?: number; type?: string }, res: Response): void {
  if (err.status === 413) {
    res.status(413).json({ error: 'payload_too_large' });
    return;
  }
  res.status(400).json({
    error: 'validation_failed',
    details: [{ field: 'body', message: err.type === 'entity.parse.failed' ? 'the body is not valid JSON' : 'the body cannot be read' }],
  });
}
