/**
 * Testing a handler of functions/ in isolation: mount one route (or a few) on the real app, with real
 * dependencies on a temporary data root (libSQL file, bare git repositories), and call it with
 * `app.request()` — no HTTP server, no port.
 *
 *   import pagesRead from '../../functions/pages/read.ts';
 *
 *   const h = await mountHandler(pagesRead);                      // or [routeA, routeB], { env, clock }
 *   const alice = await h.user('alice@example.com');              // real user row + real session token
 *   const sha = await h.commit('notes', { 'a.md': '# A\n' });     // creates the repository, one commit
 *   await h.deps.members.add('notes', alice.id, 'owner');         // any other state: through h.deps
 *   const res = await alice.request('/v1/repos/notes/pages/a.md');  // or h.legacy.request, h.request
 *   expect(res.headers.get('x-page-sha')).toBe(sha);
 *   await h.close();                                              // closes the database, removes the root
 *
 * The app is lib/framework/app.ts's buildApp, as in production: request ids, CORS, rate limiting (off unless the env
 * turns it on: `SERVICE_RATELIMIT_DISABLE: '0'`), authentication, body caps, error mapping. Only the routes
 * given are mounted; any other path answers 404 `not found`. The config is testConfig's (fixed session
 * secret and legacy key) with `env` on top.
 */
import type { Hono } from 'hono';
import { buildApp } from '../../lib/framework/app.ts';
import type { Clock } from '../../lib/util/clock.ts';
import { systemClock } from '../../lib/util/clock.ts';
import type { Config } from '../../lib/framework/config.ts';
import { mintSession } from '../../lib/auth/session.ts';
import type { ClientIpOf } from '../../lib/framework/http/client-ip.ts';
import { memoryLimiters } from '../../lib/framework/http/rate-limit.ts';
import { memoryLogger } from '../../lib/framework/log.ts';
import type { AppEnv, RouteDef } from '../../lib/framework/route.ts';
import { openNodeDeps } from '../../lib/runtime/node/server.ts';
import { tempDir, testConfig } from './env.ts';

/** The Node runtime's dependencies, as openNodeDeps builds them. */
export type HandlerDeps = Awaited<ReturnType<typeof openNodeDeps>>;

/** `RequestInit` plus `token` (sent as `Authorization: Bearer <token>`) and `json` (body, with its content type). */
export type HandlerRequestInit = RequestInit & { token?: string; json?: unknown };

/** Someone who calls the app: `request` sends their token unless `init.token` or an Authorization header says otherwise. */
export interface Caller {
  token: string;
  request(path: string, init?: HandlerRequestInit): Promise<Response>;
}

/** A real user: a row in `users` and a session token minted by lib/auth/session.ts, as sign-in would. */
export interface TestUser extends Caller {
  id: string;
  email: string;
  name: string;
}

export interface MountedHandler {
  /** The app, for anything `request` does not cover (`h.app.request(new Request(...))`). */
  app: Hono<AppEnv>;
  deps: HandlerDeps;
  config: Config;
  dataRoot: string;
  /** The JSON log lines written so far (access log, warnings, errors). */
  logs: string[];
  /** `app.request` on `http://localhost<path>`; no Authorization header unless `init.token` is given. */
  request(path: string, init?: HandlerRequestInit): Promise<Response>;
  /** The legacy shared key (identity `legacy:admin`). */
  legacy: Caller;
  /**
   * Creates (or refreshes) the user `email` through deps.users.upsert, with a session token signed with the
   * configured secret: the token is verified by the same code as any other. Without `subject`, one user per email.
   */
  user(email: string, opts?: { name?: string; subject?: string }): Promise<TestUser>;
  /**
   * Creates `repo` if it is missing, then commits `pages` (path → content; `null` deletes) in one commit
   * through deps.repos.commitFiles. Returns the new head's sha.
   */
  commit(
    repo: string,
    pages: Record<string, string | null>,
    opts?: { author?: { name: string; email: string }; message?: string },
  ): Promise<string>;
  /** Closes the database and removes the data root. */
  close(): Promise<void>;
}

export interface MountOptions {
  /** Configuration variables over testConfig's (e.g. `{ SERVICE_HOSTED: '1' }`). */
  env?: Record<string, string>;
  /** Default: the system clock. A ManualClock moves expiries, signatures and commit times by hand. */
  clock?: Clock;
  /** The client address the app sees (access log, rate-limit key). Default: always 127.0.0.1. */
  clientIp?: ClientIpOf;
}

/** Issuer recorded on the users `user()` creates (users are keyed by issuer and subject). */
export const TEST_ISSUER = 'https://handler-tests.invalid';

/** Mounts `route` (one functions/ file's default export, or several) on a fresh app with real temporary deps. */
export async function mountHandler(route: RouteDef | RouteDef[], opts: MountOptions = {}): Promise<MountedHandler> {
  const dir = await tempDir('kr-handler-');
  const clock = opts.clock ?? systemClock;
  const log = memoryLogger();
  let deps: HandlerDeps;
  try {
    deps = await openNodeDeps(testConfig(dir.path, opts.env), { log, clock });
  } catch (e) {
    await dir.cleanup();
    throw e;
  }
  const { config } = deps;
  const app = buildApp(deps, {
    routes: Array.isArray(route) ? route : [route],
    clientIp: opts.clientIp ?? (() => '127.0.0.1'),
    limiters: memoryLimiters(clock),
  });

  const request = (path: string, init: HandlerRequestInit = {}): Promise<Response> => {
    const { token, json, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (token !== undefined && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
    let body = rest.body;
    if (json !== undefined) {
      if (!headers.has('content-type')) headers.set('content-type', 'application/json');
      body = JSON.stringify(json);
    }
    return Promise.resolve(app.request(path, { ...rest, headers, body }));
  };
  const caller = (token: string): Caller => ({
    token,
    request: (path, init = {}) => request(path, { token, ...init }),
  });

  return {
    app,
    deps,
    config,
    dataRoot: dir.path,
    logs: log.lines,
    request,
    legacy: caller(config.apiKey),
    async user(email, o = {}) {
      const { user } = await deps.users.upsert({
        issuer: TEST_ISSUER,
        subject: o.subject ?? email.toLowerCase(),
        email,
        name: o.name ?? email.split('@')[0]!,
      });
      const token = await mintSession(config.sessionSecret, clock, { id: user.id, email: user.email });
      return { id: user.id, email: user.email, name: user.name, ...caller(token) };
    },
    async commit(repo, pages, o = {}) {
      await deps.repos.create(repo);
      const enc = new TextEncoder();
      const files = Object.entries(pages).map(([path, content]) => ({
        path,
        content: content === null ? null : enc.encode(content),
      }));
      const res = await deps.repos.commitFiles(
        repo,
        files,
        o.author ?? { name: 'Test', email: 'test@example.com' },
        o.message ?? 'test commit',
      );
      return res.head;
    },
    async close() {
      // Open event streams end and a webhook delivery under way is recorded before the database closes.
      deps.live.hub.close();
      await deps.deliveries.stop();
      await deps.repos.index.close();
      await deps.db.close();
      await dir.cleanup();
    },
  };
}
