import { Inject, Injectable, Logger, OnModuleInit, RequestMethod, type INestApplication, type Type } from '@nestjs/common';
import { GUARDS_METADATA, METHOD_METADATA, MODULE_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { ApplicationConfig } from '@nestjs/core';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { createRequire } from 'node:module';
import type { IncomingMessage } from 'node:http';
import { AdminAuthGuard, presentedToken } from './admin-auth.guard';
import { AdminGuard } from './admin.guard';
import { DOCS_DESCRIPTION, DOCS_TAGS, LOGIN_TOKEN_PATH, SHARED_ERROR_DOCS, SWAGGER_UI_ON_COMPLETE } from './api-docs';
import type { ResolvedOptions } from '../config/options';
import { PW_ADMIN_GUARD, PW_OPTIONS } from '../config/tokens';
import { rawRequest, sendJson, setHeader } from './platform';
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
  private guarded: { base: string; routes: GuardedRoute[] } | undefined;
  /** Called right before the docs routes are added (Express mounts their admin check there). */
  private beforeDocsRoutes: ((paths: string[]) => void) | undefined;
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

  /**
   * Whether `method path` (the path without its query, as the router sees it) may be one of the
   * module's routes behind the admin guard: what the request hook authenticates before any body
   * parser or pipe reads the request. The path matches as written or with its percent escapes
   * decoded (but `%2F`), so that no spelling a router decodes to a guarded route passes unchecked.
   * Only the module's own routes match, never a host's route beside them; OPTIONS (a CORS preflight) never does.
   */
  isGuardedRoute(method: string | undefined, path: string, ignoreCase: boolean): boolean {
    const verb = method === 'HEAD' ? 'GET' : method;
    const decoded = decodeSegments(path);
    return this.guardedRoutes().some((r) => {
      const pattern = ignoreCase ? r.caseless : r.pattern;
      return r.method === verb && (pattern.test(path) || pattern.test(decoded));
    });
  }

  /**
   * Whether a route registered at `url` (`/pay/orders/:id`, as the router was given it) with this
   * method is one of the module's guarded routes: the router then runs the check on whatever it routes there.
   */
  isGuardedUrl(method: string, url: string): boolean {
    const verb = method === 'HEAD' ? 'GET' : method;
    const template = urlTemplate(url);
    return this.guardedRoutes().some((r) => r.method === verb && r.template === template);
  }

  /** Whether a route registered at `url` is the webhook route (or its endpoint-less sibling). */
  isWebhookUrl(url: string): boolean {
    const { webhooks } = this.paths();
    return url === webhooks || url === `${webhooks}/` || urlTemplate(url) === urlTemplate(`${webhooks}/:endpointId`);
  }

  /** Whether a route registered at `url` serves the Swagger UI (or a file under it) or the OpenAPI document. */
  isDocsUrl(url: string): boolean {
    const { docs, docsJson } = this.paths();
    return url === docs || url.startsWith(`${docs}/`) || url === docsJson || url === `${docs}-yaml`;
  }

  private guardedRoutes(): GuardedRoute[] {
    const base = this.paths().base;
    if (this.guarded?.base !== base) this.guarded = { base, routes: guardedRoutes(this.documented, base) };
    return this.guarded.routes;
  }

  /** Called by configurePaymentWebhooksApp before the app starts. */
  attach(app: INestApplication, docs: boolean, documented: Type[], beforeDocsRoutes?: (paths: string[]) => void): void {
    this.app = app;
    this.docsEnabled = docs;
    this.documented = documented;
    this.guarded = undefined;
    this.beforeDocsRoutes = beforeDocsRoutes;
    if (this.initialized) this.mountDocs();
  }

  /** Whether the Swagger UI and its document will be mounted (at `paths().docs`, `paths().docsJson`) when the app initialises. */
  servesDocs(): boolean {
    const app = this.app;
    if (!app || !this.docsEnabled) return false;
    return app.getHttpAdapter().getType() !== 'fastify' || resolvable('@fastify/static');
  }

  onModuleInit(): void {
    this.initialized = true;
    this.mountDocs();
  }

  /** The OpenAPI document of the module's routes, as served at `/docs-json`. */
  document(app: INestApplication): OpenAPIObject {
    const builder = new DocumentBuilder()
      .setTitle('Payment webhooks')
      .setDescription(DOCS_DESCRIPTION)
      .setVersion('1')
      .setLicense('MIT', 'https://opensource.org/license/mit')
      // The paths already carry the host's global prefix and the route prefix: the server is the
      // origin that serves this document, whatever it is.
      .addServer('/', 'The service serving this document (paths include any global and route prefix)')
      // The admin token is a static secret, not a JWT: addBearerAuth() would say `bearerFormat: JWT`.
      .addSecurity('admin', {
        type: 'http',
        scheme: 'bearer',
        description:
          'The static ADMIN_TOKEN: `Authorization: Bearer <ADMIN_TOKEN>`, the only scheme of these routes. (A browser opens ' +
          '/docs and /docs-json, which are not listed here, with basic auth: any user name, the token as password; the ' +
          'Swagger UI then sends that token as its bearer.)',
      });
    for (const [name, description] of DOCS_TAGS) builder.addTag(name, description);
    const config = builder.build();
    return apiOnlyBearer(SwaggerModule.createDocument(app, config, {
        include: this.documented.length ? this.documented : undefined,
        // Every route names its tag (api-docs.ts DOCS_TAGS): none named after its controller's class besides.
        autoTagControllers: false,
      }), this.paths().webhooks);
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
    this.beforeDocsRoutes?.([docs, docsJson, `${docs}-yaml`]);
    // Under the docs path, so behind the docs' check (isDocsUrl): the token the page was opened with.
    app.getHttpAdapter().get(`${docs}/${LOGIN_TOKEN_PATH}`, (req: unknown, res: unknown) => this.loginToken(app, req, res));
    // Paths are given whole (global prefix included); the document is built at the first request.
    SwaggerModule.setup(docs, app, () => this.document(app), {
      jsonDocumentUrl: docsJson,
      // The JSON document only: no YAML copy at a URL nobody guards.
      raw: ['json'],
      swaggerOptions: {
        // The token stays in the page's memory only: never in the browser's localStorage.
        persistAuthorization: false,
        // One login: once the UI is drawn it asks for the token the page was opened with
        // (`<docs>/login-token`) and authorizes the bearer scheme with it (loginToken below).
        onComplete: SWAGGER_UI_ON_COMPLETE,
      },
    });
  }

  /**
   * `GET <docs>/login-token`: the token this request presented (the Basic password the browser
   * sends, or a bearer), for the Swagger UI to send as its bearer, so that the operator logs in
   * once. The docs' check has run: the token is the admin token. It is answered to the page's own
   * origin only: never to a cross-site request (Fetch Metadata `Sec-Fetch-Site` other than
   * `same-origin`, 403), never stored (`no-store`), as JSON no other site can read or run as a
   * script. Under a host's own guard there is no token to give: 404, and the operator uses Authorize.
   */
  private loginToken(app: INestApplication, req: unknown, res: unknown): void {
    setHeader(res, 'Cache-Control', 'no-store');
    setHeader(res, 'X-Content-Type-Options', 'nosniff');
    setHeader(res, 'Cross-Origin-Resource-Policy', 'same-origin');
    // Whatever CORS the host allows elsewhere, this answer is never shared with another origin.
    for (const name of ['Access-Control-Allow-Origin', 'Access-Control-Allow-Credentials', 'Access-Control-Expose-Headers']) {
      (res as { removeHeader?: (n: string) => void }).removeHeader?.(name);
    }
    const headers = rawRequest(req).headers as IncomingMessage['headers'];
    const site = headers['sec-fetch-site'];
    // A browser without Fetch Metadata still sends Origin on a cross-origin fetch: it must name this very host.
    if ((site !== undefined && site !== 'same-origin') || !sameOrigin(headers.origin, headers.host)) {
      sendJson(res, 403, { error: 'forbidden' });
      return;
    }
    const guard = app.get<unknown>(PW_ADMIN_GUARD);
    const token = guard instanceof AdminAuthGuard ? presentedToken(headers.authorization, { basic: true }) : null;
    if (!(guard instanceof AdminAuthGuard) || token === null) {
      sendJson(res, 404, { error: 'not_found' });
      return;
    }
    // The docs' check passed on this very header; checked again, so that nothing else is ever answered.
    try {
      guard.check(headers.authorization, { basic: true });
    } catch {
      sendJson(res, 401, { error: 'unauthorized' });
      return;
    }
    sendJson(res, 200, { token });
  }
}

