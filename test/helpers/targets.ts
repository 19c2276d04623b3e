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
import { buildOpenApi } from '../../lib/framework/openapi.ts';
import { hostedRoutes, routes } from '../../functions/index.ts';
import { ResponseChecker } from './openapi-check.ts';

export type TargetKind = 'node' | 'workers';

export interface Target {
  kind: TargetKind;
  url: string;
  /** The server's log lines so far (JSON). */
  logs: string[];
  /** The Node server's data directory (undefined for workerd, whose storage is its own). */
  dataRoot?: string;
  /**
   * fetch against the target with the legacy key unless `token` says otherwise (null: no header). Every
   * answer is checked against the OpenAPI document of the target's build (test/helpers/openapi-check.ts):
   * one that drifts from it (an undocumented status, a body off its schema, a missing header) throws, and
   * so fails the test that made the request.
   */
  api(path: string, init?: RequestInit & { token?: string | null; json?: unknown }): Promise<Response>;
  /**
   * Runs one statement on the target's account database directly (Node: service.db; Workers: D1), as the
   * admin command does from outside the server: nobody is told.
   */
  exec(sql: string, args?: Array<string | number | null>): Promise<void>;
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

/** One checker per build flavour: the document a self-hosted server serves lacks the hosted routes. */
const checkers = new Map<boolean, ResponseChecker>();
function checkerFor(env: Record<string, string>): ResponseChecker {
  const hosted = ['1', 'true', 'yes'].includes((env.SERVICE_HOSTED ?? '').trim().toLowerCase());
  let checker = checkers.get(hosted);
  if (!checker) {
    checker = new ResponseChecker(buildOpenApi({ routes, ...(hosted ? { hostedRoutes } : {}) }));
    checkers.set(hosted, checker);
  }
  return checker;
}

function client(url: string, checker: ResponseChecker): Target['api'] {
  return async (path, init = {}) => {
    const headers = new Headers(init.headers);
    const token = init.token === undefined ? LEGACY_KEY : init.token;
    if (token !== null && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
    let body = init.body;
    if (init.json !== undefined) {
      headers.set('content-type', 'application/json');
      body = JSON.stringify(init.json);
    }
    const res = await fetch(`${url}${path}`, { ...init, headers, body });
    const problem = await checker.check(init.method ?? 'GET', path, res.clone());
    if (problem) throw new Error(`response drifted from the OpenAPI document: ${problem}`);
    return res;
  };
}

/** Starts a fresh target with its own empty data; `env` as the server's environment. */
export async function startTarget(kind: TargetKind, env: Record<string, string> = {}): Promise<Target> {
  if (kind === 'node') {
    const srv = await startTestServer({ env });
    return {
      kind,
      url: srv.url,
      logs: srv.logs,
      dataRoot: srv.dataRoot,
      api: client(srv.url, checkerFor(env)),
      exec: async (sql, args = []) => void (await srv.deps.db.run(sql, args)),
      stop: () => srv.stop(),
    };
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
    api: client(dev.url, checkerFor(env)),
    async exec(sql, args = []) {
      const d1 = await dev.mf.getD1Database('DB');
      await d1
        .prepare(sql)
        .bind(...args)
        .run();
    },
    async stop() {
      await dev.close();
      await dir.cleanup();
    },
  };
}
