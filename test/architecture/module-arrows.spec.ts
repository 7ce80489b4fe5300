import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/**
 * Arrows point one way, from the top of the house to its foot (docs/design.md, "Modules"):
 *
 *   root (the dynamic module, configure-app, the standalone service), cli
 *   operations → webhooks → payments → outbox ← fulfillment, events;   health
 *   observability → database, http;   jobs;   database, http → config → providers → common
 *
 * A lower folder never imports a higher one, and a context learns what a higher one did through an
 * event in the same transaction, never by importing it. This test reads every import under src/
 * and fails on any arrow that points up, and on any import cycle between files.
 */
const SRC = join(__dirname, '..', '..', 'src');

/** The foundation, from the ground up: each folder and what it may import. */
const FOUNDATION: Record<string, readonly string[]> = {
  common: [],
  providers: ['common'],
  config: ['common', 'providers'],
  database: ['common', 'config'],
  http: ['common', 'config'],
  jobs: ['common', 'config'],
  observability: ['common', 'config', 'database', 'http'],
  testing: ['common', 'config', 'providers'],
};
const FOOT = Object.keys(FOUNDATION);

/** Each context, and the contexts it may import (the foundation it may always). */
const CONTEXTS: Record<string, readonly string[]> = {
  outbox: [],
  payments: ['outbox'],
  fulfillment: ['outbox'],
  events: ['outbox'],
  health: [],
  webhooks: ['payments', 'outbox'],
  operations: ['webhooks', 'payments', 'fulfillment', 'outbox'],
};

/** Everything a folder may import; the cli (the top floor) may import any folder but the root files. */
const MAY_IMPORT: Record<string, readonly string[]> = {
  ...FOUNDATION,
  ...Object.fromEntries(Object.entries(CONTEXTS).map(([c, others]) => [c, [...FOOT, ...others]])),
  cli: [...FOOT, ...Object.keys(CONTEXTS)],
};
const FOLDERS = Object.keys(MAY_IMPORT);

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return path.endsWith('.ts') && !path.endsWith('.spec.ts') ? [path] : [];
  });
}

/** What an import of `file` lands in: a top folder under src/, `root` for a file directly in src/, or null for a package. */
function targetFolder(file: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  const target = relative(SRC, resolve(dirname(file), specifier));
  if (target.startsWith('..')) return null;
  const parts = target.split(sep);
  // A folder's own index (`../providers`) lands in that folder, not among the root's files.
  if (parts.length === 1 && existsSync(join(SRC, target)) && statSync(join(SRC, target)).isDirectory()) return target;
  return parts.length === 1 ? 'root' : parts[0];
}

function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+['"]([^'"]+)['"]/g)].map((m) => m[1]);
  const bare = [...text.matchAll(/(?:^|\n)\s*import\s+['"]([^'"]+)['"]/g)].map((m) => m[1]);
  const dynamic = [...text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1]);
  return [...found, ...bare, ...dynamic];
}

function violations(folder: string, allowed: readonly string[]): string[] {
  const out: string[] = [];
  for (const file of files(join(SRC, folder))) {
    for (const specifier of imports(file)) {
      const target = targetFolder(file, specifier);
      if (target && target !== folder && !allowed.includes(target)) {
        out.push(`${relative(SRC, file)} imports ${specifier} (${folder} → ${target})`);
      }
    }
  }
  return out;
}

/** The file an import names, or null for a package (a folder import resolves to its index). */
function resolveFile(file: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  const base = resolve(dirname(file), specifier.replace(/\.js$/, ''));
  for (const candidate of [`${base}.ts`, join(base, 'index.ts')]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not this one
    }
  }
  return null;
}

/** Every cycle of imports between files, each as the files it runs through. */
function cycles(): string[][] {
  const graph = new Map<string, string[]>();
  for (const file of files(SRC)) {
    graph.set(file, imports(file).map((s) => resolveFile(file, s)).filter((f): f is string => f !== null && f.startsWith(SRC)));
  }
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push(stack.slice(stack.indexOf(next)).map((f) => relative(SRC, f)));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return found;
}

describe('arrows point one way', () => {
  it('every folder under src/ has its place in the table', () => {
    const folders = readdirSync(SRC).filter((name) => statSync(join(SRC, name)).isDirectory());
    expect(folders.filter((f) => !FOLDERS.includes(f))).toEqual([]);
  });

  it.each(FOOT)('src/%s imports only the foundation below it', (folder) => {
    expect(violations(folder, MAY_IMPORT[folder])).toEqual([]);
  });

  it.each(Object.keys(CONTEXTS))('src/%s imports only the foundation and the contexts below it', (context) => {
    expect(violations(context, MAY_IMPORT[context])).toEqual([]);
  });

  it('src/cli imports no root file (it runs beside the module, not inside it)', () => {
    expect(violations('cli', MAY_IMPORT.cli)).toEqual([]);
  });

  it('nothing under src/payments imports src/webhooks, nothing under src/fulfillment imports src/payments', () => {
    expect(violations('payments', FOLDERS.filter((c) => c !== 'webhooks'))).toEqual([]);
    expect(violations('fulfillment', FOLDERS.filter((c) => c !== 'payments'))).toEqual([]);
  });

  it('no two files import each other, directly or through others', () => {
    expect(cycles()).toEqual([]);
  });

  it('the checks find an import that points the wrong way (they can fail)', () => {
    const file = join(SRC, 'payments', 'example.ts');
    expect(targetFolder(file, '../webhooks/inbox-queue.service')).toBe('webhooks');
    expect(targetFolder(file, './payment.entity')).toBe('payments');
    expect(targetFolder(file, '../configure-app')).toBe('root');
    expect(targetFolder(file, '@nestjs/common')).toBeNull();
    expect(imports(join(SRC, 'webhooks', 'webhooks.module.ts'))).toContain('../payments/payments.module');
    // A foundation folder that imported a context would be named.
    expect(MAY_IMPORT.config.includes('fulfillment')).toBe(false);
    expect(MAY_IMPORT.database.includes('payments')).toBe(false);
  });
});
