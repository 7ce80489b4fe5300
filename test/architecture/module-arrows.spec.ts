import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/**
 * Arrows point one way (ARCHITECTURE "Modules"): Webhooks → Payments → Outbox ← Fulfillment,
 * Events; Operations, the operator's surface, sits on top. A lower context learns what a higher
 * one did through an event in the same transaction, never by importing it. This test reads every
 * import under src/ and fails when one points the wrong way.
 */
const SRC = join(__dirname, '..', '..', 'src');

/** Each context, and the contexts it may import. */
const MAY_IMPORT: Record<string, readonly string[]> = {
  outbox: [],
  payments: ['outbox'],
  fulfillment: ['outbox'],
  events: ['outbox'],
  webhooks: ['payments', 'outbox'],
  operations: ['webhooks', 'payments', 'outbox'],
};
const CONTEXTS = Object.keys(MAY_IMPORT);
/** Shared code every context may use; it imports no context itself. */
const SHARED = ['common', 'http'];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return files(path);
    return path.endsWith('.ts') && !path.endsWith('.spec.ts') ? [path] : [];
  });
}

/** The top folder under src/ an import of `file` lands in, or null for a package. */
function targetFolder(file: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  const target = relative(SRC, resolve(dirname(file), specifier));
  if (target.startsWith('..')) return null;
  return target.split(sep)[0];
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
      if (target && target !== folder && CONTEXTS.includes(target) && !allowed.includes(target)) {
        out.push(`${relative(SRC, file)} imports ${specifier} (${folder} → ${target})`);
      }
    }
  }
  return out;
}

describe('module arrows point one way', () => {
  it.each(CONTEXTS)('src/%s imports only the contexts below it', (context) => {
    expect(violations(context, MAY_IMPORT[context])).toEqual([]);
  });

  it.each(SHARED)('src/%s imports no context', (folder) => {
    expect(violations(folder, [])).toEqual([]);
  });

  it('nothing under src/payments imports src/webhooks, nothing under src/fulfillment imports src/payments', () => {
    expect(violations('payments', CONTEXTS.filter((c) => c !== 'webhooks'))).toEqual([]);
    expect(violations('fulfillment', CONTEXTS.filter((c) => c !== 'payments'))).toEqual([]);
  });

  it('the check finds an import that points the wrong way (it can fail)', () => {
    const file = join(SRC, 'payments', 'example.ts');
    expect(targetFolder(file, '../webhooks/inbox-queue.service')).toBe('webhooks');
    expect(targetFolder(file, './payment.entity')).toBe('payments');
    expect(targetFolder(file, '@nestjs/common')).toBeNull();
    expect(imports(join(SRC, 'webhooks', 'webhooks.module.ts'))).toContain('../payments/payments.module');
  });
});
