#!/usr/bin/env node
/**
 * The `kr` executable (package.json "bin"). There is no manual build step:
 *
 *  1. Fast path: a bundle of cli/main.ts with everything it uses (dependencies included), split into chunks
 *     run through V8's code cache by a loader, kr.cjs, exactly as in the client package the server hands out
 *     (scripts/client-package.mjs, scripts/client-loader.cjs), cached in node_modules/.cache/kr-cli/build-…
 *     with a manifest of its inputs (path, size, mtime). When every input is unchanged the build's loader is
 *     imported directly: a command loads only its own code (`kr --version` never reads the MCP SDK, which
 *     only `kr mcp` imports).
 *  2. When the bundle is missing or stale it is rebuilt with esbuild into a new folder, and the manifest is
 *     then replaced by a rename, so concurrent runs never see half a build.
 *  3. If that is impossible (esbuild absent, read-only install, KR_NO_BUNDLE=1), the TypeScript sources
 *     are loaded through tsx, a runtime dependency: slower to start, same behaviour.
 */
import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const cliDir = dirname(fileURLToPath(import.meta.url));
const pkgRoot = dirname(cliDir);
const cacheDir = join(pkgRoot, 'node_modules', '.cache', 'kr-cli');
const manifestPath = join(cacheDir, 'manifest.json');
const MANIFEST_VERSION = 5;
/** Builds kept besides the current one (a long-running `kr mcp` may still import chunks of an older one). */
const KEEP_BUILDS = 2;

const stampOf = (file) => {
  const st = statSync(join(pkgRoot, file));
  return { size: st.size, mtimeMs: st.mtimeMs };
};

/** The entry of the cached build when every input is unchanged, else null. */
function freshEntry() {
  try {
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
    if (manifest.version !== MANIFEST_VERSION || manifest.node !== process.versions.node || typeof manifest.dir !== 'string') return null;
    for (const [file, stamp] of Object.entries(manifest.inputs)) {
      const now = stampOf(file);
      if (now.size !== stamp.size || now.mtimeMs !== stamp.mtimeMs) return null;
    }
    const entry = join(cacheDir, manifest.dir, 'kr.cjs');
    statSync(entry);
    return entry;
  } catch {
    return null;
  }
}

/**
 * Builds into a folder of its own (the loader and its chunks: several files, which no rename could replace
 * at once), then points the manifest at it; returns the loader. The files are the client package's
 * (scripts/client-package.mjs): every dependency inlined, split so that a command loads only its own code.
 */
async function rebuild() {
  const { splitScripts } = await import('../scripts/client-package.mjs');
  mkdirSync(cacheDir, { recursive: true });
  const suffix = `${process.pid}-${Date.now()}`;
  const dir = `build-${suffix}`;
  const tmpManifest = join(cacheDir, `manifest.${suffix}.tmp.json`);
  const started = Date.now();
  try {
    const { files, inputs: sources } = await splitScripts(pkgRoot, 'silent');
    for (const f of files) {
      mkdirSync(dirname(join(cacheDir, dir, f.name)), { recursive: true });
      writeFileSync(join(cacheDir, dir, f.name), f.text);
    }
    const inputs = {};
    for (const file of sources) inputs[file] = stampOf(file);
    // A source edited during the build: keep the build for this run, but leave no manifest vouching for it.
    if (Object.values(inputs).some((s) => s.mtimeMs >= started)) return join(cacheDir, dir, 'kr.cjs');
    writeFileSync(tmpManifest, JSON.stringify({ version: MANIFEST_VERSION, node: process.versions.node, dir, inputs }, null, 1));
    renameSync(tmpManifest, manifestPath);
    pruneBuilds(dir);
    return join(cacheDir, dir, 'kr.cjs');
  } finally {
    rmSync(tmpManifest, { force: true });
  }
}

/** Removes all but the newest builds (and `current`), and the files of the single-file cache before them. */
function pruneBuilds(current) {
  const builds = readdirSync(cacheDir)
    .filter((n) => n.startsWith('build-') && n !== current)
    .map((n) => ({ n, at: statSync(join(cacheDir, n)).mtimeMs }))
    .sort((a, b) => b.at - a.at);
  for (const { n } of builds.slice(KEEP_BUILDS)) rmSync(join(cacheDir, n), { recursive: true, force: true });
  rmSync(join(cacheDir, 'kr.mjs'), { force: true });
}

let entry = null;
if (!process.env.KR_NO_BUNDLE) {
  try {
    entry = freshEntry() ?? (await rebuild());
  } catch {
    entry = null;
  }
}
if (entry !== null) {
  createRequire(import.meta.url)(entry);
} else {
  const { register } = await import('tsx/esm/api');
  register({ tsconfig: false });
  await import('./main.ts');
}
