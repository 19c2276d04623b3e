import type { Hono } from 'hono';
import { systemClock } from '../../util/clock.ts';
import { ConfigError, loadConfig, type Config } from '../../framework/config.ts';
import type { Deps } from '../../framework/deps.ts';
import { refuse } from '../../core/errors.ts';
import { R } from '../../core/refusals.ts';
import { jsonLogger, type Logger } from '../../framework/log.ts';
import { D1Database, type D1Like } from './d1.ts';
import { migrate } from '../../db/migrate.ts';
import { BUNDLED_MIGRATIONS } from './migrations.ts';
import { Members } from '../../db/members.ts';
import { Users } from '../../db/users.ts';
import { Pats } from '../../db/pats.ts';
import { Activity } from '../../db/activity.ts';
import { Invites } from '../../db/invites.ts';
import { remoteIdpKeys } from '../../auth/idp.ts';
import { quotaFor } from '../../hosted/quota.ts';
import { ParseCache } from '../../usecases/diff.ts';
import { buildApp } from '../../framework/app.ts';
import { workersClientIp } from './client-ip.ts';
import { durableObjectLimiters, type RateLimiterNamespace } from './rate-limiter.ts';
import type { AppEnv, RouteDef } from '../../framework/route.ts';
import { RemoteRepos, type RepoNamespace } from './remote-repos.ts';
import { RemoteLive } from './remote-live.ts';
import { durableSlots, type StreamSlotsNamespace } from './stream-slots.ts';
import { assetsClientFiles, type AssetsBinding } from './client-files.ts';

/**
 * The Workers runtime (the hosted build, worker.ts): the same app as the Node build, with dependencies
 * made from each request's bindings — D1 for accounts, tokens and membership, one Durable Object per
 * repository for its git objects and index, Durable Objects for the rate limiters — and configuration
 * from the Worker's variables and secrets, which carry the same names as the Node build's environment.
 * Nothing is set up at module load: the first request of an isolate builds the app for its `env` (and
 * applies pending migrations to D1 once), later requests reuse it.
 */

export interface WorkerEnv {
  DB: D1Like;
  REPO: RepoNamespace;
  RATE_LIMITER: RateLimiterNamespace;
  /** One object per identity counting its event streams across repositories (stream-slots.ts). */
  STREAM_SLOTS?: StreamSlotsNamespace;
  /** The static assets (wrangler.toml `[assets]`): the client package, dist/client/. */
  ASSETS?: AssetsBinding;
  [variable: string]: unknown;
}

/** The Worker's string variables and secrets, as the environment loadConfig reads. */
function variables(env: WorkerEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (typeof v === 'string') out[k] = v;
  return out;
}

const log: Logger = jsonLogger(
  (line) => console.log(line),
  (line) => console.error(line),
);

interface Built {
  app: Hono<AppEnv>;
  ready: Promise<unknown>;
}
const built = new WeakMap<object, Built>();

/**
 * The configuration of a Worker: the same variables and rules as on Node (wrangler.toml sets
 * SERVICE_HOSTED=1 for a deployment; `npm run dev:worker` passes the environment through, so it behaves
 * like `npm start` unless told otherwise), except that a session secret must be set even when not hosted:
 * isolates come and go, so a random one would sign sessions no other isolate accepts. A configuration
 * refused makes every request 503 `server misconfigured`, with the reason logged (handleWorkerRequest).
 */
export function workerConfig(env: WorkerEnv): { config: Config; warnings: string[] } {
  // The hosted build's own refusals (the development key, no session secret) come from loadConfig.
  const loaded = loadConfig(variables(env), '/');
  if (loaded.config.sessionSecretGenerated) {
    throw new ConfigError('SERVICE_SESSION_SECRET must be set for the Workers build (wrangler secret put SERVICE_SESSION_SECRET)');
  }
  // An import's body comes in one request: the platform refuses bodies past its limit before the Worker sees
  // them, so the cap is at most that, and the 413 says it.
  const env0 = variables(env);
  if (env0.SERVICE_MAX_IMPORT_BYTES === undefined || loaded.config.maxImportBytes > WORKERS_MAX_BODY_BYTES) {
    if (env0.SERVICE_MAX_IMPORT_BYTES !== undefined) {
      loaded.warnings.push(`SERVICE_MAX_IMPORT_BYTES (${loaded.config.maxImportBytes}) is above the platform's request-body limit; using ${WORKERS_MAX_BODY_BYTES}`);
    }
    loaded.config.maxImportBytes = WORKERS_MAX_BODY_BYTES;
  }
  return loaded;
}

/** The platform's request-body limit on most plans (100 MB): the Workers build's largest import. */
export const WORKERS_MAX_BODY_BYTES = 100_000_000;

export function workerDeps(env: WorkerEnv, config: Config): Deps {
  const clock = systemClock;
  const db = new D1Database(env.DB);
  return {
    config,
    clock,
    db,
    repos: new RemoteRepos(env.REPO, db, clock),
    log,
    members: new Members(db, clock),
    users: new Users(db, clock),
    pats: new Pats(db, clock),
    idpKeys: remoteIdpKeys(new URL(config.idpJwksUrl), { clock }),
    activity: new Activity(db, clock),
    invites: new Invites(db, clock),
    quota: quotaFor(config),
    parsedPages: new ParseCache(8 * 1024 * 1024, 4 * 1024 * 1024),
    // Each repository's Durable Object holds its event streams, event log, webhooks and deliveries.
    live: new RemoteLive(env.REPO, env.STREAM_SLOTS ? durableSlots(env.STREAM_SLOTS) : undefined),
    clientFiles: assetsClientFiles(env.ASSETS),
  };
}

/** The route table for a configuration: functions/index.ts's `routesFor`, handed in by worker.ts. */
export type RoutesFor = (config: Config) => RouteDef[];

function build(env: WorkerEnv, routesFor: RoutesFor): Built {
  const { config, warnings } = workerConfig(env);
  for (const w of warnings) log.warn('config', { warning: w });
  const deps = workerDeps(env, config);
  const app = buildApp(deps, {
    routes: routesFor(config),
    clientIp: workersClientIp,
    limiters: durableObjectLimiters(env.RATE_LIMITER, {
      onError: (e) => log.warn('rate_limiter_unavailable', { error: String(e) }),
    }),
  });
  const ready = migrate(deps.db, BUNDLED_MIGRATIONS, Math.floor(Date.now() / 1000));
  return { app, ready };
}

/** The Worker's fetch handler, serving the routes `routesFor` gives. */
export async function handleWorkerRequest(request: Request, env: WorkerEnv, ctx: unknown, routesFor: RoutesFor): Promise<Response> {
  let b = built.get(env);
  if (!b) {
    try {
      b = build(env, routesFor);
    } catch (e) {
      log.error('config', { error: e instanceof Error ? e.message : String(e) });
      return Response.json(refuse(R.server_misconfigured).body(), { status: 503 });
    }
    built.set(env, b);
    // A failed migration is tried again by the next request.
    b.ready.catch(() => built.delete(env));
  }
  try {
    await b.ready;
  } catch (e) {
    log.error('migrate', { error: e instanceof Error ? e.message : String(e) });
    return Response.json(refuse(R.internal_error).body(), { status: 500 });
  }
  return b.app.fetch(request, env, ctx as never);
}
