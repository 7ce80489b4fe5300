import type { Type } from '@nestjs/common';
import { MODULE_PATH } from '@nestjs/common/constants.js';
import type { ModulesContainer } from '@nestjs/core';

/**
 * Puts every route of the given modules under `prefix` (option `routePrefix`), the way Nest's
 * RouterModule does: as the modules' path, read when the routes are registered (after the
 * module's providers, and so its options, exist), so it works for `forRootAsync` too. It composes
 * with a host's `setGlobalPrefix()`, which Nest puts in front.
 */
export function applyRoutePrefix(container: ModulesContainer, modules: Type[], prefix: string): void {
  if (!prefix) return;
  for (const module of modules) Reflect.defineMetadata(MODULE_PATH + container.applicationId, prefix, module);
}

/** `''` or `/a/b`, from any number of parts such as `api`, `/pay/`, ``. */
export function joinPaths(...parts: string[]): string {
  const segments = parts.flatMap((p) => p.split('/')).filter((s) => s.length > 0);
  return segments.length === 0 ? '' : `/${segments.join('/')}`;
}
