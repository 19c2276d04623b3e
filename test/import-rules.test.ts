/**
 * The import rules that keep the code's arrows one way, checked over every .ts/.tsx file of the project (its
 * static `import` / `export … from` and `import()` with a string literal, type-only ones included):
 *
 *   (a) lib/ outside lib/runtime/ is the shared library both builds run: it imports no Node builtin (`node:*`
 *       or bare), no database driver (`libsql`, `@libsql/*`), not `cloudflare:workers`, nothing of a runtime
 *       (lib/runtime/) and nothing of the routes (functions/). The runtimes pass in what differs.
 *   (b) the top-level folders (lib, functions, schema, client, cli, mcp, dashboard, admin, bench) import one
 *       another without a cycle. Tests import anything and are not counted.
 *
 * A failure lists each offending file → import.
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
const FOLDERS = ['lib', 'functions', 'schema', 'client', 'cli', 'mcp', 'dashboard', 'admin', 'bench'];

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

/** Rule (b): the folder cycles (each "a ↔ b ↔ …", its folders sorted), with the imports that make them. */
export function folderCycles(imports: readonly Import[]): Array<{ cycle: string; edges: string[] }> {
  const folderOf = (path: string) => FOLDERS.find((f) => under(path, f)) ?? null;
  const edges = new Map<string, Map<string, string[]>>();
  for (const i of imports) {
    if (i.target === null) continue;
    const from = folderOf(i.file);
    const to = folderOf(i.target);
    if (!from || !to || from === to) continue;
    const byTo = edges.get(from) ?? new Map<string, string[]>();
    edges.set(from, byTo);
    byTo.set(to, [...(byTo.get(to) ?? []), `${i.file} → ${i.spec}`]);
  }
  // Tarjan's strongly connected components: every component of more than one folder is a cycle.
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)?.keys() ?? []) {
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
      if (c.length > 1) components.push(c.sort());
    }
  };
  for (const f of FOLDERS) if (!index.has(f)) visit(f);
  return components.map((c) => ({
    cycle: c.join(' ↔ '),
    edges: c.flatMap((from) => c.flatMap((to) => edges.get(from)?.get(to) ?? [])),
  }));
}

/** The imports of every source file of the project. */
const all = (): Import[] => sources('').flatMap((f) => importsOf(f, readFileSync(join(ROOT, f), 'utf8')));

describe('import rules', () => {
  const imports = all().filter((i) => !under(i.file, 'test'));

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

  it('(b) the top-level folders import one another without a cycle', () => {
    expect(folderCycles(imports)).toEqual([]);
  });
});
