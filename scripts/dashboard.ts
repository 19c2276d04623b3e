/**
 * `npm run dashboard`: builds the dashboard (dashboard/ → dashboard/dist) with Vite unless the last build is still
 * fresh (none of the files it was built from changed since: buildDashboardIfStale), then serves the build on
 * http://localhost:$DASHBOARD_PORT (default 5173) with a runtime config.json made from the environment:
 *
 *   DASHBOARD_API_URL        the API server (default http://localhost:8080)
 *   DASHBOARD_OIDC_ISSUER    OpenID Connect issuer, e.g. https://accounts.google.com (optional)
 *   DASHBOARD_OIDC_CLIENT_ID its client id (optional; both are needed to offer provider sign-in)
 *
 * `npm run dashboard -- build` only builds. The build is plain static files: any static host serves it, with
 * a config.json beside index.html holding the same keys ({"apiUrl","oidcIssuer"?,"oidcClientId"?}).
 * This server is a small static file server with no other behaviour (it adds security headers, among them
 * the Content-Security-Policy of contentSecurityPolicy); it never needs the Vite dev server.
 * package.json runs it as `exec node --import tsx …`, one process in the place of npm's shell, so a SIGTERM
 * sent to npm reaches it and it closes its port and exits.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { dirname, extname, isAbsolute, join, normalize, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const DASHBOARD_DIR = fileURLToPath(new URL('../dashboard', import.meta.url));
export const DEFAULT_OUT_DIR = join(DASHBOARD_DIR, 'dist');

export interface DashboardConfig {
  apiUrl: string;
  oidcIssuer?: string;
  oidcClientId?: string;
}

/** The runtime config from the environment; an unset or empty variable is left out. */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): DashboardConfig {
  const get = (k: string) => (env[k] && env[k]!.trim() !== '' ? env[k]!.trim() : undefined);
  const config: DashboardConfig = { apiUrl: get('DASHBOARD_API_URL') ?? 'http://localhost:8080' };
  const issuer = get('DASHBOARD_OIDC_ISSUER');
  const clientId = get('DASHBOARD_OIDC_CLIENT_ID');
  if (issuer) config.oidcIssuer = issuer;
  if (clientId) config.oidcClientId = clientId;
  for (const [k, v] of Object.entries({ DASHBOARD_API_URL: config.apiUrl, DASHBOARD_OIDC_ISSUER: issuer })) {
    if (v !== undefined && !/^https?:\/\/[^/]/i.test(v)) throw new Error(`${k} must be an http(s) URL, not ${JSON.stringify(v)}`);
  }
  return config;
}

const PROJECT_ROOT = dirname(DASHBOARD_DIR);
/** The build's record: what it was built from, kept out of the served folder (node_modules/.cache/kr-dashboard/). */
const RECORD_VERSION = 1;
const recordFile = (outDir: string) =>
  join(PROJECT_ROOT, 'node_modules', '.cache', 'kr-dashboard', `${createHash('sha1').update(resolve(outDir)).digest('hex').slice(0, 16)}.json`);

interface BuildRecord {
  version: number;
  outDir: string;
  startedMs: number;
  /** Every file the build read (relative to the project root), and the folders holding them. */
  inputs: string[];
  dirs: string[];
}

/** Builds the dashboard with Vite into `outDir`, and records what it was built from. */
export async function buildDashboard(outDir = DEFAULT_OUT_DIR): Promise<void> {
  const { build } = await import('vite');
  // The output folder made before the start time (its parent may be an input folder), strictly before it.
  const made = await mkdir(outDir, { recursive: true });
  if (made !== undefined) {
    const until = Math.min((await stat(dirname(made))).mtimeMs, Date.now() + 50);
    while (Math.floor(Date.now()) - 1 <= until) await new Promise((r) => setTimeout(r, 1));
  }
  const startedMs = Math.floor(Date.now()) - 1;
  const result = await build({
    root: DASHBOARD_DIR,
    base: './',
    configFile: false,
    logLevel: 'warn',
    esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
    build: { outDir, emptyOutDir: true, sourcemap: false, reportCompressedSize: false },
  });
  // The modules rollup bundled (sources and dependencies; not its virtual ones), and index.html.
  const outputs = (Array.isArray(result) ? result : [result]).flatMap((r) => ('output' in r ? r.output : []));
  const ids = new Set<string>([join(DASHBOARD_DIR, 'index.html')]);
  for (const o of outputs) if (o.type === 'chunk') for (const id of o.moduleIds) if (isAbsolute(id) && !id.includes('\0')) ids.add(id.split('?')[0]!);
  const inputs = [...ids].map((f) => relative(PROJECT_ROOT, f));
  const record: BuildRecord = { version: RECORD_VERSION, outDir: resolve(outDir), startedMs, inputs, dirs: [...new Set(inputs.map((f) => dirname(f)))] };
  const file = recordFile(outDir);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(`${file}.tmp`, JSON.stringify(record));
  await rename(`${file}.tmp`, file);
}

/**
 * Why `outDir` must be built again, or null when its build is fresh: as the server's bundle (scripts/bundle.mjs),
 * stale when there is no record or index.html, or when a recorded input or folder is gone or was modified at or
 * after the build started (a folder changes when a file is added or removed).
 */
export async function dashboardStaleReason(outDir = DEFAULT_OUT_DIR): Promise<string | null> {
  let record: BuildRecord;
  try {
    record = JSON.parse(await readFile(recordFile(outDir), 'utf8')) as BuildRecord;
  } catch {
    return 'no build record';
  }
  if (record.version !== RECORD_VERSION || record.outDir !== resolve(outDir) || !Array.isArray(record.inputs)) return 'build record unreadable';
  try {
    await stat(join(outDir, 'index.html'));
  } catch {
    return 'no build';
  }
  for (const p of [...record.inputs, ...record.dirs]) {
    const s = statSync(resolve(PROJECT_ROOT, p), { throwIfNoEntry: false });
    if (!s) return `${p} is gone`;
    if (s.mtimeMs >= record.startedMs) return `${p} changed`;
  }
  return null;
}

