/**
 * The client package the server hands out (docs/api.md "Service", the `/client/kr.tgz` route), on the Node build: the bundle step
 * builds dist/client/ (scripts/client-package.mjs), the server serves it, and `npm install -g <url>` into a
 * temporary prefix — with the registry pointed at a dead loopback port and an empty npm cache, so nothing but
 * the server is reached — gives a `kr` that logs in, inits, pushes, pulls, watches and serves MCP to the SDK's
 * own client. `kr init` there leaves nothing for git that names a machine path, and keeps per-person state out.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startTestServer, tempDir, type TestServer } from './helpers/env.ts';
import { KR_ENTRY } from './helpers/cli.ts';
import { VERSION } from '../client/version.ts';
import { CLIENT_NOT_BUILT } from '../lib/usecases/client-package.ts';
import { diskClientFiles } from '../lib/runtime/node/client-files.ts';
import { buildClientIfStale, CLIENT_DIR, MAX_PACKAGE_BYTES, PACKAGE_NAME } from '../scripts/client-package.mjs';

const run = promisify(execFile);
const LEGACY_KEY = 'test-legacy-key';

/** The entries of an npm package tarball: name → bytes (ustar, as scripts/client-package.mjs writes it). */
export function untar(tgz: Uint8Array): Map<string, Buffer> {
  const data = gunzipSync(tgz);
  const files = new Map<string, Buffer>();
  for (let at = 0; at + 512 <= data.length; ) {
    const header = data.subarray(at, at + 512);
    if (header.every((b) => b === 0)) break;
    const name = header.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    const size = parseInt(header.subarray(124, 136).toString('ascii').replace(/\0.*$/s, '').trim(), 8);
    files.set(name, Buffer.from(data.subarray(at + 512, at + 512 + size)));
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}

/** A loopback port nothing listens on (bound, then closed): a registry that cannot be reached. */
function deadPort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => ok(port));
    });
  });
}

let server: TestServer;
let root: { path: string; cleanup: () => Promise<void> };

beforeAll(async () => {
  // The bundle step of `npm start` (and of the Dockerfile): dist/client/, reused while its sources are unchanged.
  await buildClientIfStale();
  server = await startTestServer();
  root = await tempDir('kr-client-pkg-');
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await root?.cleanup();
});

