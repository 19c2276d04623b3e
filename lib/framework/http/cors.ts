/**
 * CORS per configuration (SERVICE_CORS_ORIGINS, docs/self-hosting.md "Configuration"), on hono/cors. Only browsers are affected: the server never
 * refuses a request because of its Origin, it just withholds Access-Control-Allow-Origin, so the browser
 * hides the response from a page of a non-allowed origin. Such an origin is logged once (`cors_origin_refused`),
 * so an operator whose dashboard runs elsewhere than SERVICE_CORS_ORIGINS says learns which origin to add.
 */
import { cors } from 'hono/cors';
import type { MiddlewareHandler } from 'hono';
import type { Logger } from '../log.ts';

export const CORS_ALLOW_METHODS = ['GET', 'POST', 'DELETE', 'OPTIONS'];
export const CORS_ALLOW_HEADERS = ['Authorization', 'Content-Type', 'X-Service-Client'];
export const CORS_EXPOSE_HEADERS = ['X-Page-SHA'];
/** Preflight cache lifetime in seconds (browsers cap it: Chromium at 2 h, Firefox at 24 h). */
export const CORS_MAX_AGE = 600;

/** Distinct refused origins logged per process (per isolate on Workers); past them, one line says so and no more. */
export const REFUSED_ORIGINS_LOGGED = 64;
/** A longer Origin header is logged cut to this many characters (a real origin is at most about 270). */
export const REFUSED_ORIGIN_MAX_CHARS = 300;

/**
 * Logs each refused origin the first time it is seen. Memory is bounded: at most REFUSED_ORIGINS_LOGGED
 * origins of at most REFUSED_ORIGIN_MAX_CHARS characters are remembered; the first origin beyond them gets
 * one `cors_origins_refused_unlogged` line, and later ones are served without a word.
 */
export class RefusedOriginLog {
  private readonly seen = new Set<string>();
  private full = false;

  constructor(
    private readonly log: Logger,
    private readonly max = REFUSED_ORIGINS_LOGGED,
  ) {}

  refused(origin: string): void {
    if (this.full) return;
    const shown = origin.length > REFUSED_ORIGIN_MAX_CHARS ? `${origin.slice(0, REFUSED_ORIGIN_MAX_CHARS)}…` : origin;
    if (this.seen.has(shown)) return;
    if (this.seen.size >= this.max) {
      this.full = true;
      this.seen.clear();
      this.log.warn('cors_origins_refused_unlogged', { origin: shown, logged: this.max, hint: 'more origins were refused; no more are logged until a restart' });
      return;
    }
    this.seen.add(shown);
    this.log.warn('cors_origin_refused', {
      origin: shown,
      hint: 'browser pages of this origin cannot read the answers: if it is your dashboard, add it to SERVICE_CORS_ORIGINS',
    });
  }
}

/**
 * `origins` as in Config.corsOrigins: `*` anywhere allows every origin (answered with a literal `*`,
 * no credentials: tokens travel in the Authorization header, never in cookies). Otherwise an exact match
 * on the Origin header is required and echoed back, with `Vary: Origin`. A preflight (`OPTIONS`) is
 * answered 204 without reaching any handler. With `log`, a non-allowed origin is logged once (RefusedOriginLog).
 */
export function corsMiddleware(origins: string[], log?: Logger): MiddlewareHandler {
  const allowed = new Set(origins);
  const allowAll = allowed.has('*');
  const refusals = log && !allowAll ? new RefusedOriginLog(log) : null;
  const browser = cors({
    origin: allowed.has('*') ? '*' : (origin) => (origin !== '' && allowed.has(origin) ? origin : null),
    allowMethods: CORS_ALLOW_METHODS,
    allowHeaders: CORS_ALLOW_HEADERS,
    exposeHeaders: CORS_EXPOSE_HEADERS,
    maxAge: CORS_MAX_AGE,
  });
  // Requests without an Origin header (the CLI, agents, curl) need no CORS headers; skipping the cors
  // middleware for them also keeps it from touching the response before the handler runs (which makes
  // Hono copy every response once more).
  return async function corsOrSkip(c, next) {
    const origin = c.req.header('origin');
    if (refusals && origin !== undefined && origin !== '' && !allowed.has(origin)) refusals.refused(origin);
    if (origin !== undefined || c.req.method === 'OPTIONS') return browser(c, next);
    // Before the handler, into the headers every response built through `c` starts from (c.header()
    // after the handler would rebuild the whole response).
    if (!allowAll) c.header('Vary', 'Origin', { append: true });
    return next();
  };
}
