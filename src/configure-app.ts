import { Logger } from '@nestjs/common';
import { unsupportedNode } from './common/engine';
import type { CanActivate, INestApplication } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isObservable, lastValueFrom } from 'rxjs';
import { AdminAuthGuard } from './http/admin-auth.guard';
import { toApiError } from './http/api-errors';
import type { ResolvedOptions } from './config/options';
import { HttpSurface } from './http/http-surface';
import { ClientAddresses } from './http/client-address';
import { capConnections, shareConnections } from './http/server-limits';
import { addHeaderValue, hideBodyFromParsers, RAW_WEBHOOK_CONTENT_TYPE, rawResponse, requestPath, sendJson, setHeader } from './http/platform';
import { PW_ADMIN_GUARD, PW_OPTIONS } from './config/tokens';
import { DeliveryObserver } from './webhooks/delivery-observer';
import { DOCUMENTED_MODULES } from './payment-webhooks.module';

export interface ConfigureAppOptions {
  /** Serve the Swagger UI at `<prefix>/docs` and the OpenAPI document at `<prefix>/docs-json` (admin token). Default true. */
  docs?: boolean;
}

type Platform = 'express' | 'fastify';
/** What a request hook decided: go on to the framework, or the hook has answered. */
type Verdict = 'next' | 'answered';
type FastifyHook = (request: { raw: IncomingMessage }, reply: unknown, done: (err?: Error) => void) => void;
/** What a Fastify `onRoute` hook reads and sets of a route being added. */
interface FastifyRouteOptions {
  url: string;
  method: string | string[];
  onRequest?: FastifyHook | FastifyHook[];
}

/**
 * Prepares an Express or a Fastify app that hosts the module; call it before `listen()` (or
 * `init()`). Every route keeps the body parsing the host configured, except the webhook route,
 * whose raw bytes the signature guard reads itself: the signature covers them, and an over-size or
 * non-JSON body must get the webhook route's own answer (docs/webhooks.md), not the parser's. Also
 * mounts the Swagger UI of the module's routes behind the admin token (or the host's `adminGuard`), and answers
 * `POST <prefix>/webhooks/a/b` (no single endpoint id) with the contract's 404.
 *
 * Auth comes first: with the module's own token check, a request to one of the module's guarded
 * routes is authenticated here, before any body parser, pipe or validation reads it, so an
 * unauthenticated request answers 401 whatever its body or query (the guard checks again). The
 * docs, and on Fastify the guarded routes, get their check through the router, so every spelling
 * it serves them by (case, slashes, percent escapes) is checked.
 *
 * It also bounds the connections of the app's server: at most `httpMaxConnections` (fewer when
 * the open-file limit allows fewer; a lower maximum of the host's own stays), and one address (but
 * a trusted proxy) at most a quarter of them (docs/design.md#what-an-outsider-can-make-the-process-hold).
 */
export function configurePaymentWebhooksApp(app: INestApplication, options: ConfigureAppOptions = {}): void {
  const platform = app.getHttpAdapter().getType() as Platform;
  if (platform !== 'express' && platform !== 'fastify') {
    throw new Error(`configurePaymentWebhooksApp: unsupported HTTP platform "${String(platform)}" (express or fastify)`);
  }
  // One line saying what to install, through the app's logger, where Node.js is older than supported.
  const engine = unsupportedNode();
  if (engine) new Logger('PaymentWebhooks').warn(engine);
  limitConnections(app);
  const checks = new RequestChecks(app, platform, options.docs ?? true);
  // Which requests are the docs, or a guarded route, is decided by the app's own router, never by
  // a second comparison of the path: any spelling the router serves them by gets the check.
  const beforeDocsRoutes = platform === 'express' ? onExpress(app, checks) : onFastify(app, checks);
  checks.surface.attach(app, checks.docs, DOCUMENTED_MODULES, beforeDocsRoutes);
}

/** The connection cap and one address's share of it, on the app's Node server, before it listens. */
function limitConnections(app: INestApplication): void {
  const server = app.getHttpServer();
  const clients = app.get(ClientAddresses);
  capConnections(server, app.get<ResolvedOptions>(PW_OPTIONS).tuning.httpMaxConnections, 'lower');
  shareConnections(server, (address) => clients.isTrustedProxy(address));
}

/** The checks the request hooks of both platforms make, before any body parser reads a request. */
class RequestChecks {
  readonly surface: HttpSurface;
  private readonly observer: DeliveryObserver;
  private readonly adminGuard: CanActivate;
  /** The module's own token check, when the host gave no guard of its own; null otherwise. */
  readonly ownGuard: AdminAuthGuard | null;
  private readonly tokenGuard: AdminAuthGuard;
  /** The webhook path and Express's API routes are matched as the router does: Express ignores case, Fastify by default does not. */
  readonly ignoreCase: boolean;

