/**
 * `npm run dev:worker`: the hosted build (worker.ts) under a local workerd, through Miniflare, configured
 * exactly like `npm start` — the same `SERVICE_*` and `IDP_*` variables from the environment, the same
 * listen address (`SERVICE_LISTEN_ADDR` or `:$PORT`) — with D1 and the Durable Objects persisted under
 * `$SERVICE_DATA_ROOT/workers/`. It prints a `listening` log line like the Node server's (`url`, and
 * `address` with the port workerd really listens on) and stops cleanly on SIGTERM or SIGINT, also when the
 * signal comes while it is still starting: workerd is stopped before it exits. While it runs, the admin
 * command's `--target worker-local` reaches its D1 and repositories through it (admin/dev-worker-channel.ts).
 *
 * package.json runs it as `exec node --import tsx …`: npm's shell is replaced by this one node process, so
 * a SIGTERM sent to npm reaches it (a `tsx` parent in between would be left behind, its child serving on).
 */
import { Miniflare } from 'miniflare';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '../lib/framework/config.ts';
import { jsonLogger } from '../lib/framework/log.ts';
import { buildWorker } from './build-worker.ts';
import { CLIENT_DIR } from './client-package.mjs';
import { COMPATIBILITY_DATE, D1_DATABASE_ID, RATE_LIMITER_CLASS, REPO_CLASS, STREAM_SLOTS_CLASS, devWorkerStorage } from '../admin/dev-worker-storage.ts';
import { openAdminChannel } from '../admin/dev-worker-channel.ts';

const log = jsonLogger(
  (line) => process.stdout.write(`${line}\n`),
  (line) => process.stderr.write(`${line}\n`),
);

export interface WorkerDevOptions {
  /** The environment the variables come from (process.env by default). */
  env?: Record<string, string | undefined>;
  /** The bundle to run (built afresh when absent). */
  bundle?: string;
  /** Where the Worker's own output (its JSON log) goes, line by line; this process's stdout/stderr when absent. */
  output?: (line: string) => void;
  /** The static assets (the client package; wrangler.toml `[assets]`): dist/client/ when it exists, unless given. */
  assetsDir?: string;
}

/** The Worker's string bindings: every SERVICE_* and IDP_* variable of the environment. */
export function workerBindings(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && /^(SERVICE_|IDP_)/.test(k)) out[k] = v;
  return out;
}

/**
 * Hosts Miniflare serves on the listen socket itself. For any other host it serves the URL it reports
 * from a second socket on 127.0.0.1 with a port of its own.
 */
const LOCALLY_REACHABLE = new Set(['localhost', '127.0.0.1', '0.0.0.0', '::', '::1', '*']);

/** A port free on `host` now (for workerd, when port 0 is asked on a host whose socket Miniflare does not report). */
function freePort(host: string): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, host, () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => ok(port));
    });
  });
}