describe('GET /client/kr.tgz and /client/kr.mjs (Node build)', () => {
  it('serve an npm package of kr at the server version, with no dependencies, and the same client as one file', async () => {
    const res = await fetch(`${server.url}/client/kr.tgz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/gzip');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    const tgz = new Uint8Array(await res.arrayBuffer());
    expect(Number(res.headers.get('content-length'))).toBe(tgz.length);
    expect(tgz.length).toBeLessThanOrEqual(MAX_PACKAGE_BYTES);
    expect(Buffer.from(tgz).equals(await readFile(join(CLIENT_DIR, 'kr.tgz')))).toBe(true);
    const files = untar(tgz);
    const pkg = JSON.parse(files.get('package/package.json')!.toString('utf8'));
    const rootPkg = JSON.parse(await readFile(join(import.meta.dirname, '..', 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({ name: PACKAGE_NAME, version: VERSION, type: 'module', bin: { kr: 'kr.cjs' } });
    expect(pkg.version).toBe(rootPkg.version);
    expect(pkg.dependencies).toBeUndefined();
    expect(files.get('package/kr.cjs')!.subarray(0, 20).toString()).toBe('#!/usr/bin/env node\n');
    // Everything is in the package: no import of anything but node's own modules and its own chunks.
    for (const [name, bytes] of files) {
      if (!name.endsWith('.mjs') && !name.endsWith('.cjs')) continue;
      const specifiers = [...bytes.toString('utf8').matchAll(/\b(?:from|import)\s*\(?\s*"([\w@./:-]+)"/g)].map((m) => m[1]!);
      expect(specifiers.filter((s) => !s.startsWith('node:') && !s.startsWith('./')), name).toEqual([]);
    }

    const one = await fetch(`${server.url}/client/kr.mjs`);
    expect(one.status).toBe(200);
    expect(one.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    const text = await one.text();
    expect(text.length).toBeLessThanOrEqual(MAX_PACKAGE_BYTES);
    const file = join(root.path, 'kr.mjs');
    await writeFile(file, text);
    const version = await run(process.execPath, [file, '--version'], { cwd: root.path, env: { PATH: process.env.PATH, HOME: root.path } });
    expect(version.stdout).toBe(`${VERSION}\n`);
  }, 60_000);

  it('answer 404 with a clear error where the package was not built', async () => {
    const saved = server.deps.clientFiles;
    server.deps.clientFiles = diskClientFiles(join(root.path, 'nothing-built'));
    try {
      for (const name of ['kr.tgz', 'kr.mjs']) {
        const res = await fetch(`${server.url}/client/${name}`);
        expect(res.status).toBe(404);
        expect(await res.json()).toEqual({ error: CLIENT_NOT_BUILT, code: 'client_not_built' });
      }
    } finally {
      server.deps.clientFiles = saved;
    }
    expect((await fetch(`${server.url}/client/kr.tgz`, { method: 'POST' })).status).toBe(405);
  });
});

describe('npm install -g <server>/client/kr.tgz, then a team member works with that kr only', () => {
  it('installs with no registry and no checkout; the kr logs in, inits, pushes, pulls, watches and serves MCP', async () => {
    const prefix = join(root.path, 'npm-global');
    const cache = join(root.path, 'npm-cache');
    await mkdir(prefix, { recursive: true });
    const npmEnv = {
      PATH: process.env.PATH,
      HOME: root.path,
      NPM_CONFIG_REGISTRY: `http://127.0.0.1:${await deadPort()}/`,
      NPM_CONFIG_CACHE: cache,
      NPM_CONFIG_UPDATE_NOTIFIER: 'false',
      NPM_CONFIG_FUND: 'false',
      NPM_CONFIG_AUDIT: 'false',
      NPM_CONFIG_FETCH_RETRIES: '0',
    };
    await run('npm', ['install', '-g', '--prefix', prefix, `${server.url}/client/kr.tgz`], { cwd: root.path, env: npmEnv });
    const installedDir = join(prefix, 'lib', 'node_modules', PACKAGE_NAME);
    // No dependencies: nothing was installed beside the package itself.
    expect((await readdir(installedDir)).sort()).toEqual(['chunks', 'kr.cjs', 'package.json']);
    expect(await readdir(join(prefix, 'lib', 'node_modules'))).toEqual([PACKAGE_NAME]);
    // The pulls the server saw: the tarball, fetched by npm.
    expect(server.logs.some((l) => l.includes('"path":"/client/kr.tgz"') && l.includes('"status":200'))).toBe(true);

    const bin = join(prefix, 'bin');
    const userEnv = (home: string) => ({ PATH: `${bin}:${process.env.PATH}`, HOME: home });
    const alice = { home: join(root.path, 'alice-home'), project: join(root.path, 'alice') };
    const bob = { home: join(root.path, 'bob-home'), project: join(root.path, 'bob') };
    for (const d of [alice.home, alice.project, bob.home, bob.project]) await mkdir(d, { recursive: true });
    // Run as a teammate would: `kr` from the PATH, never node + a path.
    const kr = async (who: { home: string; project: string }, ...args: string[]) => {
      try {
        return await run('kr', args, { cwd: who.project, env: userEnv(who.home) });
      } catch (e) {
        const err = e as { stdout?: string; stderr?: string; message: string };
        throw new Error(`kr ${args.join(' ')} failed: ${err.message}\n${err.stdout}\n${err.stderr}`);
      }
    };
    expect((await kr(alice, '--version')).stdout).toBe(`${VERSION}\n`);
    for (const who of [alice, bob]) {
      await kr(who, 'login', '--server', server.url, '--token', LEGACY_KEY);
      await kr(who, 'init', '--repo', 'team', '--tool', 'claude,cursor,codex');
    }
    await mkdir(join(alice.project, '.kr', 'wiki', 'concepts'), { recursive: true });
    await writeFile(join(alice.project, '.kr', 'wiki', 'concepts', 'plan.md'), '---\ntitle: Plan\ntype: concept\n---\n# Plan\n\nShip it.\n');
    expect((await kr(alice, 'push', '-m', 'the plan')).stdout).toContain('wiki/concepts/plan.md');
    await kr(bob, 'pull');
    expect(await readFile(join(bob.project, '.kr', 'wiki', 'concepts', 'plan.md'), 'utf8')).toContain('Ship it.');

    // kr watch (briefly): its stream is open once it printed its first pull; Alice's next push then reaches Bob.
    const watch = spawn('kr', ['watch', '--json'], { cwd: bob.project, env: userEnv(bob.home), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const waiters = new Set<() => void>();
    watch.stdout.setEncoding('utf8').on('data', (d: string) => ((out += d), waiters.forEach((w) => w())));
    watch.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const closed = new Promise<void>((resolve) => watch.on('close', () => (resolve(), waiters.forEach((w) => w()))));
    let ended = false;
    void closed.then(() => (ended = true));
    const lineWith = (re: RegExp) =>
      new Promise<string>((resolve, reject) => {
        const check = () => {
          const hit = out.split('\n').find((l) => re.test(l));
          if (hit !== undefined) resolve(hit);
          else if (ended) reject(new Error(`kr watch ended without ${re}\n${out}\n${err}`));
        };
        waiters.add(check);
        check();
      });
    await lineWith(/^\{"event":"pull"/);
    await writeFile(join(alice.project, '.kr', 'wiki', 'concepts', 'plan.md'), '---\ntitle: Plan\ntype: concept\n---\n# Plan\n\nShip it on Friday.\n');
    await kr(alice, 'push', '-m', 'when');
    const event = JSON.parse(await lineWith(/^\{"event":"push".*"message":"when"/));
    expect(event.pulled.updated).toEqual(['wiki/concepts/plan.md']);
    expect(await readFile(join(bob.project, '.kr', 'wiki', 'concepts', 'plan.md'), 'utf8')).toContain('Friday');
    watch.kill('SIGTERM');
    await closed;

    // kr mcp, as the agent configuration kr init wrote starts it: `kr mcp` from the PATH.
    const cfg = JSON.parse(await readFile(join(alice.project, '.mcp.json'), 'utf8'));
    expect(cfg.mcpServers.kr).toEqual({ command: 'kr', args: ['mcp'] });
    const client = new Client({ name: 'agent', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({ command: cfg.mcpServers.kr.command, args: cfg.mcpServers.kr.args, cwd: alice.project, env: userEnv(alice.home), stderr: 'pipe' }),
    );
    try {
      const tools = (await client.listTools()).tools.map((t) => t.name);
      expect(tools).toContain('kr_status');
      const status = (await client.callTool({ name: 'kr_status', arguments: {} })) as { content: Array<{ text?: string }>; isError?: boolean };
      expect(status.isError ?? false).toBe(false);
      expect(status.content.map((c) => c.text ?? '').join('\n')).toContain('team');
    } finally {
      await client.close();
    }

    // What a command loads (an ESM load hook, and the reads of the chunks kr.cjs runs, write to a log): `kr status`
    // and `kr --version` read neither yaml (chunks/yaml.cjs, required on the first frontmatter read) nor the MCP
    // SDK, nor the zod kr does not use; zod starts with its fast-path compiler off. A push of a page whose frontmatter only the YAML library
    // reads (an alias) does load yaml.
    const hooks = join(root.path, 'load-hooks.mjs');
    const register = join(root.path, 'load-register.mjs');
    await writeFile(hooks, "import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) { appendFileSync(process.env.KR_LOAD_LOG, url + '\\n'); return next(url, context); }\n");
    await writeFile(
      register,
      "import { register, syncBuiltinESMExports } from 'node:module';\nimport fs from 'node:fs';\nregister('./load-hooks.mjs', import.meta.url);\n" +
        "const { appendFileSync, readFileSync } = fs;\n" +
        "fs.readFileSync = function (path, ...rest) { if (String(path).endsWith('.cjs')) appendFileSync(process.env.KR_LOAD_LOG, `chunk:${path}\\n`); return readFileSync.call(this, path, ...rest); };\n" +
        'syncBuiltinESMExports();\n',
    );
    let logs = 0;
    const loadedBy = async (...args: string[]) => {
      const log = join(root.path, `loaded-${++logs}.log`);
      const { stdout } = await run(process.execPath, ['--import', register, join(installedDir, 'kr.cjs'), ...args], { cwd: alice.project, env: { ...userEnv(alice.home), KR_LOAD_LOG: log } });
      const lines = (await readFile(log, 'utf8')).split('\n').filter((l) => l !== '');
      const modules = lines.filter((l) => l.startsWith('file://')).map((u) => fileURLToPath(u));
      const chunks = lines.filter((l) => l.startsWith('chunk:')).map((l) => l.slice('chunk:'.length));
      expect(modules.every((f) => f === join(installedDir, 'kr.cjs')), modules.join('\n')).toBe(true);
      expect(chunks).toContain(join(installedDir, 'chunks', 'main.cjs'));
      expect(chunks.every((f) => f.startsWith(join(installedDir, 'chunks'))), chunks.join('\n')).toBe(true);
      const code = (await Promise.all([...modules, ...chunks].map((f) => readFile(f, 'utf8')))).join('\n');
      return { stdout, chunks: chunks.map((f) => relative(installedDir, f)), code };
    };
    for (const args of [['status'], ['--version']]) {
      const { stdout, chunks, code } = await loadedBy(...args);
      expect(stdout).toContain(args[0] === 'status' ? 'Up to date' : VERSION);
      expect(chunks, args[0]).not.toContain('chunks/yaml.cjs');
      expect(code).not.toContain('yaml.alias');
      expect(code).not.toContain('notifications/initialized');
      if (args[0] === 'status') expect(code).toMatch(/__zod_globalConfig=\{jitless:(!0|true)\}/);
      // Only the parts of zod kr's schemas use (its modules import zod as a namespace, which esbuild can trim).
      expect(code).not.toContain('ZodBigInt');
    }
    await writeFile(join(alice.project, '.kr', 'wiki', 'concepts', 'risks.md'), '---\ntitle: &t Risks\ntype: concept\naliases: [*t]\n---\n# Risks\n\nNone yet.\n');
    const pushed = await loadedBy('push', '-m', 'risks');
    expect(pushed.stdout).toContain('wiki/concepts/risks.md');
    expect(pushed.chunks).toContain('chunks/yaml.cjs');

    // The chunks run through V8's code cache (chunks/<chunk>.cache: the SHA-1 of the chunk, the SHA-1 of the
    // bytecode, the bytecode), written by the runs that compiled them: the next run uses it and leaves it be
    // (one V8 rejected would be written again); a damaged one, or one made from other code, is not used, and
    // is replaced.
    const mainChunk = join(installedDir, 'chunks', 'main.cjs');
    const cacheFile = `${mainChunk}.cache`;
    const sha1 = (data: Buffer) => createHash('sha1').update(data).digest();
    const wellFormed = (cache: Buffer, code: Buffer) => cache.subarray(0, 20).equals(sha1(code)) && cache.subarray(20, 40).equals(sha1(cache.subarray(40)));
    const code = await readFile(mainChunk);
    const cached = await readFile(cacheFile);
    expect(wellFormed(cached, code)).toBe(true);
    const { mtimeMs } = await stat(cacheFile);
    expect((await loadedBy('status')).stdout).toContain('Up to date');
    expect((await stat(cacheFile)).mtimeMs).toBe(mtimeMs);
    for (const bad of [Buffer.concat([cached.subarray(0, 40), Buffer.from('not bytecode')]), Buffer.concat([sha1(Buffer.from('other code')), cached.subarray(20)])]) {
      await writeFile(cacheFile, bad);
      expect((await loadedBy('--version')).stdout).toBe(`${VERSION}\n`);
      const again = await readFile(cacheFile);
      expect(again.equals(bad)).toBe(false);
      expect(wellFormed(again, code)).toBe(true);
    }
  }, 240_000);
});

describe('kr init: nothing personal or machine-specific for git', () => {
  it('the files kr init leaves for git name no machine path, and per-person state is ignored', async () => {
    const home = join(root.path, 'carol-home');
    const project = join(root.path, 'carol-project');
    await mkdir(home, { recursive: true });
    await mkdir(project, { recursive: true });
    await run('git', ['init', '--quiet'], { cwd: project });
    const env = { PATH: process.env.PATH, HOME: home };
    const kr = (...args: string[]) => run(process.execPath, [KR_ENTRY, ...args], { cwd: project, env });
    await kr('login', '--server', server.url, '--token', LEGACY_KEY);
    const init = await kr('init', '--repo', 'carol', '--tool', 'claude,cursor,codex');
    // "What to commit", in two lines.
    expect(init.stdout).toContain('Commit: the pages under .kr/wiki and .kr/raw, .kr/.gitignore');
    expect(init.stdout).toContain('Do not commit: .kr/state.json, caches and locks');
    await writeFile(join(project, '.kr', 'wiki', 'concepts', 'note.md'), '---\ntitle: Note\ntype: concept\n---\n# Note\n');
    await kr('push', '-m', 'a note');
    await kr('pull');
    // What `git add -A` would take.
    await run('git', ['add', '-A'], { cwd: project });
    const staged = (await run('git', ['diff', '--cached', '--name-only'], { cwd: project })).stdout.trim().split('\n').sort();
    expect(staged).toEqual(['.codex/config.toml', '.cursor/mcp.json', '.kr/.gitignore', '.kr/wiki/concepts/note.md', '.mcp.json']);
    // Per-person state is ignored; so are caches, locks and temporary files.
    for (const f of ['.kr/state.json', '.kr/state.json.tmp', '.kr/cache/x', '.kr/sync.lock', '.kr/wiki/concepts/.a1b2.tmp']) {
      expect((await run('git', ['check-ignore', '-q', f], { cwd: project }).then(() => 0, (e: { code: number }) => e.code)), f).toBe(0);
    }
    const machine = [root.path, home, project, process.execPath, KR_ENTRY, join(import.meta.dirname, '..')];
    for (const f of staged) {
      const text = await readFile(join(project, f), 'utf8');
      for (const m of machine) expect(text.includes(m), `${f} names ${m}`).toBe(false);
    }
  }, 60_000);
});