/** Whether an `Origin` header, when sent, is this request's own host (any scheme: behind a TLS proxy the app sees http). */
function sameOrigin(origin: string | string[] | undefined, host: string | undefined): boolean {
  if (origin === undefined) return true;
  if (Array.isArray(origin) || host === undefined) return false;
  try {
    return new URL(origin).host === host;
  } catch {
    return false;
  }
}

const STATE_CHANGING = new Set(['post', 'put', 'patch', 'delete']);

/**
 * The document says what the guard does: the API routes take the bearer token only (basic auth is
 * for the docs, which the document does not list, so it declares no basic scheme), and every
 * state-changing route but the webhook answers 415 to a body that is not JSON.
 */
function apiOnlyBearer(doc: OpenAPIObject, webhooks: string): OpenAPIObject {
  const unsupported = SHARED_ERROR_DOCS[415]!;
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item as Record<string, { security?: Array<Record<string, string[]>>; responses?: Record<string, unknown> }>)) {
      if (!op || typeof op !== 'object' || !Array.isArray(op.security)) continue;
      const guarded = op.security.length > 0;
      if (guarded && STATE_CHANGING.has(method) && !path.startsWith(webhooks) && op.responses && !op.responses['415']) {
        op.responses['415'] = {
          description: unsupported.description,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' }, example: unsupported.example } },
        };
      }
    }
  }
  return doc;
}

