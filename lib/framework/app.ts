import { Hono } from 'hono';
import type { Context, MiddlewareHandler } from 'hono';
import type { Deps } from './deps.ts';
import type { AppEnv, RouteDef } from './route.ts';
import { HttpError, refuse, toHttpError } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import { BodyBudget, GIT_BODIES_CEILING, GIT_BODY_BYTES, SHARES_PER_BUDGET, SMALL_BODIES_CEILING, SMALL_BODY_BYTES, bodyGuard, bodyHolders, declaredCap, type BodyKind, type TooLarge, type BodySourceOf } from './http/body-limit.ts';
import { corsMiddleware } from './http/cors.ts';
import { rateLimit, type LimiterFactory } from './http/rate-limit.ts';
import { ipBucketKey, type ClientIpOf } from './http/client-ip.ts';
import { authenticate, authenticateGit } from '../auth/middleware.ts';
import { CachingRouter } from './http/router.ts';

export interface AppOptions {
  /** Routes to mount (functions/index.ts in production; tests may add their own). */
  routes: RouteDef[];
  /** Requests in flight by id, for the runtime's slow-request warning. */
  inflight?: Map<string, InflightRequest>;
  /**
   * The client address of a request, as the runtime knows it: the access log's `ip`, and (per IPv6 /64) the
   * rate-limit key. Node: lib/runtime/node/client-ip.ts (socket peer, X-Forwarded-For behind a trusted proxy);
   * Workers: lib/runtime/workers/client-ip.ts (CF-Connecting-IP).
   */
  clientIp: ClientIpOf;
  /**
   * Makes the rate limiters (unless SERVICE_RATELIMIT_DISABLE). Node: memoryLimiters (lib/framework/http/rate-limit.ts);
   * Workers: durableObjectLimiters (lib/runtime/workers/rate-limiter.ts), which hold across isolates.
   */
  limiters: LimiterFactory;
  /**
   * Where request bodies are read from. Node: lib/runtime/node/body.ts (the IncomingMessage itself); default
   * (Workers, in-process requests): the Request's web stream.
   */
  bodySource?: BodySourceOf;
  /**
   * How a handler cuts its client's connection at once (an event stream whose reader fell behind: the
   * runtime would otherwise wait for the socket to drain). Node: lib/runtime/node/server.ts (destroys the
   * socket); none on Workers, where a failed response body ends the connection.
   */
  connectionCutter?: (c: Context) => (() => void) | undefined;
}

export interface InflightRequest {
  method: string;
  path: string;
  /** Clock milliseconds when the request arrived. */
  started: number;
}

/** `/v1` and everything under it: the API proper, whose responses are never to be cached. */
const isApiPath = (path: string) => path === '/v1' || path.startsWith('/v1/');

