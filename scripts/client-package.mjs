/**
 * The client package the server hands out (`GET /client/kr.tgz`, `GET /client/kr.mjs`): `kr` bundled with
 * every dependency it uses, so that `npm install -g <server>/client/kr.tgz` installs it with nothing but Node.
 * Plain JavaScript, like scripts/bundle.mjs, whose staleness record it shares (so `npm start` can run it).
 *
 *   node scripts/client-package.mjs             build unconditionally (npm run build:client, the Dockerfile)
 *   node scripts/client-package.mjs --if-stale  build only when stale; prints why it rebuilt
 *
 * Output, in dist/client/ (the Workers build's static assets: wrangler.toml):
 *  - kr.tgz: an npm package (npm pack's layout: `package/…`): package.json (the server's version, bin `kr`,
 *    no dependencies), kr.cjs (the bin), and chunks/*.cjs. Split into chunks (esbuild's code splitting) so that a
 *    command loads only its own code: `kr --version` and `kr status` never read the agent tool server's
 *    libraries (the MCP SDK, ajv), which only `kr mcp` imports. The chunks are CommonJS scripts, run by kr.cjs
 *    (scripts/client-loader.cjs) through V8's code cache, which an ES module cannot have on Node 20: compiling
 *    the half megabyte `kr status` loads was a third of its start ({@link splitScripts}).
 *  - kr.mjs: the same client as one file (`node kr.mjs …`): without splitting, esbuild keeps lazily imported
 *    modules in the file but runs their code only when they are first imported.
 * The record of what they were built from is dist/client.meta.json (outside dist/client/, which holds only
 * what is served).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { ROOT, RECORD_VERSION, staleReason } from './bundle.mjs';

export const CLIENT_DIR = join(ROOT, 'dist', 'client');
/** The record is kept beside the directory, not in it. */
const recordOf = (dir) => `${dir}.meta.json`;
export const CLIENT_FILES = ['kr.tgz', 'kr.mjs'];
/** The largest package the server may hand out (docs/api.md "Service", the `/client/kr.tgz` route). */
export const MAX_PACKAGE_BYTES = 4 * 1024 * 1024;
/** The npm package's name (its bin is `kr`). */
export const PACKAGE_NAME = 'kr-client';

const SHEBANG = '#!/usr/bin/env node\n';
/** kr.cjs of the split form: runs chunks/main.cjs and the chunks it requires through V8's code cache. */
export const LOADER = join(ROOT, 'scripts', 'client-loader.cjs');
/** The package's bin. */
export const BIN_FILE = 'kr.cjs';
// Some bundled CommonJS dependencies (commander) call require() for node: built-ins, which an ES module
// lacks: the single file gets one of its own, made on its first call (making one costs a few ms of path work).
// The split form's chunks are CommonJS scripts, given a require() by the loader.
const REQUIRE_SHIM =
  "import { createRequire as __krCreateRequire } from 'node:module'; let __krRequire; const require = (id) => (__krRequire ??= __krCreateRequire(import.meta.url))(id);";

/**
 * zod re-exports every locale it has (`z.locales`: some 40 languages, half of the zod code in the bundle, about
 * 300 KB parsed at each start of any command that reads the server's answers); kr uses only the English
 * messages zod configures itself with. Its locale index is replaced by one that has only `en`.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
      contents: "export { default as en } from './en.js';\n",
      loader: 'js',
      resolveDir: dirname(args.path),
    }));
  },
};

/*
 * kr's modules import zod as a namespace (`import * as z from 'zod'`), not as `import { z }`: esbuild can then
 * leave out the parts of zod no schema uses (half of it), where the `z` object zod exports would keep all of it.
 */

/**
 * zod compiles a fast path for each object schema the first time it checks a value with it (JavaScript
 * generated and compiled through `new Function`): worth it in a server checking many requests, not in a command
 * that checks a few answers once (about 10 ms of `kr status`'s start). The client starts zod with its
 * `jitless` setting on: every check takes the same path as when the fast path does not apply (same results).
 */
