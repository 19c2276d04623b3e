/**
 * CORS per configuration (API.md "Conventions"), on hono/cors. Only browsers are affected: the server never
 * refuses a request because of its Origin, it just withholds Access-Control-Allow-Origin, so the browser
 * hides the response from a page of a non-allowed origin.
 */
import { cors } from 'hono/cors';
import type { MiddlewareHandler } from 'hono';

export const CORS_ALLOW_METHODS = ['GET', 'POST', 'DELETE', 'OPTIONS'];
export const CORS_ALLOW_HEADERS = ['Authorization', 'Content-Type', 'X-Service-Client'];
export const CORS_EXPOSE_HEADERS = ['X-Page-SHA'];
/** Preflight cache lifetime in seconds (browsers cap it: Chromium at 2 h, Firefox at 24 h). */
export const CORS_MAX_AGE = 600;

/**
 * `origins` as in Config.corsOrigins: `*` anywhere allows every origin (answered with a literal `*`,
 * no credentials: tokens travel in the Authorization header, never in cookies). Otherwise an exact match
 * on the Origin header is required and echoed back, with `Vary: Origin`. A preflight (`OPTIONS`) is
 * answered 204 without reaching any handler.
 */
export function corsMiddleware(origins: string[]): MiddlewareHandler {
  const allowed = new Set(origins);
  const allowAll = allowed.has('*');
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
    if (c.req.header('origin') !== undefined || c.req.method === 'OPTIONS') return browser(c, next);
    // Before the handler, into the headers every response built through `c` starts from (c.header()
    // after the handler would rebuild the whole response).
    if (!allowAll) c.header('Vary', 'Origin', { append: true });
    return next();
  };
}
