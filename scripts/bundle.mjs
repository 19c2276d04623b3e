/**
 * The server bundle (dist/server.mjs) and the check of whether it is stale. Plain JavaScript, so that
 * `npm start` can run it without a TypeScript loader: the check is a few hundred stat calls.
 *
 *   node scripts/bundle.mjs             build unconditionally (npm run build:server, the Dockerfile)
 *   node scripts/bundle.mjs --if-stale  build only when the bundle is stale; prints why it rebuilt
 *
 * The bundle includes the dependencies (one file to load instead of hundreds of modules: about half the
 * boot time and a tenth of the boot RSS), except the libSQL driver, whose native module must be loaded from
 * node_modules. Beside it, dist/server.meta.json records what it was built from: every input esbuild
 * read (sources and dependency files, from its metafile), the directories holding them, and when the build
 * started. The bundle is stale when it or its record is missing, the record was written by other build
 * options, or any recorded input or directory is missing or was modified at or after the build's start
 * (a directory changes when a file is added to or removed from it, which may change what an import
 * resolves to). A rebuild on a false alarm costs a third of a second; a stale bundle never runs.
 */
import { statSync } from 'node:fs';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
export const SERVER_BUNDLE = join(ROOT, 'dist', 'server.mjs');

/** The esbuild options; part of the record, so that changing them here rebuilds. */
export const SERVER_OPTIONS = {
  entryPoints: ['server.ts'],
  bundle: true,
  platform: 'node',
  // CommonJS: a script, which node:vm can compile from V8's code cache (scripts/server-loader.mjs); Node 20
  // has no code cache for ES modules.
  format: 'cjs',
  target: 'node20',
  // The native driver (and its platform packages) stays in node_modules.
  external: ['@libsql/client', 'libsql', '@libsql/*'],
  // The sources are ES modules: import.meta.url is this bundle's own URL.
  define: { 'import.meta.url': '__krImportMetaUrl' },
  banner: { js: "var __krImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
  // No comments or indentation: V8 keeps the whole source text in memory (for lazy compilation).
  minifyWhitespace: true,
  charset: 'ascii',
  logLevel: 'warning',
};

/**
 * A CommonJS build's code goes to `‹bundle›.cjs` and `bundle` itself is this loader, which runs it through
 * V8's code cache (`‹bundle›.cjs.cache`, written by the loader).
 */
export const LOADER = join(ROOT, 'scripts', 'server-loader.mjs');
export const codeFile = (bundle) => bundle.replace(/\.mjs$/, '') + '.cjs';

export const RECORD_VERSION = 1;
export const metaFile = (bundle) => bundle.replace(/\.m?js$/, '') + '.meta.json';

/**
 * Why `bundle` must be rebuilt, or null when it is fresh. `options` are the build options it must have
 * been built with; the recorded inputs are relative to `root`; the record is `meta` (default: beside the bundle).
 */
export async function staleReason(bundle = SERVER_BUNDLE, options = SERVER_OPTIONS, root = ROOT, meta = metaFile(bundle)) {
  let record;
  try {
    record = JSON.parse(await readFile(meta, 'utf8'));
  } catch {
    return 'no build record';
  }
  if (record.version !== RECORD_VERSION || JSON.stringify(record.options) !== JSON.stringify(options)) return 'build options changed';
  if (typeof record.startedMs !== 'number' || !Array.isArray(record.inputs) || !Array.isArray(record.dirs)) return 'build record unreadable';
  try {
    await stat(bundle);
    if (options.format === 'cjs') await stat(codeFile(bundle));
  } catch {
    return 'no bundle';
  }
  // Synchronous: some 600 stats of cached inodes take a few milliseconds this way, twice that through the
  // threadpool, and nothing else runs before the bundle is imported anyway.
  for (const p of [...record.inputs, ...record.dirs]) {
    const s = statSync(resolve(root, p), { throwIfNoEntry: false });
    if (!s) return `${p} is gone`;
    if (s.mtimeMs >= record.startedMs) return `${p} changed`;
  }
  return null;
}

/** Builds `bundle` with `options` and writes its record beside it. */
export async function build(bundle = SERVER_BUNDLE, options = SERVER_OPTIONS, root = ROOT) {
  const esbuild = await import('esbuild');
  // Made before the build starts: creating dist/ changes its parent directory, which may be an input
  // directory itself (the project root), and would make the fresh bundle look stale.
  const made = await mkdir(dirname(bundle), { recursive: true });
  // And strictly before it: a file's mtime comes from the kernel's coarse clock, which may read the same
  // millisecond as the start time taken right after (the fresh bundle then looked stale, "'.' changed").
  // Only when this call made a directory, and at most 50 ms (a parent dated in the future waits no longer).
  if (made !== undefined) {
    const until = Math.min((await stat(dirname(made))).mtimeMs, Date.now() + 50);
    while (Math.floor(Date.now()) - 1 <= until) await new Promise((r) => setTimeout(r, 1));
  }
  // Truncated to the millisecond below what any mtime written during the build can be.
  const startedMs = Math.floor(Date.now()) - 1;
  const cjs = options.format === 'cjs';
  const out = cjs ? codeFile(bundle) : bundle;
  const result = await esbuild.build({ ...options, absWorkingDir: root, outfile: out, metafile: true, write: false });
  // Every character ASCII: a single one beyond Latin-1 (esbuild leaves some in regular expressions) makes V8
  // keep the whole source as two bytes a character (4 MiB instead of 1.5). Only code is left (no comments),
  // where \uXXXX means the same character in strings, templates, regular expressions and identifiers.
  const text = result.outputFiles[0].text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  // Written beside and renamed over the bundle: a server starting meanwhile reads the old one or the new one
  // The code first, then the loader: a cache made from other code is never used (scripts/server-loader.mjs).
  await replaceFile(out, text);
  if (cjs) await replaceFile(bundle, await readFile(LOADER));
  const inputs = Object.keys(result.metafile.inputs).filter((p) => !p.includes(':'));
  if (cjs) inputs.push(relative(root, LOADER));
  const dirs = [...new Set(inputs.map((p) => dirname(p)))];
  const record = { version: RECORD_VERSION, options, startedMs, inputs, dirs };
  const tmp = `${metaFile(bundle)}.tmp`;
  await writeFile(tmp, `${JSON.stringify(record)}\n`);
  await rename(tmp, metaFile(bundle));
  return record;
}

async function replaceFile(path, data) {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, data);
  await rename(tmp, path);
}

/** Builds when stale; returns the reason it built, or null when the bundle was fresh. */
export async function buildIfStale(bundle = SERVER_BUNDLE, options = SERVER_OPTIONS, root = ROOT) {
  const reason = await staleReason(bundle, options, root);
  if (reason !== null) await build(bundle, options, root);
  return reason;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--if-stale')) {
    const reason = await buildIfStale();
    if (reason) process.stderr.write(`built dist/server.mjs (${reason})\n`);
  } else {
    await build();
  }
}
