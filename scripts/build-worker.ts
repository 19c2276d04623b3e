/**
 * Bundles the hosted build (worker.ts) into one ES module for workerd: `dist/worker.mjs`. The same bundle
 * serves `npm run dev:worker` and the Workers test target; `wrangler deploy` bundles worker.ts itself with
 * the same rules (wrangler.toml: `.sql` as text, nodejs_compat).
 */
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

export const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));
export const WORKER_BUNDLE = join(PROJECT_ROOT, 'dist', 'worker.mjs');

export async function buildWorker(outfile = WORKER_BUNDLE): Promise<string> {
  await build({
    entryPoints: [join(PROJECT_ROOT, 'worker.ts')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    external: ['cloudflare:*', 'node:*'],
    loader: { '.sql': 'text' },
    minify: false,
    sourcemap: false,
    logLevel: 'warning',
  });
  return outfile;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const out = await buildWorker(process.argv[2]);
  console.log(out);
}
