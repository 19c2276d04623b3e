import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mkdir, mkdtemp, readFile, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
// @ts-expect-error plain JavaScript module (scripts/bundle.mjs), run by node without a loader
import { build, buildIfStale, codeFile, metaFile, ROOT, SERVER_BUNDLE, SERVER_OPTIONS, staleReason } from '../scripts/bundle.mjs';
import { cacheBudget, loadConfig } from '../lib/framework/config.ts';
import { openNodeDeps } from '../lib/runtime/node/server.ts';
import { jsonLogger } from '../lib/framework/log.ts';

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

  it('a bundle built where its output directory did not exist is fresh right after (20 fresh directories)', async () => {
    // Making dist/ changes the project directory, an input directory here. Its mtime (the kernel's coarse
    // clock) used to land in the build's start millisecond about four times in ten: "'.' changed".
    const reasons: Array<string | null> = [];
    for (let i = 0; i < 20; i++) {
      const fresh = await mkdtemp(join(tmpdir(), 'kr-bundle-'));
      try {
        await writeFile(join(fresh, 'main.ts'), "console.log('x');\n");
        const out = join(fresh, 'dist', 'out.mjs');
        await build(out, options, fresh);
        reasons.push((await staleReason(out, options, fresh)) as string | null);
      } finally {
        await rm(fresh, { recursive: true, force: true });
      }
    }
    expect(reasons).toEqual(Array(20).fill(null));
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
    expect(SERVER_OPTIONS.format).toBe('cjs');
  });
});

/**
 * dist/server.mjs runs dist/server.cjs through V8's code cache (scripts/server-loader.mjs): the real server
 * build, in a directory inside the project (so that the driver and the migrations resolve as from dist/),
 * started as node runs it, its cache missing, made, used, damaged, made for other code, and refused by V8.
 */
