/**
 * The import rules that keep the code's arrows one way, checked over every .ts/.tsx file of the project (its
 * static `import` / `export … from` and `import()` with a string literal, type-only ones included):
 *
 *   (a) lib/ outside lib/runtime/ is the shared library both builds run: it imports no Node builtin (`node:*`
 *       or bare), no database driver (`libsql`, `@libsql/*`), not `cloudflare:workers`, nothing of a runtime
 *       (lib/runtime/) and nothing of the routes (functions/). The runtimes pass in what differs.
 *   (b) the top-level folders (lib, functions, schema, client, cli, mcp, dashboard, admin, bench, scripts)
 *       import one another without a cycle, and none of the shipped ones (all but bench and scripts) imports
 *       scripts/, the build and dev scripts. Tests import anything and are not counted.
 *   (c) no module imports itself round through others: the modules of the project (tests aside) form no
 *       cycle, type-only imports included.
 *   (d) no source module is over MAX_LINES lines: a larger one is split by job.
 *   (e) the API client all clients share (client/http/) is web-standard, so that the dashboard's bundle can
 *       hold it: no Node builtin, and what it loads at run time is client/http/ and client/errors.ts alone
 *       (the wire schemas only as types: no zod in the browser).
 *   (f) the dashboard talks to the API through that client: dashboard/src/api.ts builds on it, and no
 *       dashboard file names a /v1 route in a string or calls fetch for one (fetch is called only for the
 *       client's transport and the server's /health probe, config.json and the identity provider's discovery).
 *   (g) lib/ has named layers: lib/core/ (pure modules: the page model, the differ and merge, the SSE reader,
 *       the search query language, the errors and the refusal catalogue), lib/framework/ (app, routes, OpenAPI,
 *       dependencies, configuration, HTTP plumbing), lib/usecases/ (what the routes ask for) and the stores and
 *       services beside them. The clients (client/, cli/, mcp/, dashboard/) import of lib/ only lib/core/.
 *   (h) lib/core/ imports nothing of the project but lib/core/ and schema/, and no Node builtin: the
 *       clients and both builds load it as it is.
 *
 * A failure lists each offending file → import (each cycle with the imports that make it), or file and size.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
/** Folders that are no source of the project. */
const SKIP = new Set(['node_modules', 'dist', '.git', 'coverage', 'service-data', 'test-artifacts', '.tmp']);
/** The folders whose graph must be acyclic. */
const FOLDERS = ['lib', 'functions', 'schema', 'client', 'cli', 'mcp', 'dashboard', 'admin', 'bench', 'scripts'];
/** The folders that import nothing of scripts/ (the image ships them; scripts/ is the build and dev tooling). */
const SHIPPED = ['lib', 'functions', 'schema', 'client', 'cli', 'mcp', 'dashboard', 'admin'];
/** The most lines a source module may have (rule d). */
const MAX_LINES = 800;

/** Every .ts/.tsx file under `dir`, as paths relative to ROOT with `/`. */
function sources(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    if (SKIP.has(e.name)) continue;
    const rel = dir === '' ? e.name : `${dir}/${e.name}`;
    if (e.isDirectory()) sources(rel, out);
    else if (/\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

export interface Import {
  file: string;
  /** As written. */
  spec: string;
  /** For a relative import: the path it names, relative to ROOT with `/`. */
  target: string | null;
}

/** The imports of one file's text (`file` relative to ROOT). */
export function importsOf(file: string, text: string): Import[] {
  const info = ts.preProcessFile(text, true, true);
  return info.importedFiles.map(({ fileName: spec }) => {
    const target = spec.startsWith('.') ? normalize(join(dirname(file), spec)).split(sep).join('/') : null;
    return { file, spec, target };
  });
}

const NODE_BUILTINS = new Set(builtinModules);
const under = (path: string, dir: string) => path === dir || path.startsWith(`${dir}/`);

/** Rule (a): what a shared lib/ file may not import, as "file → import" lines. */
export function sharedLibViolations(imports: readonly Import[]): string[] {
  const out: string[] = [];
  for (const i of imports) {
    if (!under(i.file, 'lib') || under(i.file, 'lib/runtime')) continue;
    const bare = i.spec.split('/')[0]!;
    const bad =
      i.spec.startsWith('node:') ||
      NODE_BUILTINS.has(i.spec) ||
      NODE_BUILTINS.has(bare) ||
      i.spec === 'libsql' ||
      i.spec.startsWith('@libsql/') ||
      i.spec === 'cloudflare:workers' ||
      (i.target !== null && (under(i.target, 'functions') || under(i.target, 'lib/runtime')));
    if (bad) out.push(`${i.file} → ${i.spec}`);
  }
  return out;
}

/** The strongly connected components of more than one node of a directed graph (Tarjan's), each sorted. */
function components(nodes: readonly string[], next: (v: string) => Iterable<string>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        c.push(w);
      } while (w !== v);
      if (c.length > 1) out.push(c.sort());
    }
  };
  for (const v of nodes) if (!index.has(v)) visit(v);
  return out;
}

