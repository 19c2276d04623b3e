/**
 * The two builds as test targets: the Node server (in this process, port 0) and the hosted build under
 * workerd (Miniflare, port 0, the same bundle `npm run dev:worker` runs). A suite written against a
 * `Target` talks to it over HTTP only, so every case runs on both.
 */
import { startTestServer, tempDir } from './env.ts';
import { buildWorker } from '../../scripts/build-worker.ts';
import { startWorkerDev } from '../../scripts/dev-worker.ts';
import { join } from 'node:path';
import { tmpdir } from 'node:os';

export type TargetKind = 'node' | 'workers';

export interface Target {
  kind: TargetKind;
  url: string;
  /** The server's log lines so far (JSON). */
  logs: string[];
  /** fetch against the target with the legacy key unless `token` says otherwise (null: no header). */
  api(path: string, init?: RequestInit & { token?: string | null; json?: unknown }): Promise<Response>;
  stop(): Promise<void>;
}

export const LEGACY_KEY = 'test-legacy-key';
const SECRET = 'test-session-secret-0123456789-abcdef';

let bundle: Promise<string> | null = null;
/** One bundle per test process (esbuild takes about a second). */
function workerBundle(): Promise<string> {
  bundle ??= buildWorker(join(tmpdir(), `kr-worker-${process.pid}.mjs`));
  return bundle;
}

function client(url: string): Target['api'] {
  return (path, init = {}) => {
    const headers = new Headers(init.headers);
    const token = init.token === undefined ? LEGACY_KEY : init.token;
    if (token !== null && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(init.json);
    }
    return fetch(`${url}${path}`, { ...init, headers, body });
  };
}

/** Starts a fresh target with its own empty data; `env` as the server's environment. */
export async function startTarget(kind: TargetKind, env: Record<string, string> = {}): Promise<Target> {
  if (kind === 'node') {
    const srv = await startTestServer({ env });
    return { kind, url: srv.url, logs: srv.logs, api: client(srv.url), stop: () => srv.stop() };
  }
  const dir = await tempDir('kr-workers-');
  const logs: string[] = [];
  const dev = await startWorkerDev({
    output: (line) => logs.push(line),
    bundle: await workerBundle(),
    env: {
      SERVICE_DATA_ROOT: dir.path,
      SERVICE_LISTEN_ADDR: '127.0.0.1:0',
      SERVICE_SESSION_SECRET: SECRET,
      SERVICE_API_KEY: LEGACY_KEY,
      SERVICE_RATELIMIT_DISABLE: '1',
      ...env,
    },
  });
  return {
    kind,
    url: dev.url,
    logs,
    api: client(dev.url),
    async stop() {
      await dev.close();
      await dir.cleanup();
    },
  };
}