describe('the code cache of the server bundle', () => {
  let dir: string;
  let bundle: string;
  let data: string;
  const cache = () => `${codeFile(bundle)}.cache`;
  /** The V8 flags the last boot() logged setting once its cache was settled (null: none within 3 s). */
  let lastFlags: string[] | null = null;
  /** Everything the last `boot()` wrote to stdout and stderr, read once it exited. */
  let lastOutput = '';

  beforeAll(async () => {
    await mkdir(join(ROOT, 'test-artifacts'), { recursive: true });
    dir = await mkdtemp(join(ROOT, 'test-artifacts', 'bundle-'));
    data = await mkdtemp(join(tmpdir(), 'kr-cc-data-'));
    bundle = join(dir, 'server.mjs');
    await build(bundle, SERVER_OPTIONS, ROOT);
  }, 60_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
    await rm(data, { recursive: true, force: true });
  });

  /** Starts the bundle, waits for its listening line and (unless it was a hit) for a new cache, stops it. */
  async function boot(nodeArgs: string[] = []): Promise<{ codeCache: string; health: number }> {
    const before = await stat(cache()).then((s) => s.mtimeMs, () => null);
    const child = spawn(process.execPath, [...nodeArgs, bundle], {
      env: { ...process.env, NODE_ENV: 'production', SERVICE_DATA_ROOT: data, SERVICE_LISTEN_ADDR: '127.0.0.1:0', SERVICE_API_KEY: 'k'.repeat(24), SERVICE_SESSION_SECRET: 's'.repeat(40) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    try {
      child.stdout!.on('data', (d) => (out += d));
      child.stderr!.on('data', (d) => (err += d));
      const listening = await new Promise<{ url: string; code_cache: string }>((resolve, reject) => {
        const t = setInterval(() => {
          const line = out.split('\n').find((l) => l.includes('"event":"listening"'));
          if (line) {
            clearInterval(t);
            resolve(JSON.parse(line));
          }
        }, 10);
        child.once('exit', (code) => {
          clearInterval(t);
          reject(new Error(`server exited ${code}: ${err}`));
        });
      });
      const health = (await fetch(`${listening.url}/health`)).status;
      if (listening.code_cache !== 'hit') {
        // Written about a second after the listening line.
        for (let i = 0; i < 100; i++) {
          const now = await stat(cache()).then((s) => s.mtimeMs, () => null);
          if (now !== null && now !== before) break;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      lastFlags = null;
      for (let i = 0; i < 300 && lastFlags === null; i++) {
        const line = out.split('\n').find((l) => l.includes('"event":"v8_flags"'));
        if (line) lastFlags = (JSON.parse(line) as { flags: string[] }).flags;
        else await new Promise((r) => setTimeout(r, 10));
      }
      return { codeCache: listening.code_cache, health };
    } finally {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      lastOutput = out + err;
    }
  }

  it('the first start compiles and writes the cache; the next one uses it', async () => {
    expect(existsSync(cache())).toBe(false);
    expect(await boot()).toEqual({ codeCache: 'miss', health: 200 });
    const made = await readFile(cache());
    expect(made.length).toBeGreaterThan(100_000);
    // Its header names the bundle it was made from.
    expect(made.subarray(0, 20)).toEqual(createHash('sha1').update(await readFile(codeFile(bundle))).digest());
    expect(await boot()).toEqual({ codeCache: 'hit', health: 200 });
    // A hit leaves the file alone.
    expect((await readFile(cache())).equals(made)).toBe(true);
  }, 30_000);

  it('once the cache is settled, V8 is told to favour memory: at once after a hit, after writing it otherwise', async () => {
    await rm(cache(), { force: true });
    const lean = ['--optimize-for-size', '--semi-space-growth-factor=1'];
    expect(await boot()).toEqual({ codeCache: 'miss', health: 200 });
    expect(lastFlags).toEqual(lean);
    // V8 names a flag it does not know on stdout and goes on without it.
    expect(lastOutput).not.toContain('unrecognized flag');
    // The cache was made before the flags were set: the next start, which reads it without them, uses it.
    expect(await boot()).toEqual({ codeCache: 'hit', health: 200 });
    expect(lastFlags).toEqual(lean);
    expect(lastOutput).not.toContain('unrecognized flag');
    expect(await boot()).toEqual({ codeCache: 'hit', health: 200 });
  }, 30_000);

  it('a damaged cache, or one made from other code, is not used, and is replaced', async () => {
    if (!existsSync(cache())) await boot();
    const good = await readFile(cache());
    const damaged = Buffer.from(good);
    damaged[damaged.length - 100]! ^= 0xff;
    await writeFile(cache(), damaged);
    expect(await boot()).toEqual({ codeCache: 'miss', health: 200 });
    expect(createHash('sha1').update(await readFile(cache())).digest()).not.toEqual(createHash('sha1').update(damaged).digest());

    const other = Buffer.from(await readFile(cache()));
    other[0]! ^= 0xff;
    await writeFile(cache(), other);
    expect(await boot()).toEqual({ codeCache: 'miss', health: 200 });
    expect((await readFile(cache()))[0]).toBe(other[0]! ^ 0xff);

    await writeFile(cache(), Buffer.alloc(10));
    expect(await boot()).toEqual({ codeCache: 'miss', health: 200 });
    expect(await boot()).toEqual({ codeCache: 'hit', health: 200 });
  }, 60_000);

  it('a cache V8 refuses (made under other flags) is replaced by one for these flags', async () => {
    if (!existsSync(cache())) await boot();
    // --no-lazy changes V8's flag hash, which code caches are checked against.
    expect(await boot(['--no-lazy'])).toEqual({ codeCache: 'rejected', health: 200 });
    expect(await boot(['--no-lazy'])).toEqual({ codeCache: 'hit', health: 200 });
    expect(await boot()).toEqual({ codeCache: 'rejected', health: 200 });
  }, 60_000);

  it('--write-code-cache writes the cache and exits without starting the server', async () => {
    await rm(cache(), { force: true });
    const out = execFileSync(process.execPath, [bundle, '--write-code-cache'], { env: { ...process.env, SERVICE_DATA_ROOT: data }, encoding: 'utf8' });
    expect(out).toBe('');
    expect(existsSync(cache())).toBe(true);
    expect((await boot()).codeCache).toBe('hit');
  }, 30_000);
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

describe('the hosted build refuses to start with the development defaults (Node)', () => {
  /** Runs server.ts from the sources with only `env` (and PATH); resolves with its exit code and output. */
  const run = (env: Record<string, string>) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve, reject) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout!.on('data', (d) => {
        out += d;
        // A server that started after all is stopped, and the test fails on its exit code.
        if (out.includes('"event":"listening"')) child.kill('SIGTERM');
      });
      child.stderr!.on('data', (d) => (err += d));
      child.once('error', reject);
      child.once('exit', (code) => resolve({ code, out, err }));
    });

  it('SERVICE_HOSTED=1 without SERVICE_API_KEY and SERVICE_SESSION_SECRET: exit 2, the reasons on stderr, nothing made', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kr-hosted-refusal-'));
    try {
      const data = join(dir, 'data');
      const base = { SERVICE_HOSTED: '1', SERVICE_DATA_ROOT: data, SERVICE_LISTEN_ADDR: '127.0.0.1:0' };
      for (const [env, problems] of [
        [{}, ['SERVICE_API_KEY is unset', 'SERVICE_SESSION_SECRET is unset']],
        [{ SERVICE_API_KEY: 'dev-key', SERVICE_SESSION_SECRET: 's'.repeat(32) }, ['SERVICE_API_KEY is the public development value "dev-key"']],
      ] as const) {
        const { code, out, err } = await run({ ...base, ...env });
        expect(code, err).toBe(2);
        expect(out).not.toContain('"event":"listening"');
        const line = JSON.parse(err.trim().split('\n').find((l) => l.includes('"event":"config"'))!) as { level: string; error: string };
        expect(line.level).toBe('error');
        expect(line.error).toMatch(/^the hosted build \(SERVICE_HOSTED\) refuses to start: /);
        for (const p of problems) expect(line.error).toContain(p);
        expect(existsSync(data)).toBe(false);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