interface GuardedRoute {
  method: string;
  /** Matches a request path; `caseless` whatever its case. */
  pattern: RegExp;
  caseless: RegExp;
  /** The route's path with each parameter as `:` (see urlTemplate). */
  template: string;
}

/** The (method, path) of every route of the given modules' controllers guarded by AdminGuard. */
function guardedRoutes(modules: Type[], base: string): GuardedRoute[] {
  const out: GuardedRoute[] = [];
  for (const module of modules) {
    const controllers: Type[] = Reflect.getMetadata(MODULE_METADATA.CONTROLLERS, module) ?? [];
    for (const controller of controllers) {
      const classGuards: unknown[] = Reflect.getMetadata(GUARDS_METADATA, controller) ?? [];
      const prefix = pathsOf(Reflect.getMetadata(PATH_METADATA, controller));
      for (const name of Object.getOwnPropertyNames(controller.prototype)) {
        const handler = controller.prototype[name];
        if (name === 'constructor' || typeof handler !== 'function') continue;
        const requestMethod: RequestMethod | undefined = Reflect.getMetadata(METHOD_METADATA, handler);
        if (requestMethod === undefined) continue;
        const guards: unknown[] = [...classGuards, ...(Reflect.getMetadata(GUARDS_METADATA, handler) ?? [])];
        if (!guards.includes(AdminGuard)) continue;
        for (const route of pathsOf(Reflect.getMetadata(PATH_METADATA, handler))) {
          for (const ctl of prefix) {
            out.push({
              method: RequestMethod[requestMethod],
              pattern: routePattern([base, ctl, route], false),
              caseless: routePattern([base, ctl, route], true),
              template: urlTemplate([base, ctl, route].join('/')),
            });
          }
        }
      }
    }
  }
  return out;
}

function pathsOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.map(String);
  return [value === undefined ? '' : String(value)];
}

/** `/orders/:id/mark-paid` as a regular expression: a parameter is one non-empty segment; an optional trailing slash. */
function routePattern(parts: string[], ignoreCase: boolean): RegExp {
  const segments = parts.flatMap((p) => p.split('/')).filter((s) => s.length > 0);
  const body = segments.map((s) => (s.startsWith(':') ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
  return new RegExp(`^/${body}/?$`, ignoreCase ? 'i' : '');
}

/** `/pay/orders/:id/` as `/pay/orders/:`: a registered route's path whatever its parameters are called. */
function urlTemplate(url: string): string {
  const segments = url.split('/').filter((s) => s.length > 0);
  return `/${segments.map((s) => (s.startsWith(':') ? ':' : s)).join('/')}`;
}

/** The path with the percent escapes of each segment decoded, `%2F` kept (it separates no segment); a malformed escape stays as written. */
function decodeSegments(path: string): string {
  if (!path.includes('%')) return path;
  const decode = (text: string) => {
    try {
      return decodeURIComponent(text);
    } catch {
      return text;
    }
  };
  return path
    .split('/')
    .map((segment) => segment.split(/%2f/i).map(decode).join('%2F'))
    .join('/');
}

function resolvable(name: string): boolean {
  try {
    createRequire(__filename).resolve(name);
    return true;
  } catch {
    return false;
  }
}
