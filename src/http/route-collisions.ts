import { Inject, Injectable, RequestMethod, VersioningType, type Type } from '@nestjs/common';
import { MODULE_PATH, PATH_METADATA, VERSION_METADATA } from '@nestjs/common/constants.js';
import { ApplicationConfig, HttpAdapterHost, MetadataScanner, ModulesContainer } from '@nestjs/core';
import { PathsExplorer } from '@nestjs/core/router/paths-explorer.js';
import { RoutePathFactory } from '@nestjs/core/router/route-path-factory.js';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS } from '../config/tokens';
import { HttpSurface } from './http-surface';

/** One route as the app's router will be given it: method, full path (every prefix included), who declares it. */
export interface AppRoute {
  method: string;
  path: string;
  /** `Controller.method`, for the message. */
  handler: string;
  /** The version the route answers to when versioning is not in the URI (a header, a media type), else undefined. */
  version?: string;
}

/**
 * The start-up check that refuses a route the host already serves (docs/embedding.md#collisions-refused-at-start): a route of the module that the
 * host already serves (same method and full path: the host's global prefix, its exclusions, a
 * RouterModule path, URI versions and `routePrefix` all counted, as Nest computes them) stops the
 * start with one line naming the route and the option that moves it. It runs before Nest hands
 * any route to the HTTP platform (PaymentWebhooksModule.configure): on Fastify the duplicate would
 * otherwise crash the start with FST_ERR_DUPLICATED_ROUTE, and on Express the first route
 * registered would silently shadow the other.
 */
@Injectable()
export class RouteCollisions {
  constructor(
    @Inject(PW_OPTIONS) private readonly options: ResolvedOptions,
    private readonly container: ModulesContainer,
    private readonly appConfig: ApplicationConfig,
    private readonly adapterHost: HttpAdapterHost,
    private readonly surface: HttpSurface,
  ) {}

  /** Throws the one-line refusal when a route of `ownModules` is also a route of the host. */
  check(ownModules: Type[]): void {
    const adapter = this.adapterHost.httpAdapter;
    if (!adapter) return;
    const line = collisionMessage(this.routes(ownModules), this.options.routePrefix, ignoresCase(adapter));
    if (line) throw new Error(line);
  }

  /** Every controller route of the app, split between the module's own modules and the host's. */
  routes(ownModules: Type[]): { module: AppRoute[]; host: AppRoute[] } {
    const own = new Set<unknown>(ownModules);
    const factory = new RoutePathFactory(this.appConfig);
    const explorer = new PathsExplorer(new MetadataScanner());
    const globalPrefix = this.appConfig.getGlobalPrefix();
    const basePath = globalPrefix ? `/${globalPrefix.replace(/^\/+/, '')}` : '';
    const versioningOptions = this.appConfig.getVersioning();
    const out = { module: [] as AppRoute[], host: [] as AppRoute[] };
    for (const moduleRef of this.container.values()) {
      const metatype = moduleRef.metatype;
      const modulePath: string | undefined =
        Reflect.getMetadata(MODULE_PATH + this.container.applicationId, metatype) ?? Reflect.getMetadata(MODULE_PATH, metatype);
      const into = own.has(metatype) ? out.module : out.host;
      for (const wrapper of moduleRef.controllers.values()) {
        const controller = wrapper.metatype as Type | null;
        if (!controller) continue;
        const ctrlPaths = [Reflect.getMetadata(PATH_METADATA, controller) ?? '/'].flat().map(String);
        const controllerVersion = versioningOptions ? (Reflect.getMetadata(VERSION_METADATA, controller) ?? versioningOptions.defaultVersion) : undefined;
        const instance = wrapper.instance ?? Object.create(controller.prototype);
        for (const definition of explorer.scanForPaths(instance, controller.prototype)) {
          const methodVersion = definition.version;
          const version = versioningOptions && versioningOptions.type !== VersioningType.URI ? versionKey(methodVersion ?? controllerVersion) : undefined;
          for (const ctrlPath of ctrlPaths) {
            for (const methodPath of definition.path) {
              const paths = factory.create(
                { ctrlPath: `/${ctrlPath.replace(/^\/+/, '')}`, methodPath, modulePath, globalPrefix: basePath, controllerVersion, methodVersion, versioningOptions },
                definition.requestMethod,
              );
              for (const path of paths) {
                into.push({ method: RequestMethod[definition.requestMethod], path, handler: `${controller.name}.${definition.methodName}`, version });
              }
            }
          }
        }
      }
    }
    // The Swagger UI and its document, mounted when the app initialises (configurePaymentWebhooksApp with docs on).
    if (this.surface.servesDocs()) {
      const { docs, docsJson } = this.surface.paths();
      out.module.push({ method: 'GET', path: docs, handler: 'Swagger UI' }, { method: 'GET', path: `${docs}/*`, handler: 'Swagger UI' });
      out.module.push({ method: 'GET', path: docsJson, handler: 'OpenAPI document' });
    }
    return out;
  }
}

