import type { CanActivate, INestApplication } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isObservable, lastValueFrom } from 'rxjs';
import { AdminAuthGuard } from './common/admin-auth.guard';
import { toApiError } from './common/api-errors';
import type { ResolvedOptions } from './config/options';
import { HttpSurface, type ModulePaths } from './http/http-surface';
import { hideBodyFromParsers, RAW_WEBHOOK_CONTENT_TYPE, requestPath, sendJson, setHeader } from './http/platform';
import { PW_ADMIN_GUARD, PW_OPTIONS } from './payment-webhooks.constants';
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
 * UI of the module's routes behind the admin token (or the host's `adminGuard`), and answers
 * `POST <prefix>/webhooks/a/b` (no single endpoint id) with the contract's 404.
 *
 * Auth comes first: with the module's own token check, a request to one of the module's guarded
 * routes is authenticated here, before any body parser, pipe or validation reads it, so an
 * unauthenticated request answers 401 whatever its body or query (the guard checks again).
 */
export function configurePaymentWebhooksApp(app: INestApplication, options: ConfigureAppOptions = {}): void {
  const platform = app.getHttpAdapter().getType() as Platform;
  if (platform !== 'express' && platform !== 'fastify') {
    throw new Error(`configurePaymentWebhooksApp: unsupported HTTP platform "${String(platform)}" (express or fastify)`);
  }
  const surface = app.get(HttpSurface);
  const observer = app.get(DeliveryObserver);
  const adminGuard = app.get<CanActivate>(PW_ADMIN_GUARD);
  // The host's guard when it gave one (docs included); else the token check.
  const ownGuard = adminGuard instanceof AdminAuthGuard ? adminGuard : null;
  const tokenGuard = ownGuard ?? new AdminAuthGuard(app.get<ResolvedOptions>(PW_OPTIONS).adminToken);
  const docs = options.docs ?? true;
  const instance = app.getHttpAdapter().getInstance();
  // Match paths the way the app's router does: Express ignores case, Fastify by default does not.
  const ignoreCase = platform === 'express' || instance?.initialConfig?.caseSensitive === false;

  /** Refuses with the contract's body; a browser shows its login box on Basic (docs, own token check). */
  const refuse = (res: unknown, err: unknown, askBasic: boolean): Verdict => {
    const { status, body } = toApiError(err);
    if (status === 401) setHeader(res, 'WWW-Authenticate', askBasic ? 'Basic realm="payment-webhooks", charset="UTF-8"' : 'Bearer');
    sendJson(res, status, body);
    return 'answered';
  };

  /** `req` is the Node request; `frameworkReq` what a guard sees (Express's request, Fastify's). */
  const hook = async (req: IncomingMessage, frameworkReq: unknown, res: unknown): Promise<Verdict> => {
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
      if (ownGuard === null) return hostGuardAllows(adminGuard, frameworkReq, res).then((ok) => ok ? 'next' : 'answered', (err) => refuse(res, err, false));
      try {
        // The browser's prompt: basic auth is accepted here, and only here (CONTRACT §4).
        tokenGuard.check(req.headers.authorization, { basic: true });
      } catch (err) {
        return refuse(res, err, true);
      }
      return 'next';
    }
    if (ownGuard !== null && surface.isGuardedRoute(req.method, requestPath(req), ignoreCase)) {
      try {
        ownGuard.check(req.headers.authorization);
      } catch (err) {
        return refuse(res, err, false);
      }
    }
    return 'next';
  };

  if (platform === 'express') {
    app.use((req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => {
      hook(req, req, res).then((verdict) => verdict === 'next' && next(), next);
    });
    // No "X-Powered-By: Express" on any answer.
    instance.disable?.('x-powered-by');
  } else {
    instance.addHook('onRequest', (request: { raw: IncomingMessage }, reply: unknown, done: (err?: Error) => void) => {
      hook(request.raw, request, reply).then((verdict) => verdict === 'next' && done(), done);
    });
    // The webhook route's bytes stay in the stream, for the signature guard (see hideBodyFromParsers).
    instance.addContentTypeParser(RAW_WEBHOOK_CONTENT_TYPE, (_request: unknown, _payload: unknown, done: (err: null, body?: unknown) => void) =>
      done(null, undefined),
    );
  }
  surface.attach(app, docs, DOCUMENTED_MODULES);
}

/**
 * The host's guard on `/docs` (option `adminGuard`), as on every other route of the module: it gets
 * the request as a route would give it. Refused: 403 forbidden, as Nest answers a guard's `false`;
 * an exception it throws gets its own status. Answers and returns false, or returns true.
 */
async function hostGuardAllows(guard: CanActivate, req: unknown, res: unknown): Promise<boolean> {
  const context = new ExecutionContextHost([req, res, () => undefined], DocsRoute, DocsRoute.prototype.serve);
  context.setType('http');
  const verdict = guard.canActivate(context);
  const allowed = isObservable(verdict) ? await lastValueFrom(verdict) : await verdict;
  if (allowed) return true;
  sendJson(res, 403, { error: 'forbidden' });
  return false;
}

/** What a host guard sees as the class and handler of `/docs` (a Reflector finds no metadata on them). */
class DocsRoute {
  serve(): void {}
}

function isDocsPath(path: string, paths: ModulePaths, ignoreCase: boolean): boolean {
  const docs = ignoreCase ? paths.docs.toLowerCase() : paths.docs;
  const docsJson = ignoreCase ? paths.docsJson.toLowerCase() : paths.docsJson;
  return path === docs || path.startsWith(`${docs}/`) || path === docsJson || path === `${docs}-yaml`;
}
