import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as ts from 'typescript';

/**
 * The TypeScript snippets of the README and of every doc compile against the package as a host
 * imports it (`nestjs-payment-webhooks`, `nestjs-payment-webhooks/testing`), in a project as
 * `nest new` makes one: the compiler options of the Nest CLI 12's application template (the
 * repository's devDependency `@nestjs/schematics`, its default ES-module variant: `nodenext`,
 * `isolatedModules`, `emitDecoratorMetadata`) and a package.json of `"type": "module"`. A doc that
 * drifts from the API, or from what such a project accepts (`./app.module` without `.js`, a type in
 * a decorated signature imported without `type`), fails here.
 *
 * Each ```ts block of a doc is a file of its own; a block whose first line is a comment naming a
 * path (`// src/acme/acme.provider.ts`) is that file, so that another block of the same doc can
 * import it (`./acme/acme.provider.js`). `// src/main.ts, on Fastify` is a variant of that file,
 * compiled beside it. The files exist only in the compiler's view, under docs/.snippets/, never
 * on disk.
 */
const REPO = join(__dirname, '..', '..');
/** The README and every doc: each of their ts blocks is a whole file a host could write. */
const DOCS = ['README.md', ...readdirSync(join(REPO, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
const SNIPPETS = join(REPO, 'docs', '.snippets');
/** The tsconfig.json that `nest new` writes (ES modules, the default of the Nest CLI 12). */
const TEMPLATE = join(dirname(require.resolve('@nestjs/schematics/package.json', { paths: [REPO] })), 'dist', 'lib', 'application', 'files', 'ts-esm');

interface Snippet {
  doc: string;
  line: number;
  path: string;
  code: string;
}

function snippetsOf(doc: string): Snippet[] {
  const text = readFileSync(join(REPO, doc), 'utf8');
  const out: Snippet[] = [];
  const fence = /^```ts\n([\s\S]*?)^```$/gm;
  for (let m = fence.exec(text); m; m = fence.exec(text)) {
    const code = m[1];
    const named = /^\/\/ ((?:[\w.-]+\/)*[\w.-]+)\.ts(?:, ([\w ]+))?\n/.exec(code);
    const line = text.slice(0, m.index).split('\n').length;
    const base = join(SNIPPETS, doc.replace(/[/.]/g, '_'));
    // A variant (`// src/main.ts, on Fastify`) is a file of its own beside the one it varies.
    const file = named ? `${named[1]}${named[2] ? `.${named[2].toLowerCase().replace(/ /g, '-')}` : ''}.ts` : `snippet-${line}.ts`;
    out.push({ doc, line, path: join(base, file), code });
  }
  // The files of `nest new` a doc's files import (`./app.controller.js`) and do not define.
  for (const name of ['app.controller.ts', 'app.service.ts']) {
    const path = join(SNIPPETS, doc.replace(/[/.]/g, '_'), 'src', name);
    if (out.some((s) => s.path === path) || !out.some((s) => s.code.includes(`'./${name.replace(/\.ts$/, '.js')}'`))) continue;
    out.push({ doc: `nest new (${doc})`, line: 0, path, code: readFileSync(join(TEMPLATE, 'src', name), 'utf8') });
  }
  return out;
}

/** The compiler options of the template's tsconfig.json (`strict` as `nest new` sets it by default). */
function nestNewOptions(): ts.CompilerOptions {
  const text = readFileSync(join(TEMPLATE, 'tsconfig.json'), 'utf8').replace('<%= strict %>', 'true');
  const { config, error } = ts.parseConfigFileTextToJson('tsconfig.json', text);
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'));
  // The template's test globals are vitest's; the repository has Jest's, of the same shape.
  config.compilerOptions.types = ['node', 'jest'];
  const parsed = ts.convertCompilerOptionsFromJson(config.compilerOptions, SNIPPETS);
  expect(parsed.errors).toEqual([]);
  return parsed.options;
}

function compile(snippets: Snippet[]): string[] {
  const options: ts.CompilerOptions = {
    ...nestNewOptions(),
    noEmit: true,
    declaration: false,
    incremental: false,
    // The package's sources, which `paths` brings in, are outside the snippets' folder; nothing is emitted.
    rootDir: REPO,
    noUnusedLocals: true,
    paths: {
      'nestjs-payment-webhooks': [join(REPO, 'src', 'index.ts')],
      'nestjs-payment-webhooks/testing': [join(REPO, 'src', 'testing', 'index.ts')],
    },
  };
  const files = new Map(snippets.map((s) => [s.path, s.code]));
  // The project's package.json, as `nest new` writes it: every snippet is an ES module.
  const manifest = new Map([[join(SNIPPETS, 'package.json'), JSON.stringify({ name: 'snippets', private: true, type: 'module' })]]);
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile, directoryExists } = host;
  host.fileExists = (name) => files.has(name) || manifest.has(name) || fileExists.call(host, name);
  host.directoryExists = (name) => [...files.keys()].some((f) => f.startsWith(`${name}/`)) || (directoryExists?.call(host, name) ?? false);
  host.readFile = (name) => files.get(name) ?? manifest.get(name) ?? readFile.call(host, name);
  host.getSourceFile = (name, language, ...rest) =>
    files.has(name) ? ts.createSourceFile(name, files.get(name)!, language) : getSourceFile.call(host, name, language, ...rest);
  const program = ts.createProgram([...files.keys()], options, host);
  // Only the snippets' own problems: the package's sources are type-checked by the build.
  return ts
    .getPreEmitDiagnostics(program)
    .filter((d) => d.file && files.has(d.file.fileName))
    .map((d) => {
      const snippet = snippets.find((s) => s.path === d.file!.fileName)!;
      const { line } = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
      return `${snippet.doc}:${snippet.line + 1 + line}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
    });
}

/** Snippets a nest-new project refuses, compiled with the others: the check can fail. */
const BROKEN: Snippet[] = [
  {
    // A type error against the package.
    doc: 'broken.md',
    line: 1,
    path: join(SNIPPETS, 'broken', 'types.ts'),
    code: "import { hmacProvider } from 'nestjs-payment-webhooks';\nexport const p = hmacProvider({ name: 1 });\n",
  },
  {
    // A relative import without its extension, in an ES module: TS2835.
    doc: 'extensionless.md',
    line: 1,
    path: join(SNIPPETS, 'broken', 'main.ts'),
    code: "import { AppModule } from './app.module';\nexport const m = AppModule;\n",
  },
  {
    doc: 'broken.md',
    line: 1,
    path: join(SNIPPETS, 'broken', 'app.module.ts'),
    code: 'export class AppModule {}\n',
  },
  {
    // A type in a decorated signature imported as a value, with isolatedModules and emitDecoratorMetadata: TS1272.
    doc: 'value-import.md',
    line: 1,
    path: join(SNIPPETS, 'broken', 'licences.ts'),
    code: [
      "import { Injectable } from '@nestjs/common';",
      "import { OnPaymentEvent, PaymentWebhooksEvent } from 'nestjs-payment-webhooks';",
      '',
      '@Injectable()',
      'export class Licences {',
      "  @OnPaymentEvent('order.paid')",
      '  async grant(event: PaymentWebhooksEvent): Promise<void> {',
      '    void event;',
      '  }',
      '}',
      '',
    ].join('\n'),
  },
];

/** The docs that have ts snippets. */
const WITH_SNIPPETS = DOCS.filter((doc) => snippetsOf(doc).length > 0);

describe('the docs compile as a nest-new project compiles them', () => {
  let errors: string[];
  // One program for every doc (compiling the package's sources once).
  beforeAll(() => {
    errors = compile([...DOCS.flatMap(snippetsOf), ...BROKEN]);
  }, 120_000);

  it("the template's compiler options are the ones the issue names", () => {
    expect(nestNewOptions()).toMatchObject({
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      isolatedModules: true,
      emitDecoratorMetadata: true,
      experimentalDecorators: true,
      strict: true,
    });
    expect(JSON.parse(readFileSync(join(TEMPLATE, 'package.json'), 'utf8').replace(/<%[^%]*%>/g, '')).type).toBe('module');
  });

  it('every doc with ts snippets is checked, the README among them', () => {
    expect(WITH_SNIPPETS).toEqual(expect.arrayContaining(['README.md', 'docs/carriers.md', 'docs/embedding.md', 'docs/events.md', 'docs/providers.md']));
  });

  it.each(WITH_SNIPPETS)('%s: every ts snippet compiles against the package', (doc) => {
    expect(errors.filter((e) => e.startsWith(`${doc}:`) || e.startsWith(`nest new (${doc}):`))).toEqual([]);
  });

  it("the README's files import nest new's own AppController and AppService, as the template writes them", () => {
    expect(snippetsOf('README.md').filter((s) => s.doc === 'nest new (README.md)').map((s) => s.path.slice(s.path.lastIndexOf('/') + 1))).toEqual([
      'app.controller.ts',
      'app.service.ts',
    ]);
  });

  it("the worked example of docs/providers.md is the example host's provider, as it is", () => {
    const [acme] = snippetsOf('docs/providers.md').filter((s) => s.path.endsWith('acme/acme.provider.ts'));
    const example = readFileSync(join(REPO, 'examples', 'host-app', 'src', 'acme', 'acme.provider.ts'), 'utf8');
    expect(acme.code).toBe(`// src/acme/acme.provider.ts\n${example}`);
  });

  it('a snippet with a type error fails (the check can fail)', () => {
    expect(errors.filter((e) => e.startsWith('broken.md:')).length).toBeGreaterThan(0);
  });

  it("an extensionless relative import fails, as in a nest-new project (TS2307, TS2835)", () => {
    expect(errors.filter((e) => e.startsWith('extensionless.md:'))).toEqual([expect.stringMatching(/Cannot find module '\.\/app\.module'|Relative import paths need explicit file extensions/)]);
  });

  it('a type in a decorated signature imported without `type` fails, as in a nest-new project (TS1272)', () => {
    expect(errors.filter((e) => e.startsWith('value-import.md:'))).toEqual([expect.stringMatching(/must be imported with 'import type'/)]);
  });
});