const ZOD_CONFIG_INIT = '(_a = globalThis).__zod_globalConfig ?? (_a.__zod_globalConfig = {});';
const zodJitless = {
  name: 'zod-jitless',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]zod[\\/]v4[\\/]core[\\/]core\.js$/ }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      // A zod that sets up its configuration otherwise fails the build, rather than quietly compiling again.
      if (!source.includes(ZOD_CONFIG_INIT)) throw new Error(`zod-jitless: ${args.path} no longer has ${ZOD_CONFIG_INIT}`);
      return { contents: source.replace(ZOD_CONFIG_INIT, '(_a = globalThis).__zod_globalConfig ?? (_a.__zod_globalConfig = { jitless: true });'), loader: 'js' };
    });
  },
};

/**
 * yaml (some 170 KB of code) is needed only where a page's frontmatter is read (push, pull, merge, diff), not
 * by `kr status`, `kr --version` or most commands; yet it sits in a chunk they import, and node compiles all
 * of a module it loads. In the split form it is its own CommonJS file, chunks/yaml.cjs ({@link YAML_OPTIONS}),
 * and every import of 'yaml' gets a module of functions that load it on their first call (require() is
 * synchronous, like the yaml functions themselves). Only yaml's plain functions are offered: importing one of
 * its classes or visitors through this fails the build.
 */
export const YAML_FILE = 'chunks/yaml.cjs';
const lazyYaml = {
  name: 'lazy-yaml',
  setup(build) {
    build.onResolve({ filter: /^yaml$/ }, () => ({ path: 'yaml', namespace: 'kr-lazy-yaml' }));
    build.onLoad({ filter: /.*/, namespace: 'kr-lazy-yaml' }, () => {
      const yaml = createRequire(join(build.initialOptions.absWorkingDir ?? ROOT, 'package.json'))('yaml');
      const names = Object.keys(yaml).filter((k) => {
        const v = yaml[k];
        return typeof v === 'function' && !/^class[\s{]/.test(Function.prototype.toString.call(v)) && Object.keys(v).length === 0;
      });
      // The module lands in chunks/, beside yaml.cjs; once a CommonJS script (splitScripts), its require() is
      // the loader's, which reads chunks.
      const contents =
        "let yaml; const load = () => (yaml ??= require('./yaml.cjs'));\n" + names.map((n) => `export function ${n}(...args) { return load().${n}(...args); }\n`).join('');
      return { contents, loader: 'js', resolveDir: ROOT };
    });
    build.onResolve({ filter: /^\.\/yaml\.cjs$/, namespace: 'kr-lazy-yaml' }, (args) => ({ path: args.path, external: true }));
  },
};

/** Whether an esbuild metafile input is a file (not a plugin's module, `namespace:path`). */
export const isSourceFile = (input) => !input.includes(':');

/** chunks/yaml.cjs of the split form: yaml whole, as one CommonJS file. */
export const YAML_OPTIONS = {
  entryPoints: ['yaml'],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  logLevel: 'warning',
};

const COMMON = {
  entryPoints: [{ in: 'cli/main.ts', out: 'kr' }],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Less to parse at every start; names are kept, so that a stack trace still reads.
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  banner: { js: REQUIRE_SHIM },
  plugins: [zodEnglishOnly, zodJitless],
  outExtension: { '.js': '.mjs' },
  logLevel: 'warning',
};

/**
 * The esbuild options of the two forms; part of the record, so that changing them here rebuilds. The split
 * form is built as ES modules (esbuild splits only those) into chunks/*.cjs, each then turned into a
 * CommonJS script by `script` (splitScripts); without the banner, as the loader gives every chunk a require().
 */
const { banner: _esmOnly, ...SPLIT_COMMON } = COMMON;
export const CLIENT_OPTIONS = {
  split: {
    ...SPLIT_COMMON,
    entryPoints: [{ in: 'cli/main.ts', out: 'chunks/main' }],
    plugins: [...COMMON.plugins, lazyYaml],
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    outExtension: { '.js': '.cjs' },
  },
  // import() becomes require() (the loader's), which a script compiled from a code cache needs: V8 drops the
  // dynamic import callback of such a script.
  script: {
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    supported: { 'dynamic-import': false },
    charset: 'ascii',
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'none',
    logLevel: 'warning',
  },
  yaml: YAML_OPTIONS,
  single: { ...COMMON, splitting: false },
};

/**
 * The split form, the files of the package but package.json: kr.cjs (the loader, the bin), chunks/main.cjs (cli/main.ts)
 * and the chunks it requires, chunks/yaml.cjs. Returns `{ files: [{name, text}], inputs }` (inputs: the
 * source files it was built from, root-relative). cli/kr.mjs builds with `logLevel` 'silent' (a command's
 * output carries no build warnings).
 */
export async function splitScripts(root = ROOT, logLevel = 'warning') {
  const esbuild = await import('esbuild');
  const common = { absWorkingDir: root, metafile: true, write: false, logLevel };
  const [split, yaml] = await Promise.all([
    esbuild.build({ ...CLIENT_OPTIONS.split, ...common, outdir: '/kr-package' }),
    esbuild.build({ ...CLIENT_OPTIONS.yaml, ...common, outfile: `/kr-package/${YAML_FILE}` }),
  ]);
  const files = await Promise.all(
    split.outputFiles.map(async (f) => {
      const name = relative('/kr-package', f.path).split('\\').join('/');
      const { code } = await esbuild.transform(f.text, { ...CLIENT_OPTIONS.script, sourcefile: name, logLevel });
      // The sources are ES modules, which are strict.
      return { name, text: `"use strict";${code}` };
    }),
  );
  files.push({ name: YAML_FILE, text: yaml.outputFiles[0].text });
  files.push({ name: BIN_FILE, text: SHEBANG + (await readFile(LOADER, 'utf8')) });
  const self = relative(root, fileURLToPath(import.meta.url));
  const inputs = [...new Set([...Object.keys(split.metafile.inputs), ...Object.keys(yaml.metafile.inputs), self, relative(root, LOADER)])].filter(isSourceFile);
  return { files, inputs };
}

/** The client's version: client/version.ts (the server's version too). */
export function clientVersion(root = ROOT) {
  const m = /VERSION = '([^']+)'/.exec(readFileSync(join(root, 'client', 'version.ts'), 'utf8'));
  if (!m) throw new Error('client/version.ts has no VERSION');
  return m[1];
}

