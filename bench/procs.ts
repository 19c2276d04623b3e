import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

/**
 * Child processes of the benchmark: the real server (`node dist/server.mjs`, as `npm start` runs
 * it) and the bare Hono reference. Each child's stdout/stderr go to a log file (so the harness spends no
 * time draining pipes); the harness waits for the `listening` line and reads the child's memory from
 * /proc/<pid>/status.
 */

export const REPO_ROOT = dirname(dirname(fileURLToPath(import.meta.url)));

/**
 * The node flags `npm start` gives the server (package.json's start script, `exec node <flags>
 * scripts/start.mjs`; the Dockerfile's command carries the same). The harness starts the server, and the bare
 * Hono reference, with them.
 */
export function serverNodeFlags(): string[] {
  const start = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  const m = /^exec node ((?:--[\w-]+(?:=\S+)? )*)scripts\/start\.mjs$/.exec(start);
  if (!m) throw new Error(`package.json's start script is not \`exec node [--flags] scripts/start.mjs\`: ${start}`);
  return m[1]!.split(' ').filter(Boolean);
}

export interface Child {
  pid: number;
  url: string;
  logFile: string;
  /** VmHWM (peak resident set) and VmRSS in KiB, read from /proc. */
  memory(): { peakKb: number; rssKb: number };
  /**
   * Resets VmHWM to the current RSS (`5` to /proc/<pid>/clear_refs), so that the next memory() gives the
   * peak since now. False where the kernel refuses.
   */
  resetPeak(): boolean;
  /** The child's own view of its memory (bench/mem-probe.mjs, on SIGUSR2), in bytes; null without the probe. */
  heap(): Promise<HeapFigures | null>;
  stop(): Promise<void>;
}

/** process.memoryUsage() of a child, and V8's malloc figures, in bytes. */
export interface HeapFigures {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  mallocedMemory: number;
}

const MEM_PROBE = join('bench', 'mem-probe.mjs');

function readStatus(pid: number): { peakKb: number; rssKb: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN);
    return { peakKb: kb('VmHWM'), rssKb: kb('VmRSS') };
  } catch {
    return { peakKb: NaN, rssKb: NaN };
  }
}

async function startChild(args: string[], env: NodeJS.ProcessEnv, logFile: string, what: string): Promise<Child> {
  const fd = openSync(logFile, 'a');
  const proc: ChildProcess = spawn(process.execPath, args, { cwd: REPO_ROOT, env, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  let exited: number | null | undefined;
  const exit = new Promise<void>((resolve) =>
    proc.on('exit', (code, signal) => {
      exited = code ?? (signal ? -1 : 0);
      resolve();
    }),
  );
  const deadline = Date.now() + 60_000;
  let url: string | undefined;
  while (!url) {
    if (exited !== undefined) throw new Error(`${what} exited (${exited}) before listening:\n${tail(logFile)}`);
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`${what} did not log "listening" within 60 s:\n${tail(logFile)}`);
    }
    for (const line of readFileSync(logFile, 'utf8').split('\n')) {
      if (!line.includes('"listening"')) continue;
      try {
        const rec = JSON.parse(line) as { event?: string; url?: string };
        if (rec.event === 'listening' && rec.url) url = rec.url;
      } catch {
        // a partial line: read again
      }
    }
    if (!url) await sleep(50);
  }
  const pid = proc.pid!;
  let probes = 0;
  return {
    pid,
    url,
    logFile,
    memory: () => readStatus(pid),
    resetPeak() {
      try {
        writeFileSync(`/proc/${pid}/clear_refs`, '5');
        return true;
      } catch {
        return false;
      }
    },
    async heap() {
      if (!args.includes(`./${MEM_PROBE}`) || exited !== undefined) return null;
      const seq = ++probes;
      proc.kill('SIGUSR2');
      const deadline = Date.now() + 5_000;
      while (Date.now() < deadline) {
        for (const line of readFileSync(logFile, 'utf8').split('\n')) {
          if (!line.includes('"bench_memory"')) continue;
          try {
            const rec = JSON.parse(line) as HeapFigures & { seq: number };
            if (rec.seq === seq) return rec;
          } catch {
            // a partial line
          }
        }
        await sleep(20);
      }
      return null;
    },
    async stop() {
      if (exited !== undefined) return;
      proc.kill('SIGTERM');
      const killer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
      await exit;
      clearTimeout(killer);
    },
  };
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-20).join('\n');
  } catch {
    return '(no log)';
  }
}

export interface ServiceOptions {
  dataRoot: string;
  apiKey: string;
  logFile: string;
  /** Directory for a V8 CPU profile (`node --cpu-prof`), written when the server exits. */
  cpuProfDir?: string;
  /**
   * `node --expose-gc` and KR_BENCH_GC=1: each heap() probe collects garbage first, so that RSS read right
   * after it holds only what is live (W13's memory per stream).
   */
  gcOnProbe?: boolean;
}

let built = false;

/** What `npm start` does first: bring the server bundle up to date (scripts/bundle.mjs), once per run. */
export function buildServer(): void {
  // KR_BENCH_NO_BUILD=1 measures the bundle already in dist/ (e.g. an instrumented build).
  if (built || process.env.KR_BENCH_NO_BUILD === '1') return;
  execFileSync(process.execPath, ['scripts/bundle.mjs', '--if-stale'], { cwd: REPO_ROOT, stdio: 'inherit' });
  built = true;
}