  constructor(
    app: INestApplication,
    private readonly platform: Platform,
    readonly docs: boolean,
  ) {
    this.surface = app.get(HttpSurface);
    this.observer = app.get(DeliveryObserver);
    this.adminGuard = app.get<CanActivate>(PW_ADMIN_GUARD);
    // The host's guard when it gave one (docs included); else the token check.
    this.ownGuard = this.adminGuard instanceof AdminAuthGuard ? this.adminGuard : null;
    this.tokenGuard = this.ownGuard ?? new AdminAuthGuard(app.get<ResolvedOptions>(PW_OPTIONS).adminToken);
    const config = app.getHttpAdapter().getInstance()?.initialConfig;
    this.ignoreCase = platform === 'express' || config?.caseSensitive === false || config?.routerOptions?.caseSensitive === false;
  }

  /** Refuses with the contract's body; a browser shows its login box on Basic (docs, own token check). */
  private refuse(res: unknown, err: unknown, askBasic: boolean): Verdict {
    const { status, body } = toApiError(err);
    if (status === 401) setHeader(res, 'WWW-Authenticate', askBasic ? 'Basic realm="payment-webhooks", charset="UTF-8"' : 'Bearer');
    sendJson(res, status, body);
    return 'answered';
  }

  /**
   * The docs' admin check: the host's guard when it gave one, else the token, where basic auth is
   * accepted (a browser's login box), and only here. `frameworkReq` is what a guard sees.
   */
  guardDocs(req: IncomingMessage, frameworkReq: unknown, res: unknown): Promise<Verdict> {
    denyFraming(res);
    if (this.ownGuard === null) {
      return hostGuardAllows(this.adminGuard, frameworkReq, res).then((ok) => (ok ? 'next' : 'answered'), (err) => this.refuse(res, err, false));
    }
    try {
      this.tokenGuard.check(req.headers.authorization, { basic: true });
    } catch (err) {
      return Promise.resolve(this.refuse(res, err, true));
    }
    return Promise.resolve('next');
  }

  /** The token check of a guarded API route, before any body parser reads the request (own token check only). */
  guardApi(guard: AdminAuthGuard, req: IncomingMessage, res: unknown): Verdict {
    try {
      guard.check(req.headers.authorization);
    } catch (err) {
      return this.refuse(res, err, false);
    }
    return 'next';
  }

  /** Before any body parser: the webhook route's bytes stay unread, and a webhook path with no single endpoint id gets its 404. */
  webhook(req: IncomingMessage & { path?: string }, res: unknown): Verdict {
    if (req.method !== 'POST') return 'next';
    const webhooks = this.ignoreCase ? this.surface.paths().webhooks.toLowerCase() : this.surface.paths().webhooks;
    // Express's own parse of the path (an absolute-form target by its path); Fastify's routes get
    // a route hook of their own, for the spellings its router decodes.
    const path = this.ignoreCase ? (req.path ?? requestPath(req)).toLowerCase() : (req.path ?? requestPath(req));
    if (path !== webhooks && !path.startsWith(`${webhooks}/`)) return 'next';
    const id = path.slice(webhooks.length + 1).replace(/\/$/, '');
    if (id.length > 0 && !id.includes('/')) {
      hideBodyFromParsers(req, this.platform);
      return 'next';
    }
    // No single endpoint id: the same answer as an unknown one, counted and logged alike.
    this.observer.begin(req, res, 'unknown', 'unknown');
    this.observer.note(req, { answer: 'unknown_endpoint' });
    setHeader(res, 'Connection', 'close');
    sendJson(res, 404, { error: 'unknown_endpoint' });
    return 'answered';
  }
}

/**
 * Every answer of the docs paths (the UI, its files, the document, the login token, and their
 * 401s) forbids being shown in a frame: the page logs itself in with the operator's token, and in
 * another site's frame a click could be taken from them. A policy the host already set is kept
 * beside this one (both apply).
 */
function denyFraming(res: unknown): void {
  setHeader(res, 'X-Frame-Options', 'DENY');
  addHeaderValue(res, 'Content-Security-Policy', FRAME_ANCESTORS_NONE);
  const node = rawResponse(res);
  if (node !== res) return;
  // Express's static files answer a directory's redirect (`/docs/.`) with a policy of their own, set
  // in place of any before: the rule is added again as the head is written.
  const writeHead = node.writeHead as (...args: unknown[]) => ServerResponse;
  node.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    this.setHeader('X-Frame-Options', 'DENY');
    addHeaderValue(this, 'Content-Security-Policy', FRAME_ANCESTORS_NONE);
    return writeHead.apply(this, args);
  } as ServerResponse['writeHead'];
}

