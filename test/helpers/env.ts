import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { loadConfig, type Config } from '../../lib/framework/config.ts';
import { memoryLogger } from '../../lib/framework/log.ts';
import type { Clock } from '../../lib/util/clock.ts';
import { openNodeDeps, startServer, type NodeDeps, type RunningServer } from '../../lib/runtime/node/server.ts';
import { routesFor } from '../../functions/index.ts';
import type { Deps } from '../../lib/framework/deps.ts';
import type { RouteDef } from '../../lib/framework/route.ts';

export async function tempDir(prefix = 'kr-test-'): Promise<{ path: string; cleanup: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  // Retries (ENOTEMPTY): a background pack merge a test's last push queued may still be writing files.
  return { path, cleanup: () => rm(path, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 }) };
}

/** A config for tests: temp data root, port 0 on loopback, fixed secrets, limits off unless asked. */
export function testConfig(dataRoot: string, env: Record<string, string> = {}): Config {
  return loadConfig(
    {
      SERVICE_DATA_ROOT: dataRoot,
      SERVICE_LISTEN_ADDR: '127.0.0.1:0',
      SERVICE_SESSION_SECRET: 'test-session-secret-0123456789-abcdef',
      SERVICE_API_KEY: 'test-legacy-key',
      SERVICE_RATELIMIT_DISABLE: '1',
      ...env,
    },
    dataRoot,
  ).config;
}

export interface TestServer extends RunningServer {
  deps: NodeDeps;
  dataRoot: string;
  logs: string[];
  /** fetch against the server with the legacy key unless other headers are given. */
  api(path: string, init?: RequestInit & { token?: string | null; json?: unknown }): Promise<Response>;
  stop(): Promise<void>;
}

/** Starts the real server (real libSQL file, real git repositories) on port 0 in a temp data root. */
export async function startTestServer(
  opts: { env?: Record<string, string>; clock?: Clock; routes?: RouteDef[]; dataRoot?: string; slowCheckMs?: number } = {},
): Promise<TestServer> {
  const dir = opts.dataRoot ? null : await tempDir();
  const dataRoot = opts.dataRoot ?? dir!.path;
  const config = testConfig(dataRoot, opts.env);
  const log = memoryLogger();
  const deps = await openNodeDeps(config, { log, clock: opts.clock });
  // The routes of the build the config describes (SERVICE_HOSTED=1 adds billing and admin).
  const running = await startServer(deps, opts.routes ?? routesFor(config), { slowCheckMs: opts.slowCheckMs });
  return {
    ...running,
    deps,
    dataRoot,
    logs: log.lines,
    api(path, init = {}) {
      const headers = new Headers(init.headers);
      const token = init.token === undefined ? 'test-legacy-key' : init.token;
      if (token !== null && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
      let body = init.body;
      if (init.json !== undefined) {
        headers.set('content-type', 'application/json');
        body = JSON.stringify(init.json);
      }
      return fetch(`${running.url}${path}`, { ...init, headers, body });
    },
    async stop() {
      await running.close();
      if (dir) await dir.cleanup();
    },
  };
}

/** Runs the real git command against a bare repository. */
export function gitIn(gitdir: string, ...args: string[]): string {
  return execFileSync('git', ['--git-dir', gitdir, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** `git fsck --strict`; throws with git's output when it fails. */
export function fsck(gitdir: string): string {
  return execFileSync('git', ['--git-dir', gitdir, 'fsck', '--strict', '--no-dangling'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}
