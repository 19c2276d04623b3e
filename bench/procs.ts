import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
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

export interface Child {
  pid: number;
  url: string;
  logFile: string;
  /** VmHWM (peak resident set) and VmRSS in KiB, read from /proc. */
  memory(): { peakKb: number; rssKb: number };
  stop(): Promise<void>;
}

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
  return {
    pid,
    url,
    logFile,
    memory: () => readStatus(pid),
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
}

let built = false;

/** What `npm start` runs: build the server bundle (its prestart step) once per benchmark run. */
function buildServer(): void {
  // KR_BENCH_NO_BUILD=1 measures the bundle already in dist/ (e.g. an instrumented build).
  if (built || process.env.KR_BENCH_NO_BUILD === '1') return;
  execFileSync('npm', ['run', '--silent', 'build:server'], { cwd: REPO_ROOT, stdio: 'inherit' });
  built = true;
}

export function startService(o: ServiceOptions): Promise<Child> {
  buildServer();
  // The same command as `npm start` (after its prestart build): node dist/server.mjs.
  const args = [...(o.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${o.cpuProfDir}`] : []), 'dist/server.mjs'];
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'production',
    SERVICE_DATA_ROOT: o.dataRoot,
    SERVICE_LISTEN_ADDR: '127.0.0.1:0',
    SERVICE_RATELIMIT_DISABLE: '1',
    SERVICE_API_KEY: o.apiKey,
    SERVICE_SESSION_SECRET: 'bench-session-secret-0123456789abcdef0123456789',
  };
  return startChild(args, env, o.logFile, 'server');
}

/** The W4 reference: a bare Hono route serving `pageFile`'s bytes through @hono/node-server. */
export function startHonoReference(pageFile: string, logFile: string, cpuProfDir?: string): Promise<Child> {
  const args = [...(cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`] : []), '--import', 'tsx', join('bench', 'hono-ref.ts'), pageFile];
  return startChild(args, { PATH: process.env.PATH, HOME: process.env.HOME, NODE_ENV: 'production' }, logFile, 'hono reference');
}
