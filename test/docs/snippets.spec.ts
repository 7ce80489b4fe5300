import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';

/**
 * The TypeScript snippets of the docs compile against the package as a host imports it
 * (`nestjs-payment-webhooks`, `nestjs-payment-webhooks/testing`), with the repository's compiler
 * options: a doc that drifts from the API fails here. Each ```ts block of a doc is a file of its
 * own; a block whose first line is a comment naming a path (`// src/acme/acme.provider.ts`) is that
 * file, so that another block of the same doc can import it (`./acme/acme.provider`). The files
 * exist only in the compiler's view, under docs/.snippets/, never on disk.
 */
const REPO = join(__dirname, '..', '..');
/** The docs whose snippets are whole files a host could write. */
const DOCS = ['docs/providers.md'];

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
    const named = /^\/\/ ((?:[\w.-]+\/)*[\w.-]+\.ts)\n/.exec(code)?.[1];
    const line = text.slice(0, m.index).split('\n').length;
    const base = join(REPO, 'docs', '.snippets', doc.replace(/[/.]/g, '_'));
    out.push({ doc, line, path: join(base, named ?? `snippet-${line}.ts`), code });
  }
  return out;
}

function compile(snippets: Snippet[]): string[] {
  const options: ts.CompilerOptions = {
    ...ts.parseJsonConfigFileContent(ts.readConfigFile(join(REPO, 'tsconfig.json'), ts.sys.readFile).config, ts.sys, REPO).options,
    noEmit: true,
    declaration: false,
    noUnusedLocals: true,
    paths: {
      'nestjs-payment-webhooks': [join(REPO, 'src', 'index.ts')],
      'nestjs-payment-webhooks/testing': [join(REPO, 'src', 'testing', 'index.ts')],
    },
  };
  const files = new Map(snippets.map((s) => [s.path, s.code]));
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile, directoryExists } = host;
  host.fileExists = (name) => files.has(name) || fileExists.call(host, name);
  host.directoryExists = (name) => [...files.keys()].some((f) => f.startsWith(`${name}/`)) || (directoryExists?.call(host, name) ?? false);
  host.readFile = (name) => files.get(name) ?? readFile.call(host, name);
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

/** A snippet with a type error, compiled with the others: the check can fail. */
const BROKEN: Snippet = {
  doc: 'broken.md',
  line: 1,
  path: join(REPO, 'docs', '.snippets', 'broken.ts'),
  code: "import { hmacProvider } from 'nestjs-payment-webhooks';\nexport const p = hmacProvider({ name: 1 });\n",
};

describe('the docs compile', () => {
  let errors: string[];
  // One program for every doc (compiling the package's sources once).
  beforeAll(() => {
    errors = compile([...DOCS.flatMap(snippetsOf), BROKEN]);
  }, 120_000);

  it.each(DOCS)('%s: every ts snippet compiles against the package', (doc) => {
    expect(snippetsOf(doc).length).toBeGreaterThan(0);
    expect(errors.filter((e) => e.startsWith(`${doc}:`))).toEqual([]);
  });

  it("the worked example of docs/providers.md is the example host's provider, as it is", () => {
    const [acme] = snippetsOf('docs/providers.md').filter((s) => s.path.endsWith('acme/acme.provider.ts'));
    const example = readFileSync(join(REPO, 'examples', 'host-app', 'src', 'acme', 'acme.provider.ts'), 'utf8');
    expect(acme.code).toBe(`// src/acme/acme.provider.ts\n${example}`);
  });

  it('a snippet with a type error fails (the check can fail)', () => {
    expect(errors.filter((e) => e.startsWith('broken.md:')).length).toBeGreaterThan(0);
  });
});