const FRAME_ANCESTORS_NONE = "frame-ancestors 'none'";

/**
 * Express: one middleware before the body parsers (the webhook route, and the token of the guarded
 * routes, which Express routes by the path as written); the docs' check mounted through Express's
 * own `use`. Returns what mounts that check, just before the Swagger routes.
 */
function onExpress(app: INestApplication, checks: RequestChecks): (paths: string[]) => void {
  const instance = app.getHttpAdapter().getInstance();
  app.use((req: IncomingMessage & { path?: string }, res: ServerResponse, next: (err?: unknown) => void) => {
    if (checks.webhook(req, res) === 'answered') return;
    // Express routes the path as written (an absolute-form target by its path, as req.path gives);
    // express.json() runs before routing, so the token is checked here first.
    const guard = checks.ownGuard;
    if (guard !== null && checks.surface.isGuardedRoute(req.method, req.path ?? requestPath(req), checks.ignoreCase) && checks.guardApi(guard, req, res) === 'answered') {
      return;
    }
    next();
  });
  // No "X-Powered-By: Express" on any answer.
  instance.disable?.('x-powered-by');
  // Mounted at the docs paths just before the Swagger routes: Express's `use` matches a path with
  // the router's own case setting and as a prefix, as the UI's static files are mounted, so every
  // spelling Express routes to the UI, its files or the document passes here first.
  return (paths) => {
    instance.use(paths, (req: IncomingMessage & { originalUrl: string; baseUrl: string }, res: ServerResponse, next: (err?: unknown) => void) => {
      // Under a mount path Express hands over the URL without it; the host's guard sees the request's own.
      const mounted = { url: req.url, baseUrl: req.baseUrl };
      req.url = req.originalUrl;
      req.baseUrl = '';
      checks
        .guardDocs(req, req, res)
        .finally(() => Object.assign(req, mounted))
        .then((verdict) => verdict === 'next' && next(), next);
    });
  };
}

/**
 * Fastify: the webhook path in a global `onRequest` hook, and each docs route, guarded API route
 * and webhook route its check as a route hook of its own, so that whatever spelling Fastify's
 * router maps to the route (escapes decoded, case and slashes as configured) runs it, before any
 * content-type parser. Routes added later, in plugins too, inherit the `onRoute` hook.
 */
function onFastify(app: INestApplication, checks: RequestChecks): undefined {
  const instance = app.getHttpAdapter().getInstance();
  instance.addHook('onRequest', (request: { raw: IncomingMessage }, reply: unknown, done: (err?: Error) => void) => {
    let verdict: Verdict;
    try {
      verdict = checks.webhook(request.raw, reply);
    } catch (err) {
      return done(err as Error);
    }
    if (verdict === 'next') done();
  });
  instance.addHook('onRoute', (route: FastifyRouteOptions) => {
    const check = fastifyRouteCheck(checks, route.url, [route.method].flat());
    if (check) route.onRequest = [check, ...[route.onRequest ?? []].flat()];
  });
  // The webhook route's bytes stay in the stream, for the signature guard (see hideBodyFromParsers).
  instance.addContentTypeParser(RAW_WEBHOOK_CONTENT_TYPE, (_request: unknown, _payload: unknown, done: (err: null, body?: unknown) => void) =>
    done(null, undefined),
  );
  return undefined;
}

/** The `onRequest` hook of a Fastify route that needs a check, or none. */
function fastifyRouteCheck(checks: RequestChecks, url: string, methods: string[]): FastifyHook | undefined {
  const { surface } = checks;
  if (methods.includes('POST') && surface.isWebhookUrl(url)) {
    // Whatever spelling the router took here (`/%77ebhooks/…`, an absolute-form target), the
    // bytes stay unread for the signature guard.
    return (request, _reply, done) => {
      if (request.raw.method === 'POST') hideBodyFromParsers(request.raw, 'fastify');
      done();
    };
  }
  if (checks.docs && surface.isDocsUrl(url)) {
    return (request, reply, done) => {
      checks.guardDocs(request.raw, request, reply).then((verdict) => verdict === 'next' && done(), done);
    };
  }
  const guard = checks.ownGuard;
  if (guard !== null && methods.some((method) => surface.isGuardedUrl(method, url))) {
    return (request, reply, done) => {
      if (!surface.isGuardedUrl(request.raw.method ?? '', url) || checks.guardApi(guard, request.raw, reply) === 'next') done();
    };
  }
  return undefined;
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