/** The relative imports of one file that load code at run time (`import type` and `export type` left out), as ROOT paths. */
export function runtimeImportsOf(file: string, text: string): Import[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const out: Import[] = [];
  const add = (spec: string) => out.push({ file, spec, target: spec.startsWith('.') ? normalize(join(dirname(file), spec)).split(sep).join('/') : null });
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined && clause.namedBindings !== undefined && ts.isNamedImports(clause.namedBindings) && clause.namedBindings.elements.length > 0 && clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      if (!typeOnly) add(node.moduleSpecifier.text);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      if (!node.isTypeOnly) add(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
      add(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** Rule (e): what the shared API client loads at run time beyond client/http/ and client/errors.ts, as "file → import" lines. */
export function sharedClientViolations(files: ReadonlyArray<{ file: string; text: string }>): string[] {
  const out: string[] = [];
  for (const { file, text } of files) {
    if (!under(file, 'client/http')) continue;
    for (const i of importsOf(file, text)) {
      const bare = i.spec.split('/')[0]!;
      if (i.spec.startsWith('node:') || NODE_BUILTINS.has(i.spec) || NODE_BUILTINS.has(bare)) out.push(`${file} → ${i.spec}`);
    }
    for (const i of runtimeImportsOf(file, text)) {
      if (i.spec.startsWith('node:') || NODE_BUILTINS.has(i.spec.split('/')[0]!)) continue; // reported above
      if (i.target === null || !(under(i.target, 'client/http') || i.target === 'client/errors.ts')) out.push(`${file} → ${i.spec}`);
    }
  }
  return out;
}

/** Where a dashboard file names a /v1 route in a string or template, or calls fetch outside the allowed files: "file:line what" lines. */
export function dashboardFetchViolations(files: ReadonlyArray<{ file: string; text: string }>): string[] {
  const FETCHERS = new Set(['dashboard/src/api.ts', 'dashboard/src/config.ts', 'dashboard/src/oidc.ts']);
  const out: string[] = [];
  for (const { file, text } of files) {
    if (!under(file, 'dashboard')) continue;
    const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
    const line = (n: ts.Node) => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
    const visit = (node: ts.Node) => {
      if ((ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) && /\/v1(\/|$|\?)/.test(node.text)) {
        out.push(`${file}:${line(node)} names a /v1 route`);
      }
      if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'fetch' && !FETCHERS.has(file)) {
        out.push(`${file}:${line(node)} calls fetch`);
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return out;
}

/**
 * The cycles of a graph given as from → to → the imports that make the arrow: each "a ↔ b ↔ …" (its nodes
 * sorted), in the order of those names.
 */
function cyclesOf(nodes: readonly string[], edges: Map<string, Map<string, string[]>>): Array<{ cycle: string; edges: string[] }> {
  return components(nodes, (v) => edges.get(v)?.keys() ?? [])
    .map((c) => ({
      cycle: c.join(' ↔ '),
      edges: c.flatMap((from) => c.flatMap((to) => edges.get(from)?.get(to) ?? [])),
    }))
    .sort((x, y) => (x.cycle < y.cycle ? -1 : x.cycle > y.cycle ? 1 : 0));
}

/** Adds the arrow `from` → `to`, made by `why`. */
function addEdge(edges: Map<string, Map<string, string[]>>, from: string, to: string, why: string): void {
  const byTo = edges.get(from) ?? new Map<string, string[]>();
  edges.set(from, byTo);
  byTo.set(to, [...(byTo.get(to) ?? []), why]);
}

/** The folders of the clients: they may import of lib/ only lib/core/ (rule g). */
const CLIENTS = ['client', 'cli', 'mcp', 'dashboard'];

/** Rule (g): a client's imports of lib/ outside lib/core/, as "file → import" lines. */
export function clientLayerViolations(imports: readonly Import[]): string[] {
  return imports
    .filter((i) => CLIENTS.some((f) => under(i.file, f)) && i.target !== null && under(i.target, 'lib') && !under(i.target, 'lib/core'))
    .map((i) => `${i.file} → ${i.spec}`);
}

/** Rule (h): what lib/core/ imports of the project outside lib/core/ and schema/, or of Node, as "file → import" lines. */
export function coreLayerViolations(imports: readonly Import[]): string[] {
  return imports
    .filter((i) => under(i.file, 'lib/core'))
    .filter((i) =>
      i.target !== null
        ? !(under(i.target, 'lib/core') || under(i.target, 'schema'))
        : i.spec.startsWith('node:') || NODE_BUILTINS.has(i.spec.split('/')[0]!),
    )
    .map((i) => `${i.file} → ${i.spec}`);
}

/** Rule (b): the folder cycles (each "a ↔ b ↔ …", its folders sorted), with the imports that make them. */
export function folderCycles(imports: readonly Import[]): Array<{ cycle: string; edges: string[] }> {
  const folderOf = (path: string) => FOLDERS.find((f) => under(path, f)) ?? null;
  const edges = new Map<string, Map<string, string[]>>();
  for (const i of imports) {
    if (i.target === null) continue;
    const from = folderOf(i.file);
    const to = folderOf(i.target);
    if (!from || !to || from === to) continue;
    addEdge(edges, from, to, `${i.file} → ${i.spec}`);
  }
  return cyclesOf(FOLDERS, edges);
}

/** Rule (b): the imports of scripts/ by a shipped folder, as "file → import" lines. */
export function scriptImports(imports: readonly Import[]): string[] {
  return imports
    .filter((i) => i.target !== null && under(i.target, 'scripts') && SHIPPED.some((f) => under(i.file, f)))
    .map((i) => `${i.file} → ${i.spec}`);
}

/**
 * Rule (c): the module cycles (each "a ↔ b ↔ …", its files sorted), with the imports that make them. Only
 * imports of the files listed count (a path that names no source, e.g. an .sql file, is no module here).
 */
export function moduleCycles(files: readonly string[], imports: readonly Import[]): Array<{ cycle: string; edges: string[] }> {
  const known = new Set(files);
  const edges = new Map<string, Map<string, string[]>>();
  for (const i of imports) {
    if (i.target !== null && known.has(i.target) && known.has(i.file)) addEdge(edges, i.file, i.target, `${i.file} → ${i.spec}`);
  }
  return cyclesOf([...files].sort(), edges);
}

/** Rule (d): the modules over `max` lines, as "file: N lines", longest first. */
export function longModules(texts: ReadonlyMap<string, string>, max = MAX_LINES): string[] {
  const lines = (t: string) => (t === '' ? 0 : t.split('\n').length - (t.endsWith('\n') ? 1 : 0));
  return [...texts]
    .map(([file, text]) => ({ file, n: lines(text) }))
    .filter((m) => m.n > max)
    .sort((a, b) => b.n - a.n || (a.file < b.file ? -1 : 1))
    .map((m) => `${m.file}: ${m.n} lines`);
}

/** Every source file of the project but the tests, with its text. */
const texts = new Map(sources('').filter((f) => !under(f, 'test')).map((f) => [f, readFileSync(join(ROOT, f), 'utf8')]));
/** The same as a list of files with their text. */
const textList = () => [...texts].map(([file, text]) => ({ file, text }));

describe('import rules', () => {
  const imports = [...texts].flatMap(([f, text]) => importsOf(f, text));

  it('reads the imports of every kind of statement', () => {
    const found = importsOf(
      'lib/x/a.ts',
      [
        "import a from 'node:fs';",
        "import type { B } from '../y/b.ts';",
        "export { c } from './c.ts';",
        "export * from 'libsql';",
        "const d = await import('../../functions/index.ts');",
      ].join('\n'),
    ).map((i) => [i.spec, i.target]);
    expect(found).toEqual([
      ['node:fs', null],
      ['../y/b.ts', 'lib/y/b.ts'],
      ['./c.ts', 'lib/x/c.ts'],
      ['libsql', null],
      ['../../functions/index.ts', 'functions/index.ts'],
    ]);
  });

  it('flags each forbidden import of a shared lib/ file, and none of a runtime file', () => {
    const lines = [
      "import { readFile } from 'node:fs/promises';",
      "import { join } from 'path';",
      "import Database from 'libsql';",
      "import { createClient } from '@libsql/client';",
      "import { DurableObject } from 'cloudflare:workers';",
      "import { routesFor } from '../../functions/index.ts';",
      "import type { NodeDeps } from '../runtime/node/server.ts';",
      "import { z } from 'zod';",
      "import { HttpError } from '../errors.ts';",
    ].join('\n');
    expect(sharedLibViolations(importsOf('lib/git/x.ts', lines))).toEqual([
      'lib/git/x.ts → node:fs/promises',
      'lib/git/x.ts → path',
      'lib/git/x.ts → libsql',
      'lib/git/x.ts → @libsql/client',
      'lib/git/x.ts → cloudflare:workers',
      'lib/git/x.ts → ../../functions/index.ts',
      'lib/git/x.ts → ../runtime/node/server.ts',
    ]);
    expect(sharedLibViolations(importsOf('lib/runtime/node/x.ts', lines))).toEqual([]);
  });

  it('finds a cycle between folders, with the imports that make it', () => {
    const found = folderCycles([
      ...importsOf('lib/a.ts', "import '../schema/s.ts';"),
      ...importsOf('schema/s.ts', "import '../functions/f.ts';"),
      ...importsOf('functions/f.ts', "import '../lib/a.ts';"),
      ...importsOf('admin/m.ts', "import '../lib/a.ts';"),
    ]);
    expect(found).toEqual([
      {
        cycle: 'functions ↔ lib ↔ schema',
        edges: ['functions/f.ts → ../lib/a.ts', 'lib/a.ts → ../schema/s.ts', 'schema/s.ts → ../functions/f.ts'],
      },
    ]);
  });

  it('(a) lib/ outside lib/runtime/ imports no Node builtin, database driver, cloudflare:workers, runtime or route', () => {
    expect(imports.length).toBeGreaterThan(1000);
    expect(sharedLibViolations(imports)).toEqual([]);
  });

  it('finds each module cycle, type-only and dynamic imports included, with the imports that make it', () => {
    const files = ['lib/a.ts', 'lib/b.ts', 'lib/c.ts', 'lib/d.ts', 'admin/x.ts', 'admin/y.ts', 'admin/z.ts'];
    const found = moduleCycles(files, [
      ...importsOf('lib/a.ts', "import type { B } from './b.ts';\nimport m from '../schema/m.sql';"),
      ...importsOf('lib/b.ts', "export { c } from './c.ts';"),
      ...importsOf('lib/c.ts', "import { a } from './a.ts';"),
      ...importsOf('lib/d.ts', "import { a } from './a.ts';"),
      ...importsOf('admin/x.ts', "const y = await import('./y.ts');"),
      ...importsOf('admin/y.ts', "import { x } from './x.ts';\nimport { z } from './z.ts';"),
      ...importsOf('admin/z.ts', "import { a } from '../lib/a.ts';"),
    ]);
    expect(found).toEqual([
      { cycle: 'admin/x.ts ↔ admin/y.ts', edges: ['admin/x.ts → ./y.ts', 'admin/y.ts → ./x.ts'] },
      { cycle: 'lib/a.ts ↔ lib/b.ts ↔ lib/c.ts', edges: ['lib/a.ts → ./b.ts', 'lib/b.ts → ./c.ts', 'lib/c.ts → ./a.ts'] },
    ]);
    expect(moduleCycles(files, importsOf('lib/d.ts', "import { a } from './a.ts';"))).toEqual([]);
  });

  it('flags a shipped folder importing scripts/, and not bench/ or scripts/ itself', () => {
    const found = scriptImports([
      ...importsOf('admin/w.ts', "import { s } from '../scripts/dev.ts';"),
      ...importsOf('lib/runtime/node/n.ts', "import type { S } from '../../../scripts/dev.ts';"),
      ...importsOf('bench/b.ts', "import { s } from '../scripts/dev.ts';"),
      ...importsOf('scripts/o.ts', "import { s } from './dev.ts';"),
    ]);
    expect(found).toEqual(['admin/w.ts → ../scripts/dev.ts', 'lib/runtime/node/n.ts → ../../../scripts/dev.ts']);
  });

  it('counts the lines of each module and lists those over the bound, longest first', () => {
    const big = (n: number, end = '\n') => Array.from({ length: n }, (_, i) => `const x${i} = ${i};`).join('\n') + end;
    const found = longModules(
      new Map([
        ['lib/at.ts', big(800)],
        ['lib/over.ts', big(801)],
        ['lib/over-no-newline.ts', big(802, '')],
        ['lib/empty.ts', ''],
      ]),
    );
    expect(found).toEqual(['lib/over-no-newline.ts: 802 lines', 'lib/over.ts: 801 lines']);
  });

  it('(b) the top-level folders import one another without a cycle', () => {
    expect(folderCycles(imports)).toEqual([]);
  });
  it('(e) flags what the shared client may not load, and lets types through', () => {
    const lines = [
      "import { request } from 'node:http';",
      "import type { z } from 'zod';",
      "import { z as zod } from 'zod';",
      "import type * as sync from '../../schema/wire/sync.ts';",
      "import { PushRequest } from '../../schema/wire/sync.ts';",
      "import { type Commit } from '../../schema/wire/common.ts';",
      "import { CliError } from '../errors.ts';",
      "import { clean } from '../output.ts';",
      "import { encodePath } from './text.ts';",
      "const m = await import('../../schema/wire/auth.ts');",
    ].join('\n');
    expect(sharedClientViolations([{ file: 'client/http/x.ts', text: lines }])).toEqual([
      'client/http/x.ts → node:http',
      'client/http/x.ts → zod',
      'client/http/x.ts → ../../schema/wire/sync.ts',
      'client/http/x.ts → ../output.ts',
      'client/http/x.ts → ../../schema/wire/auth.ts',
    ]);
    expect(sharedClientViolations([{ file: 'client/api.ts', text: lines }])).toEqual([]);
  });

  it('(e) the shared API client (client/http/) is web-standard', () => {
    const files = textList().filter((f) => under(f.file, 'client/http'));
    expect(files.map((f) => f.file)).toContain('client/http/client.ts');
    expect(sharedClientViolations(files)).toEqual([]);
  });

  it('(f) flags a dashboard file that names a /v1 route or calls fetch itself', () => {
    const text = [
      '// GET /v1/me in a comment is fine',
      "const a = '/v1/repos';",
      'const b = `${base}/v1/repos/${id}/pages`;',
      "const c = '/v1';",
      "const d = '/health';",
      'await fetch(url);',
    ].join('\n');
    expect(dashboardFetchViolations([{ file: 'dashboard/src/x.tsx', text }])).toEqual([
      'dashboard/src/x.tsx:2 names a /v1 route',
      'dashboard/src/x.tsx:3 names a /v1 route',
      'dashboard/src/x.tsx:4 names a /v1 route',
      'dashboard/src/x.tsx:6 calls fetch',
    ]);
  });

  it('(f) the dashboard uses the shared API client and has no fetch wrapper of its own for /v1 routes', () => {
    const files = textList().filter((f) => under(f.file, 'dashboard'));
    const api = files.find((f) => f.file === 'dashboard/src/api.ts');
    expect(api && runtimeImportsOf(api.file, api.text).map((i) => i.target)).toContain('client/http/client.ts');
    expect(dashboardFetchViolations(files)).toEqual([]);
  });

  it('(b) no shipped folder imports scripts/', () => {
    expect(scriptImports(imports)).toEqual([]);
  });

  it('(c) the modules import one another without a cycle', () => {
    const cycles = moduleCycles([...texts.keys()], imports);
    expect(cycles).toEqual([]);
  });

  it(`(d) no source module is over ${MAX_LINES} lines`, () => {
    expect(texts.size).toBeGreaterThan(300);
    expect(longModules(texts)).toEqual([]);
  });

  it('(g) flags a client that imports lib/ outside lib/core/', () => {
    const lines = "import { parsePage } from '../lib/core/page/parse.ts';\nimport { openRepo } from '../lib/usecases/open-repo.ts';\nimport type { Deps } from '../lib/framework/deps.ts';\nimport { z } from 'zod';";
    expect(clientLayerViolations(importsOf('client/x.ts', lines))).toEqual(['client/x.ts → ../lib/usecases/open-repo.ts', 'client/x.ts → ../lib/framework/deps.ts']);
    expect(clientLayerViolations(importsOf('functions/x.ts', lines))).toEqual([]);
  });

  it('(g) the clients import of lib/ only lib/core/', () => {
    expect(imports.filter((i) => CLIENTS.some((f) => under(i.file, f)) && i.target !== null && under(i.target, 'lib/core')).length).toBeGreaterThan(10);
    expect(clientLayerViolations(imports)).toEqual([]);
  });

  it('(h) flags lib/core/ importing the rest of lib/ or Node', () => {
    const lines = "import { R } from '../refusals.ts';\nimport type { Commit } from '../../../schema/wire/common.ts';\nimport { Deps } from '../../framework/deps.ts';\nimport { readFile } from 'node:fs/promises';\nimport { parseDocument } from 'yaml';";
    expect(coreLayerViolations(importsOf('lib/core/page/x.ts', lines))).toEqual(['lib/core/page/x.ts → ../../framework/deps.ts', 'lib/core/page/x.ts → node:fs/promises']);
  });

  it('(h) lib/core/ imports only itself, schema/ and packages', () => {
    expect(coreLayerViolations(imports)).toEqual([]);
  });
});