export async function startWorkerDev(
  opts: WorkerDevOptions = {},
): Promise<{ url: string; address: string; mf: Miniflare; close(): Promise<void> }> {
  const env = opts.env ?? process.env;
  // The same rules as `npm start` (and the same refusals: a short session secret stops it here).
  const { config, warnings } = loadConfig(env as Record<string, string>, process.cwd());
  for (const w of warnings) log.warn('config', { warning: w });
  const bindings = workerBindings(env);
  if (!bindings.SERVICE_SESSION_SECRET) {
    // As on Node: a random secret for this run, so sessions end when it stops.
    bindings.SERVICE_SESSION_SECRET = randomBytes(32).toString('base64url');
  }
  const storage = devWorkerStorage(config.dataRoot);
  await mkdir(storage.dir, { recursive: true });
  const scriptPath = opts.bundle ?? (await buildWorker());
  const assetsDir = opts.assetsDir ?? CLIENT_DIR;
  const host = config.listenHost ?? '0.0.0.0';
  const port = config.listenPort === 0 && !LOCALLY_REACHABLE.has(host) ? await freePort(host) : config.listenPort;
  const mf = new Miniflare({
    modules: true,
    scriptPath,
    modulesRoot: dirname(scriptPath),
    compatibilityDate: COMPATIBILITY_DATE,
    compatibilityFlags: ['nodejs_compat'],
    d1Databases: { DB: D1_DATABASE_ID },
    durableObjects: {
      REPO: { className: REPO_CLASS, useSQLite: true },
      RATE_LIMITER: { className: RATE_LIMITER_CLASS, useSQLite: true },
      STREAM_SLOTS: { className: STREAM_SLOTS_CLASS, useSQLite: true },
    },
    bindings,
    // As wrangler.toml's [assets] (the Worker first, the files through its ASSETS binding), but as a service
    // binding answered here from the folder: Miniflare's assets router in front of the Worker reset about one
    // connection in sixteen whose request body the Worker refused unread (a 401, 403 or 503 before the body).
    serviceBindings: { ASSETS: (request: Request) => assetResponse(assetsDir, request) },
    d1Persist: storage.d1Persist,
    durableObjectsPersist: storage.durableObjectsPersist,
    handleRuntimeStdio(stdout: Readable, stderr: Readable) {
      for (const [stream, sink] of [
        [stdout, process.stdout],
        [stderr, process.stderr],
      ] as const) {
        let buf = '';
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => {
          if (!opts.output) return void sink.write(chunk);
          buf += chunk;
          for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
            opts.output(buf.slice(0, nl));
            buf = buf.slice(nl + 1);
          }
        });
      }
    },
    host,
    port,
  });
  let url: string;
  try {
    url = (await mf.ready).toString().replace(/\/$/, '');
  } catch (e) {
    await mf.dispose().catch(() => {});
    throw e;
  }
  // The port workerd listens on: the one asked for, else (port 0) the one of the URL Miniflare reports,
  // which is the listen socket's for these hosts.
  const bound = port !== 0 ? port : Number(new URL(url).port);
  const address = `${config.listenHost === undefined ? '*' : host.includes(':') ? `[${host}]` : host}:${bound}`;
  // The admin command's way in while this runs (it must not open the same files with a workerd of its own).
  const channel = await openAdminChannel(mf, storage.dir).catch(async (e: unknown) => {
    await mf.dispose();
    throw e;
  });
  return {
    url,
    address,
    mf,
    async close() {
      await channel.close();
      await mf.dispose();
    },
  };
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  // Signals are handled from the start: one that comes while Miniflare is starting stops workerd as soon
  // as it is up, instead of killing this process and leaving workerd serving.
  let running: { close(): Promise<void> } | null = null;
  let stopping = false;
  const exitAfter = (close: () => Promise<void>) =>
    close().then(
      () => process.exit(0),
      (e: unknown) => {
        log.error('shutdown', { error: String(e) });
        process.exit(1);
      },
    );
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutdown', { signal });
    if (running) exitAfter(() => running!.close());
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  try {
    const dev = await startWorkerDev();
    running = dev;
    if (stopping) await exitAfter(() => dev.close());
    else log.info('listening', { url: dev.url, address: dev.address, runtime: 'workerd' });
  } catch (e) {
    if (e instanceof ConfigError) {
      log.error('config', { error: e.message });
      process.exit(2);
    }
    throw e;
  }
}

/** A file of the client package from `dir`, as the ASSETS binding answers: 404 for any other name or a missing file. */
async function assetResponse(dir: string, request: Request): Promise<Response> {
  const name = decodeURIComponent(new URL(request.url).pathname.slice(1));
  if (name !== 'kr.tgz' && name !== 'kr.mjs') return new Response('not found', { status: 404 });
  try {
    const bytes = await readFile(join(dir, name));
    return new Response(bytes, { headers: { 'content-length': String(bytes.byteLength) } });
  } catch {
    return new Response('not found', { status: 404 });
  }
}
