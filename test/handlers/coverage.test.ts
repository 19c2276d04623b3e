/**
 * Every handler of functions/ has a test that mounts it in isolation (test/helpers/handler.ts): each file
 * under functions/ but the index files must be imported by some test file here. A new handler without such
 * a test fails this suite.
 */
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');

async function filesUnder(dir: string, keep: (name: string) => boolean): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(path, keep)));
    else if (keep(entry.name)) out.push(path);
  }
  return out.sort();
}

/** The files a test file imports, as absolute paths (relative specifiers only). */
async function importsOf(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8');
  const specs = [...text.matchAll(/\bfrom\s+['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]!);
  return specs.map((s) => resolve(dirname(file), s));
}

describe('isolated handler tests', () => {
  it('every file in functions/ (index files aside) is imported by a test under test/handlers/', async () => {
    const handlers = await filesUnder(join(root, 'functions'), (n) => n.endsWith('.ts') && n !== 'index.ts');
    expect(handlers.length).toBeGreaterThan(0);
    const tests = await filesUnder(here, (n) => n.endsWith('.test.ts'));
    const imported = new Set((await Promise.all(tests.map(importsOf))).flat());
    const missing = handlers.filter((f) => !imported.has(f)).map((f) => relative(root, f));
    expect(missing, 'handlers without an isolated test in test/handlers/ (see test/helpers/handler.ts)').toEqual([]);
  });
});
