import type { INestApplication } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { AdminAuthGuard } from './common/admin-auth.guard';
import { toApiError } from './common/api-errors';
import type { ResolvedOptions } from './config/options';
import { HttpSurface, type ModulePaths } from './http/http-surface';
import { hideBodyFromParsers, RAW_WEBHOOK_CONTENT_TYPE, requestPath, sendJson, setHeader } from './http/platform';
import { PW_OPTIONS } from './payment-webhooks.constants';
import { DeliveryObserver } from './webhooks/delivery-observer';
import { DOCUMENTED_MODULES } from './payment-webhooks.module';

export interface ConfigureAppOptions {
  /** Serve the Swagger UI at `<prefix>/docs` and the OpenAPI document at `<prefix>/docs-json` (admin token). Default true. */
  docs?: boolean;
}

type Platform = 'express' | 'fastify';
/** What a request hook decided: go on to the framework, or the hook has answered. */
type Verdict = 'next' | 'answered';

/**
 * Prepares an Express or a Fastify app that hosts the module; call it before `listen()` (or
 * `init()`). Every route keeps the body parsing the host configured, except the webhook route,
 * whose raw bytes the signature guard reads itself: the signature covers them, and an over-size
 * or non-JSON body must get the contract's answer (§2), not the parser's. Also mounts the Swagger
 * UI of the module's routes behind the admin token, and answers `POST <prefix>/webhooks/a/b`
 * (no single endpoint id) with the contract's 404.
 */
export function configurePaymentWebhooksApp(app: INestApplication, options: ConfigureAppOptions = {}): void {
  const platform = app.getHttpAdapter().getType() as Platform;
  if (platform !== 'express' && platform !== 'fastify') {
    throw new Error(`configurePaymentWebhooksApp: unsupported HTTP platform "${String(platform)}" (express or fastify)`);
  }
  const surface = app.get(HttpSurface);
  const observer = app.get(DeliveryObserver);
  const docsGuard = new AdminAuthGuard(app.get<ResolvedOptions>(PW_OPTIONS).adminToken);
  const docs = options.docs ?? true;
  const instance = app.getHttpAdapter().getInstance();
  // Match paths the way the app's router does: Express ignores case, Fastify by default does not.
  const ignoreCase = platform === 'express' || instance?.initialConfig?.caseSensitive === false;

  const hook = (req: IncomingMessage, res: unknown): Verdict => {
    const paths = surface.paths();
    const path = ignoreCase ? requestPath(req).toLowerCase() : requestPath(req);
    if (req.method === 'POST') {
      const webhooks = ignoreCase ? paths.webhooks.toLowerCase() : paths.webhooks;
      if (path === webhooks || path.startsWith(`${webhooks}/`)) {
        const id = path.slice(webhooks.length + 1).replace(/\/$/, '');
        if (id.length > 0 && !id.includes('/')) {
          hideBodyFromParsers(req, platform);
          return 'next';
        }
        // No single endpoint id: the same answer as an unknown one, counted and logged alike.
        observer.begin(req, res, 'unknown', 'unknown');
        observer.note(req, { answer: 'unknown_endpoint' });
        setHeader(res, 'Connection', 'close');
        sendJson(res, 404, { error: 'unknown_endpoint' });
        return 'answered';
      }
    }
    if (docs && isDocsPath(path, paths, ignoreCase)) {
      try {
        docsGuard.check(req.headers.authorization);
      } catch (err) {
        const { status, body } = toApiError(err);
        // A browser shows its login box on Basic.
        if (status === 401) setHeader(res, 'WWW-Authenticate', 'Basic realm="payment-webhooks", charset="UTF-8"');
        sendJson(res, status, body);
        return 'answered';
      }
    }
    return 'next';
  };

  if (platform === 'express') {
    app.use((req: IncomingMessage, res: ServerResponse, next: () => void) => {
      if (hook(req, res) === 'next') next();
    });
    // No "X-Powered-By: Express" on any answer.
    instance.disable?.('x-powered-by');
  } else {
    instance.addHook('onRequest', (request: { raw: IncomingMessage }, reply: unknown, done: () => void) => {
      if (hook(request.raw, reply) === 'next') done();
    });
    // The webhook route's bytes stay in the stream, for the signature guard (see hideBodyFromParsers).
    instance.addContentTypeParser(RAW_WEBHOOK_CONTENT_TYPE, (_request: unknown, _payload: unknown, done: (err: null, body?: unknown) => void) =>
      done(null, undefined),
    );
  }
  surface.attach(app, docs, DOCUMENTED_MODULES);
}

function isDocsPath(path: string, paths: ModulePaths, ignoreCase: boolean): boolean {
  const docs = ignoreCase ? paths.docs.toLowerCase() : paths.docs;
  const docsJson = ignoreCase ? paths.docsJson.toLowerCase() : paths.docsJson;
  return path === docs || path.startsWith(`${docs}/`) || path === docsJson || path === `${docs}-yaml`;
}