/**
 * The one line that refuses the start, or null: the first route of the module the host also
 * serves, by method and full path (a parameter whatever its name; case folded where the router
 * ignores it), and how many more collide.
 */
export function collisionMessage(routes: { module: AppRoute[]; host: AppRoute[] }, routePrefix: string, ignoreCase: boolean): string | null {
  const found: Array<{ module: AppRoute; host: AppRoute }> = [];
  for (const mine of routes.module) {
    const theirs = routes.host.find((h) => sameMethod(h.method, mine.method) && h.version === mine.version && samePath(h.path, mine.path, ignoreCase));
    if (theirs) found.push({ module: mine, host: theirs });
  }
  if (found.length === 0) return null;
  const [first, ...others] = found;
  const route = `${first.module.method} ${first.module.path}`;
  const more = others.length === 0 ? '' : ` (and ${others.length} more: ${others.map((c) => `${c.module.method} ${c.module.path}`).join(', ')})`;
  const move = routePrefix
    ? `give the option routePrefix (now '${routePrefix}') a value the host does not use`
    : `set the option routePrefix (for example routePrefix: 'pay') to move the module's routes under a path of their own`;
  return `payment-webhooks: route ${route} of the module is already served by the host (${first.host.handler})${more}; ${move}`;
}

function sameMethod(a: string, b: string): boolean {
  return a === b || a === 'ALL' || b === 'ALL';
}

/** Same route for a router: parameters match whatever their names, a `/*` tail matches anything under it. */
function samePath(hostPath: string, modulePath: string, ignoreCase: boolean): boolean {
  const norm = (p: string) => template(ignoreCase ? p.toLowerCase() : p);
  const host = norm(hostPath);
  const mine = norm(modulePath);
  if (host === mine) return true;
  if (mine.endsWith('/*')) {
    const base = mine.slice(0, -2);
    return host.startsWith(`${base}/`) && host !== base;
  }
  return false;
}

/** `/pay/orders/:id/` as `/pay/orders/:`. */
function template(path: string): string {
  const segments = path.split('/').filter((s) => s.length > 0);
  return `/${segments.map((s) => (s.startsWith(':') ? ':' : s)).join('/')}`;
}

function versionKey(version: unknown): string | undefined {
  if (version === undefined) return undefined;
  return [version].flat().map(String).sort().join(',');
}

/** Express routes ignore case; Fastify's do not, unless the host configured it so. */
function ignoresCase(adapter: { getType(): string; getInstance(): any }): boolean {
  if (adapter.getType() !== 'fastify') return adapter.getInstance()?.enabled?.('case sensitive routing') !== true;
  const config = adapter.getInstance()?.initialConfig;
  return config?.caseSensitive === false || config?.routerOptions?.caseSensitive === false;
}