export function serviceEnv(o: { dataRoot: string; apiKey: string; listen?: string }): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    SERVICE_DATA_ROOT: o.dataRoot,
    SERVICE_LISTEN_ADDR: o.listen ?? '127.0.0.1:0',
    SERVICE_RATELIMIT_DISABLE: '1',
    SERVICE_API_KEY: o.apiKey,
    SERVICE_SESSION_SECRET: 'bench-session-secret-0123456789abcdef0123456789',
    // SERVICE_CACHE_MB as the harness was started with (unset: the server's default).
    ...(process.env.SERVICE_CACHE_MB !== undefined ? { SERVICE_CACHE_MB: process.env.SERVICE_CACHE_MB } : {}),
    ...(process.env.KR_BENCH_HEAPSNAPSHOT_DIR ? { KR_BENCH_HEAPSNAPSHOT_DIR: process.env.KR_BENCH_HEAPSNAPSHOT_DIR } : {}),
    // glibc's malloc arenas, as the harness was started with (experiments).
    ...(process.env.MALLOC_ARENA_MAX !== undefined ? { MALLOC_ARENA_MAX: process.env.MALLOC_ARENA_MAX } : {}),
    // KR_BENCH_NODE_OPTIONS: node flags for the server only (experiments, e.g. V8 heap settings).
    ...(process.env.KR_BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.KR_BENCH_NODE_OPTIONS } : {}),
  };
}

export function startService(o: ServiceOptions): Promise<Child> {
  buildServer();
  // What `npm start` runs once the bundle is fresh: node dist/server.mjs (scripts/start.mjs imports it in
  // its own process), here with the memory probe preloaded (it does nothing until asked).
  const args = [
    ...serverNodeFlags(),
    ...(o.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${o.cpuProfDir}`] : []),
    ...(o.gcOnProbe ? ['--expose-gc'] : []),
    '--import',
    `./${MEM_PROBE}`,
    'dist/server.mjs',
  ];
  return startChild(args, { ...serviceEnv(o), ...(o.gcOnProbe ? { KR_BENCH_GC: '1' } : {}) }, o.logFile, 'server');
}

/** A TCP port free right now on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * `npm start` → first `GET /health` 200, in ms: spawns `npm start` (as a user types it) with the bundle
 * already fresh, polls /health every 2 ms, then stops the server (SIGTERM to its process group).
 */
export async function timeNpmStart(o: { dataRoot: string; apiKey: string; logFile: string }): Promise<{ ms: number; bootMs: unknown }> {
  const port = await freePort();
  const fd = openSync(o.logFile, 'a');
  const started = performance.now();
  const proc = spawn('npm', ['start', '--silent'], { cwd: REPO_ROOT, env: serviceEnv({ ...o, listen: `127.0.0.1:${port}` }), stdio: ['ignore', fd, fd], detached: true });
  closeSync(fd);
  let exited = false;
  const exit = new Promise<void>((r) => proc.on('exit', () => ((exited = true), r())));
  let ms = NaN;
  try {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && !exited) {
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then(
        async (r) => (await r.arrayBuffer(), r.status === 200),
        () => false,
      );
      if (ok) {
        ms = performance.now() - started;
        break;
      }
      await sleep(2);
    }
    if (!Number.isFinite(ms)) throw new Error(`npm start did not answer /health within 60 s:\n${tail(o.logFile)}`);
  } finally {
    try {
      process.kill(-proc.pid!, 'SIGTERM');
    } catch {
      // gone already
    }
    const killer = setTimeout(() => {
      try {
        process.kill(-proc.pid!, 'SIGKILL');
      } catch {
        // gone
      }
    }, 30_000);
    await exit;
    clearTimeout(killer);
  }
  let bootMs: unknown = null;
  for (const line of readFileSync(o.logFile, 'utf8').split('\n').reverse()) {
    if (!line.includes('"listening"')) continue;
    try {
      bootMs = (JSON.parse(line) as { boot_ms?: unknown }).boot_ms ?? null;
      break;
    } catch {
      // partial
    }
  }
  return { ms, bootMs };
}

/**
 * The W4 and MEM reference: a bare Hono route serving `pageFile`'s bytes through @hono/node-server. Run
 * the way the server runs: node with the server's flags (serverNodeFlags) on an esbuild bundle (`bundle`, made
 * by bundleHonoReference), with the same memory probe. `loader: 'tsx'` runs the TypeScript through tsx
 * instead, as the harness once did (tsx itself adds about 30 MiB of RSS), kept for comparison
 * with older figures.
 */
export function startHonoReference(
  pageFile: string,
  logFile: string,
  opts: { cpuProfDir?: string; bundle?: string; loader?: 'bundle' | 'tsx' } = {},
): Promise<Child> {
  const prof = opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`] : [];
  const entry = opts.loader === 'tsx' || !opts.bundle ? ['--import', 'tsx', join('bench', 'hono-ref.ts')] : [opts.bundle];
  const args = [...serverNodeFlags(), ...prof, '--import', `./${MEM_PROBE}`, ...entry, pageFile];
  return startChild(args, { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production' }, logFile, 'hono reference');
}

/** Bundles bench/hono-ref.ts to `outfile` with the server's esbuild settings but for its entry. */
export async function bundleHonoReference(outfile: string): Promise<string> {
  const esbuild = await import('esbuild');
  await esbuild.build({
    entryPoints: [join(REPO_ROOT, 'bench', 'hono-ref.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    logLevel: 'warning',
    banner: { js: "import { createRequire as __krCreateRequire } from 'node:module'; const require = __krCreateRequire(import.meta.url);" },
  });
  return outfile;
}
