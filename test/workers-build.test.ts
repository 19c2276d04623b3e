/**
 * The hosted build as it is packaged: the migrations compiled into it are every file of schema/migrations,
 * and wrangler bundles worker.ts (its dry run: no account, no network).
 */
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from './helpers/env.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BUNDLED = join(ROOT, 'lib/runtime/workers/migrations.ts');

const sqlFiles = () =>
  readdirSync(join(ROOT, 'schema/migrations'))
    .filter((n) => n.endsWith('.sql'))
    .sort();

describe('lib/runtime/workers/migrations.ts', () => {
  it('lists every .sql file of schema/migrations, in order, each imported from its own file', async () => {
    let names: string[];
    try {
      const m = (await import('../lib/runtime/workers/migrations.ts')) as { BUNDLED_MIGRATION_FILES: Array<{ name: string; sql: string }> };
      names = m.BUNDLED_MIGRATION_FILES.map((f) => f.name);
    } catch {
      // vitest cannot load `.sql` as a module (wrangler and esbuild load it as text): read the source.
      names = [...readFileSync(BUNDLED, 'utf8').matchAll(/name:\s*'([^']+\.sql)'/g)].map((m) => m[1]!);
    }
    expect(names).toEqual(sqlFiles());
    const source = readFileSync(BUNDLED, 'utf8');
    // Each listed name takes its text from the file of that name.
    for (const m of source.matchAll(/\{\s*name:\s*'([^']+)',\s*sql:\s*(\w+)\s*\}/g)) {
      expect(source, m[1]).toMatch(new RegExp(`import ${m[2]} from '\\.\\./\\.\\./\\.\\./schema/migrations/${m[1]!.replace(/\./g, '\\.')}';`));
    }
    expect([...source.matchAll(/from '\.\.\/\.\.\/\.\.\/schema\/migrations\/([^']+)'/g)].map((m) => m[1]).sort()).toEqual(sqlFiles());
  });
});

describe('the Worker bundle', () => {
  it('wrangler deploy --dry-run bundles worker.ts', async () => {
    const out = await tempDir('kr-wrangler-');
    try {
      const started = performance.now();
      const res = await new Promise<{ code: number; output: string }>((resolve) => {
        execFile(
          join(ROOT, 'node_modules/.bin/wrangler'),
          ['deploy', '--dry-run', '--outdir', out.path],
          {
            cwd: ROOT,
            env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: '1', NO_COLOR: '1' },
            maxBuffer: 16 * 1024 * 1024,
            timeout: 120_000,
          },
          (err, stdout, stderr) => {
            const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
            resolve({ code, output: `${stdout}${stderr}` });
          },
        );
      });
      const ms = Math.round(performance.now() - started);
      expect(res.code, res.output).toBe(0);
      const worker = join(out.path, 'worker.js');
      expect(existsSync(worker), res.output).toBe(true);
      const size = statSync(worker).size;
      const upload = /Total Upload: ([^\n]+)/.exec(res.output)?.[1]?.trim() ?? '?';
      console.log(`[workers] bundle worker.js ${(size / 1024).toFixed(1)} KiB (wrangler: ${upload}) in ${ms} ms`);
      expect(size).toBeGreaterThan(10_000);
      // The Durable Object classes the configuration binds are exported by the bundle.
      const code = readFileSync(worker, 'utf8');
      for (const cls of ['RepoObject', 'RateLimiterObject', 'StreamSlotsObject']) expect(code, cls).toMatch(new RegExp(`\\b${cls}\\b`));
    } finally {
      await out.cleanup();
    }
  }, 150_000);
});