/** Builds `outDir` unless its build is fresh; returns why it built, or null. */
export async function buildDashboardIfStale(outDir = DEFAULT_OUT_DIR): Promise<string | null> {
  const reason = await dashboardStaleReason(outDir);
  if (reason !== null) await buildDashboard(outDir);
  return reason;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * The Content-Security-Policy header of every response: the policy of index.html's meta tag, narrowed to the
 * configured API and identity provider (`connect-src`), plus `frame-ancestors 'none'` (a meta tag cannot carry
 * it). A browser applies both, so a request must pass both: the meta tag is the floor any static host gets.
 * Scripts and styles only from the build itself (no inline script or style, no remote script); remote images
 * and media over https once the reader asks for them (the app holds them back until then); no plugins, no
 * frames, no <base>; forms only to this origin and to the command line's loopback listener (kr login --browser).
 */
export function contentSecurityPolicy(config: DashboardConfig): string {
  const origins: string[] = [];
  for (const u of [config.apiUrl, config.oidcIssuer]) {
    if (!u) continue;
    try {
      const origin = new URL(u).origin;
      if (!origins.includes(origin)) origins.push(origin);
    } catch {
      // configFromEnv refuses such a value; a config set in code is left out of the policy
    }
  }
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data: blob: https:",
    "media-src 'self' data: blob: https:",
    `connect-src 'self'${origins.map((o) => ` ${o}`).join('')}`,
    "font-src 'self'",
    "object-src 'none'",
    "frame-src 'none'",
    "worker-src 'none'",
    "base-uri 'none'",
    "form-action 'self' http://127.0.0.1:*",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Paths the app answers besides `/` (see dashboard/src/route.ts entryFromPath); a static host rewrites them to index.html. */
export const ENTRY_PATHS = new Set(['/cli-login', '/billing']);

export interface DashboardServer {
  url: string;
  port: number;
  /** Read on every request to /config.json, so it may be changed while serving. */
  config: DashboardConfig;
  close(): Promise<void>;
}

/** Serves the built files of `root` and /config.json from `config`; GET and HEAD only. */
export async function serveDashboard(opts: { root?: string; port?: number; host?: string; config: DashboardConfig }): Promise<DashboardServer> {
  const root = resolve(opts.root ?? DEFAULT_OUT_DIR);
  const index = join(root, 'index.html');
  await stat(index).catch(() => {
    throw new Error(`${index} is missing: build the dashboard first (npm run dashboard -- build)`);
  });
  const state = { config: opts.config };
  const server: Server = createServer(async (req, res) => {
    const security = {
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
      'content-security-policy': contentSecurityPolicy(state.config),
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8', ...security });
      res.end('method not allowed\n');
      return;
    }
    let pathname: string;
    try {
      pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8', ...security });
      res.end('bad request\n');
      return;
    }
    if (pathname === '/config.json') {
      res.writeHead(200, { 'content-type': TYPES['.json']!, 'cache-control': 'no-store', ...security });
      res.end(req.method === 'HEAD' ? undefined : JSON.stringify(state.config));
      return;
    }
    // The app's path entry points (the CLI's browser login, the hosted build's upgrade link) are index.html too.
    const entry = pathname === '/' || ENTRY_PATHS.has(pathname.replace(/\/$/, ''));
    const file = normalize(join(root, entry ? 'index.html' : pathname));
    if (file !== root && !file.startsWith(root + sep)) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', ...security });
      res.end('not found\n');
      return;
    }
    try {
      const body = await readFile(file);
      const immutable = file.startsWith(join(root, 'assets') + sep);
      res.writeHead(200, {
        'content-type': TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream',
        'cache-control': immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
        ...security,
      });
      res.end(req.method === 'HEAD' ? undefined : body);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', ...security });
      res.end('not found\n');
    }
  });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(opts.port ?? 5173, opts.host ?? '127.0.0.1', ok);
  });
  const port = (server.address() as AddressInfo).port;
  const host = opts.host ?? '127.0.0.1';
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    get config() {
      return state.config;
    },
    set config(c: DashboardConfig) {
      state.config = c;
    },
    close: () =>
      new Promise<void>((ok) => {
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

async function main(): Promise<void> {
  const config = configFromEnv();
  const portText = process.env.DASHBOARD_PORT ?? '5173';
  const port = Number(portText);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`DASHBOARD_PORT must be a port number, not ${JSON.stringify(portText)}`);
  const started = Date.now();
  // `build` always builds; serving reuses the build while its sources are unchanged.
  if (process.argv[2] === 'build') {
    await buildDashboard();
    console.log(`dashboard built into ${DEFAULT_OUT_DIR} in ${Date.now() - started} ms`);
    return;
  }
  const reason = await buildDashboardIfStale();
  console.log(reason === null ? `dashboard build in ${DEFAULT_OUT_DIR} is up to date` : `dashboard built into ${DEFAULT_OUT_DIR} in ${Date.now() - started} ms (${reason})`);
  const srv = await serveDashboard({ port, host: process.env.DASHBOARD_HOST ?? 'localhost', config });
  console.log(`dashboard on ${srv.url} (API ${config.apiUrl}${config.oidcIssuer ? `, sign-in through ${config.oidcIssuer}` : ''})`);
  const stop = () => void srv.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e: unknown) => {
    console.error(`error: ${(e as Error).message}`);
    process.exit(1);
  });
}
