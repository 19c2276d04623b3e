/**
 * The real server as a child process: `node --import tsx server.ts`, configured only through its
 * environment, exactly as an operator runs it. Captures every stdout/stderr line (the JSON log) and
 * can be stopped gracefully (SIGTERM) or killed outright (SIGKILL).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';

export const PROJECT_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SERVER_TS = join(PROJECT_ROOT, 'server.ts');
const TSX_LOADER = pathToFileURL(join(PROJECT_ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

export const LEGACY_KEY = 'reliability-legacy-key-0123456789';
export const SESSION_SECRET = 'reliability-session-secret-0123456789-abcdef';

export interface ServerProc {
  url: string;
  pid: number;
  /** Every line the process wrote, stdout and stderr interleaved in arrival order. */
  lines: string[];
  /** Raw bytes of stdout and stderr, for secret scans. */
  output(): string;
  alive(): boolean;
  /** Resolves when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (graceful: in-flight requests finish, the database is closed), then waits for the exit. */
  stop(): Promise<void>;
  /** Parsed JSON log lines (non-JSON lines are skipped). */
  events(): Array<Record<string, unknown>>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

export interface SpawnOptions {
  dataRoot: string;
  /** Working directory of the process (default the project root). */
  cwd?: string;
  env?: Record<string, string>;
  /** How long to wait for the `listening` line. */
  startTimeoutMs?: number;
}

/** Starts the server on 127.0.0.1:0 and resolves once it logged `listening`. */
export async function spawnServer(opts: SpawnOptions): Promise<ServerProc> {
  const base: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(SERVICE_|IDP_|PORT$)/.test(k)) continue;
    base[k] = v;
  }
  const child = spawn(process.execPath, ['--import', TSX_LOADER, SERVER_TS], {
    cwd: opts.cwd ?? PROJECT_ROOT,
    env: {
      ...base,
      TSX_TSCONFIG_PATH: join(PROJECT_ROOT, 'tsconfig.json'),
      SERVICE_DATA_ROOT: opts.dataRoot,
      SERVICE_LISTEN_ADDR: '127.0.0.1:0',
      SERVICE_API_KEY: LEGACY_KEY,
      SERVICE_SESSION_SECRET: SESSION_SECRET,
      SERVICE_RATELIMIT_DISABLE: '1',
      ...opts.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  const lines: string[] = [];
  const raw: string[] = [];
  let exitInfo: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal };
      running.delete(child);
      resolve(exitInfo);
    });
  });
  let onLine: ((line: string) => void) | null = null;
  for (const stream of [child.stdout!, child.stderr!]) {
    let buf = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      raw.push(chunk);
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        lines.push(line);
        onLine?.(line);
      }
    });
  }

  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`server did not start within ${opts.startTimeoutMs ?? 60_000} ms:\n${lines.join('\n')}`));
    }, opts.startTimeoutMs ?? 60_000);
    const check = (line: string) => {
      try {
        const ev = JSON.parse(line) as { event?: string; url?: string };
        if (ev.event === 'listening' && ev.url) {
          clearTimeout(timer);
          onLine = null;
          resolve(ev.url);
        }
      } catch {
        // not a JSON line
      }
    };
    onLine = check;
    for (const l of lines) check(l);
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`server exited before listening (code ${code}, signal ${signal}):\n${lines.join('\n')}`));
    });
  });

  return {
    url,
    pid: child.pid!,
    lines,
    output: () => raw.join(''),
    alive: () => exitInfo === null,
    exited,
    async kill() {
      if (exitInfo === null) child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (exitInfo === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    },
    events() {
      const out: Array<Record<string, unknown>> = [];
      for (const l of lines) {
        try {
          const v = JSON.parse(l) as unknown;
          if (v && typeof v === 'object') out.push(v as Record<string, unknown>);
        } catch {
          // skip
        }
      }
      return out;
    },
  };
}

/** fetch against a server with a bearer token (legacy key by default; null = no Authorization header). */
export function call(
  base: string,
  path: string,
  init: { method?: string; token?: string | null; json?: unknown; headers?: Record<string, string>; body?: string } = {},
): Promise<Response> {
  const headers = new Headers(init.headers);
  const token = init.token === undefined ? LEGACY_KEY : init.token;
  if (token !== null) headers.set('authorization', `Bearer ${token}`);
  let body = init.body;
  if (init.json !== undefined) {
    headers.set('content-type', 'application/json');
    body = JSON.stringify(init.json);
  }
  return fetch(`${base}${path}`, { method: init.method ?? 'GET', headers, body });
}

/** Problems in a server's log: unhandled errors and any access-log line with a 5xx status. */
export function logProblems(events: Array<Record<string, unknown>>): string[] {
  const out: string[] = [];
  for (const e of events) {
    if (e.level === 'error' && e.event !== 'shutdown') out.push(JSON.stringify(e));
    else if (e.event === 'request' && typeof e.status === 'number' && e.status >= 500) out.push(JSON.stringify(e));
  }
  return out;
}
