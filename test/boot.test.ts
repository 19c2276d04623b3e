import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
// @ts-expect-error plain JavaScript module (scripts/bundle.mjs), run by node without a loader
import { build, buildIfStale, metaFile, SERVER_BUNDLE, SERVER_OPTIONS, staleReason } from '../scripts/bundle.mjs';
import { cacheBudget, loadConfig } from '../lib/config.ts';
import { openNodeDeps } from '../lib/runtime/node.ts';
import { jsonLogger } from '../lib/log.ts';

/**
 * `npm start` builds the bundle only when it is stale (scripts/bundle.mjs): a real esbuild build of a small
 * project in a temporary directory, edited the ways a developer would.
 */
describe('build only when stale', () => {
  let dir: string;
  let bundle: string;
  const options = { entryPoints: ['main.ts'], bundle: true, platform: 'node', format: 'esm', logLevel: 'silent' };
  const stale = () => staleReason(bundle, options, dir) as Promise<string | null>;
  const rebuild = () => buildIfStale(bundle, options, dir) as Promise<string | null>;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kr-bundle-'));
    bundle = join(dir, 'dist', 'out.mjs');
    await writeFile(join(dir, 'main.ts'), "import { word } from './lib/word.ts';\nconsole.log(word);\n");
    await import('node:fs/promises').then((fs) => fs.mkdir(join(dir, 'lib')));
    await writeFile(join(dir, 'lib', 'word.ts'), "export const word: string = 'first';\n");
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('builds when there is no bundle, then not again until a source changes', async () => {
    expect(await stale()).toBe('no build record');
    expect(await rebuild()).toBe('no build record');
    expect(await readFile(bundle, 'utf8')).toContain('first');
    expect(await stale()).toBeNull();
    expect(await rebuild()).toBeNull();

    // An edit of a file the bundle imports (not the entry) rebuilds, and the bundle has the edit.
    await writeFile(join(dir, 'lib', 'word.ts'), "export const word: string = 'second';\n");
    expect(await stale()).toBe('lib/word.ts changed');
    expect(await rebuild()).toBe('lib/word.ts changed');
    expect(await readFile(bundle, 'utf8')).toContain('second');
    expect(await stale()).toBeNull();
  });

  it('records every input esbuild read, and their directories', async () => {
    await build(bundle, options, dir);
    const record = JSON.parse(await readFile(metaFile(bundle), 'utf8'));
    expect(record.inputs.sort()).toEqual(['lib/word.ts', 'main.ts']);
    expect(record.dirs.sort()).toEqual(['.', 'lib']);
  });

  it('an edit made while the build ran (mtime after its start, before the bundle was written) counts as a change', async () => {
    await build(bundle, options, dir);
    const record = JSON.parse(await readFile(metaFile(bundle), 'utf8'));
    // 1 ms after the start (utimes goes through floating-point seconds: exactly the start may round below it).
    const at = new Date(record.startedMs + 1);
    await utimes(join(dir, 'main.ts'), at, at);
    expect(await stale()).toBe('main.ts changed');
  });

  it('a file added beside an input, a removed input, a deleted bundle or record, other options: stale', async () => {
    await build(bundle, options, dir);
    // A new file may change what an import resolves to (lib/word.ts → lib/word.tsx, say).
    await new Promise((r) => setTimeout(r, 5));
    await writeFile(join(dir, 'lib', 'other.ts'), 'export {};\n');
    expect(await stale()).toBe('lib changed');

    await build(bundle, options, dir);
    await unlink(join(dir, 'lib', 'word.ts'));
    expect(await stale()).toMatch(/^lib(\/word\.ts)? (is gone|changed)$/);

    await writeFile(join(dir, 'lib', 'word.ts'), "export const word: string = 'third';\n");
    await build(bundle, options, dir);
    expect(await staleReason(bundle, { ...options, minify: true }, dir)).toBe('build options changed');

    await unlink(bundle);
    expect(await stale()).toBe('no bundle');
    await build(bundle, options, dir);
    await writeFile(metaFile(bundle), '{not json');
    expect(await stale()).toBe('no build record');
  });

  it("the server's build keeps the native database driver out of the bundle", () => {
    expect(SERVER_BUNDLE).toMatch(/dist\/server\.mjs$/);
    expect(SERVER_OPTIONS.external).toContain('libsql');
    expect(SERVER_OPTIONS.entryPoints).toEqual(['server.ts']);
  });
});

describe('the cache budget reaches the caches', () => {
  it('SERVICE_CACHE_MB sizes the parse cache and the git store', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kr-budget-'));
    try {
      const { config } = loadConfig({ SERVICE_DATA_ROOT: dir, SERVICE_CACHE_MB: '2', SERVICE_SESSION_SECRET: 'x'.repeat(32) }, '/');
      const deps = await openNodeDeps(config, { log: jsonLogger(() => undefined, () => undefined) });
      try {
        const budget = cacheBudget(2 * 1024 * 1024);
        // The parse cache keeps no page whose estimated size is above its share.
        const big = new TextEncoder().encode(`# T\n\n## A\n${'x'.repeat(budget.parsedPages)}\n`);
        await deps.parsedPages.get('r', 'big', async () => big);
        expect(deps.parsedPages.bytes).toBeLessThanOrEqual(budget.outlines);
        const small = new TextEncoder().encode('# T\n\n## A\nshort\n');
        await deps.parsedPages.get('r', 'small', async () => small);
        expect(deps.parsedPages.bytes).toBeGreaterThan(0);
        expect(deps.parsedPages.bytes).toBeLessThanOrEqual(budget.parsedPages + budget.outlines + budget.blames);
        // The git store got its share (its head-entry share is a fixed fraction of it).
        expect(deps.repos.git.headCacheBytes).toBe(Math.floor(budget.gitStore / 8));
      } finally {
        await deps.db.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