/** Why the client package must be rebuilt, or null when it is fresh. */
export async function clientStaleReason(dir = CLIENT_DIR, root = ROOT) {
  const reason = await staleReason(join(dir, 'kr.tgz'), CLIENT_OPTIONS, root, recordOf(dir));
  if (reason !== null) return reason;
  for (const f of CLIENT_FILES) {
    try {
      await stat(join(dir, f));
    } catch {
      return `no ${f}`;
    }
  }
  return null;
}

/**
 * A tar archive (POSIX ustar) of `entries` ({name, data: Buffer, mode}), every file dated `mtime` (seconds),
 * owned by root: the same package bytes from the same sources.
 */
export function tar(entries, mtime = 499162500) {
  const blocks = [];
  for (const { name, data, mode } of entries) {
    const header = Buffer.alloc(512);
    const put = (text, offset, length) => header.write(text, offset, length, 'ascii');
    const octal = (n, length) => n.toString(8).padStart(length - 1, '0') + '\0';
    if (Buffer.byteLength(name) > 100) throw new Error(`tar: name too long: ${name}`);
    put(name, 0, 100);
    put(octal(mode, 8), 100, 8);
    put(octal(0, 8), 108, 8);
    put(octal(0, 8), 116, 8);
    put(octal(data.length, 12), 124, 12);
    put(octal(mtime, 12), 136, 12);
    put('        ', 148, 8);
    put('0', 156, 1);
    put('ustar\0', 257, 6);
    put('00', 263, 2);
    let sum = 0;
    for (const b of header) sum += b;
    put(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8);
    blocks.push(header, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

/** package.json of the npm package. */
export function packageJson(version) {
  return {
    name: PACKAGE_NAME,
    version,
    description: 'kr, the command-line client and agent tool server of the Knowledge Repository Service (bundled: no dependencies)',
    type: 'module',
    bin: { kr: BIN_FILE },
    engines: { node: '>=20' },
    license: 'UNLICENSED',
  };
}

/** Builds dist/client/ (or `dir`) and its record. */
export async function buildClient(dir = CLIENT_DIR, root = ROOT) {
  const esbuild = await import('esbuild');
  // As in bundle.mjs's build: directories made before the start time, which is strictly below any mtime
  // written during the build.
  const made = await mkdir(dir, { recursive: true });
  if (made !== undefined) {
    const until = Math.min((await stat(dirname(made))).mtimeMs, Date.now() + 50);
    while (Math.floor(Date.now()) - 1 <= until) await new Promise((r) => setTimeout(r, 1));
  }
  const startedMs = Math.floor(Date.now()) - 1;
  const version = clientVersion(root);
  const [split, single] = await Promise.all([
    splitScripts(root),
    esbuild.build({ ...CLIENT_OPTIONS.single, absWorkingDir: root, outdir: '/kr-single', metafile: true, write: false }),
  ]);

  const entries = [{ name: 'package/package.json', data: Buffer.from(JSON.stringify(packageJson(version), null, 2) + '\n'), mode: 0o644 }];
  for (const f of split.files) entries.push({ name: `package/${f.name}`, data: Buffer.from(f.text), mode: f.name === BIN_FILE ? 0o755 : 0o644 });
  entries.sort((a, b) => (a.name === 'package/package.json' ? -1 : b.name === 'package/package.json' ? 1 : a.name < b.name ? -1 : 1));
  const tgz = gzipSync(tar(entries), { level: 9 });
  const one = Buffer.from(SHEBANG + single.outputFiles[0].text);
  for (const [name, data] of [['kr.tgz', tgz], ['kr.mjs', one]]) {
    if (data.length > MAX_PACKAGE_BYTES) throw new Error(`dist/client/${name} is ${data.length} bytes, over the ${MAX_PACKAGE_BYTES} the package may have`);
  }
  await replaceFile(join(dir, 'kr.tgz'), tgz);
  await replaceFile(join(dir, 'kr.mjs'), one, 0o755);

  const inputs = [...new Set([...split.inputs, ...Object.keys(single.metafile.inputs)])].filter(isSourceFile);
  const dirs = [...new Set(inputs.map((p) => dirname(p)))];
  const record = { version: RECORD_VERSION, options: CLIENT_OPTIONS, startedMs, inputs, dirs };
  await replaceFile(recordOf(dir), `${JSON.stringify(record)}\n`);
  return { version, tgzBytes: tgz.length, mjsBytes: one.length, files: entries.map((e) => e.name) };
}

async function replaceFile(path, data, mode = 0o644) {
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    await writeFile(tmp, data, { mode });
    await rename(tmp, path);
  } finally {
    await rm(tmp, { force: true });
  }
}

/** Builds when stale; returns the reason it built, or null when the package was fresh. */
export async function buildClientIfStale(dir = CLIENT_DIR, root = ROOT) {
  const reason = await clientStaleReason(dir, root);
  if (reason !== null) await buildClient(dir, root);
  return reason;
}

/** The bytes of a built client file, for tests and tools. */
export const readClientFile = (name, dir = CLIENT_DIR) => readFile(join(dir, name));

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--if-stale')) {
    const reason = await buildClientIfStale();
    if (reason) process.stderr.write(`built dist/client/ (${reason})\n`);
  } else {
    const built = await buildClient();
    process.stderr.write(`built dist/client/: kr.tgz ${built.tgzBytes} bytes, kr.mjs ${built.mjsBytes} bytes (version ${built.version})\n`);
  }
}