/** Builds the whole HTTP application around injected dependencies. */
export function buildApp(deps: Deps, opts: AppOptions): Hono<AppEnv> {
  const { config, log, clock } = deps;
  // Matches are kept per (method, path): see lib/framework/http/router.ts.
  const app = new Hono<AppEnv>({ router: new CachingRouter() });
  const ipOf = (c: Context) => ipBucketKey(opts.clientIp(c));

  // Request id, security headers and one access-log line per request, around everything else.
  app.use('*', async (c, next) => {
    const started = performance.now();
    const requestId = crypto.randomUUID();
    c.set('deps', deps);
    c.set('requestId', requestId);
    c.set('cutConnection', opts.connectionCutter?.(c));
    // Set before the handler: they go into the headers every response built through `c` starts from.
    c.header('X-Request-Id', requestId);
    c.header('X-Content-Type-Options', 'nosniff');
    // docs/api.md: every response to an authenticated request carries no-store. We put it on every /v1 response
    // but preflights (401s, 404s and sign-in's token included): simpler, and never less private.
    const noStore = isApiPath(c.req.path) && c.req.method !== 'OPTIONS';
    if (noStore) c.header('Cache-Control', 'no-store');
    opts.inflight?.set(requestId, { method: c.req.method, path: c.req.path, started: clock.now() });
    try {
      await next();
    } finally {
      opts.inflight?.delete(requestId);
    }
    // A response built without `c` (none of ours) would lack it; add it then.
    if (!c.res.headers.has('X-Request-Id')) c.res.headers.set('X-Request-Id', requestId);
    if (!c.res.headers.has('X-Content-Type-Options')) c.res.headers.set('X-Content-Type-Options', 'nosniff');
    if (noStore && !c.res.headers.has('Cache-Control')) c.res.headers.set('Cache-Control', 'no-store');
    log.info('request', {
      id: requestId,
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      ms: Math.round((performance.now() - started) * 10) / 10,
      ip: opts.clientIp(c),
    });
  });

  app.use('*', corsMiddleware(config.corsOrigins, log));

  if (!config.rateLimitDisabled) {
    const general = opts.limiters({ name: 'general', perMinute: config.rateLimitPerMin, burst: config.rateLimitBurst });
    const signIn = opts.limiters({ name: 'sign-in', perMinute: config.authRateLimitPerMin, burst: config.authRateLimitBurst });
    const generalMw = rateLimit({ limiter: general, keyOf: ipOf });
    const signInMw = rateLimit({ limiter: signIn, keyOf: ipOf });
    const exempt = new Set(opts.routes.filter((r) => r.rateLimited === false).map((r) => r.path));
    app.use('*', async (c, next) => {
      if (c.req.method === 'OPTIONS' || exempt.has(c.req.path)) return next();
      return generalMw(c, next);
    });
    for (const r of opts.routes) if (r.limiter === 'auth') app.on(r.method, r.path, signInMw);
  }

  // Bodies (lib/framework/http/body-limit.ts): pushes and small JSON bodies each have a budget of their own, shared out
  // per client address and per identity; each route's guard runs after authentication, so an unauthenticated
  // request is answered with its body unread.
  const guardOf = (maxBytes: number, ceiling: number, tooLarge?: TooLarge) =>
    bodyGuard({
      maxBytes,
      budget: new BodyBudget(ceiling),
      holdersOf: (c) => bodyHolders(ipOf(c), c.get('identity')),
      idleMs: config.bodyIdleTimeoutMs,
      deadlineMs: config.bodyTimeoutMs,
      sourceOf: opts.bodySource,
      tooLarge,
    });
  const guards: Record<BodyKind, MiddlewareHandler> = {
    none: declaredCap(config.maxBodyBytes),
    small: guardOf(Math.min(SMALL_BODY_BYTES, config.maxBodyBytes), SMALL_BODIES_CEILING),
    push: guardOf(config.maxBodyBytes, config.maxInflightBodyBytes),
    git: guardOf(Math.min(GIT_BODY_BYTES, config.maxBodyBytes), GIT_BODIES_CEILING),
    // Imports go to storage as they arrive (one chunk in memory): their budget counts the bytes being
    // stored, four maximal bodies, a quarter per client address or identity. The 413 says the limit.
    import: guardOf(config.maxImportBytes, SHARES_PER_BUDGET * config.maxImportBytes, R.import_too_large.example(config.maxImportBytes)),
  };

  // Every route but the public ones (health, sign-in, signed webhooks) resolves the caller first.
  for (const r of opts.routes) {
    const guard = guards[r.body ?? (r.method === 'POST' ? 'small' : 'none')];
    const chain: MiddlewareHandler<AppEnv>[] = [];
    if (!r.public) chain.push(r.auth === 'git' ? authenticateGit : authenticate);
    chain.push(guard);
    // (Hono's overloads want a fixed count; at run time `on` takes any number of handlers.)
    app.on(r.method, r.path, ...(chain as [MiddlewareHandler<AppEnv>]), r.handler);
  }
  // A known path with another method: 405, not 404.
  const methodsByPath = new Map<string, Set<string>>();
  for (const r of opts.routes) {
    const set = methodsByPath.get(r.path) ?? new Set<string>();
    set.add(r.method);
    methodsByPath.set(r.path, set);
  }
  for (const [path, methods] of methodsByPath) {
    app.all(path, (c) => {
      c.header('Allow', [...methods, 'OPTIONS'].join(', '));
      return json(c, refuse(R.method_not_allowed));
    });
  }

  app.notFound((c) => json(c, refuse(R.not_found)));
  app.onError((err, c) => {
    const http = toHttpError(err);
    if (http) return json(c, http);
    log.error('unhandled', {
      id: c.get('requestId'),
      method: c.req.method,
      path: c.req.path,
      error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
      stack: err instanceof Error ? err.stack : undefined,
    });
    return json(c, refuse(R.internal_error));
  });
  return app;
}

/** An error's JSON answer: `{"error", "code", ...extra}` with its status and headers. */
function json(c: Context, e: HttpError): Response {
  for (const [name, value] of Object.entries(e.headers)) c.header(name, value);
  return c.json(e.body(), e.status as 400);
}
