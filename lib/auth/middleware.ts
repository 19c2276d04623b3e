import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../route.ts';
import { resolveAuthorization } from './resolve.ts';

/**
 * Runs before every non-public route (lib/app.ts): resolves the Authorization header into the request's
 * identity, or answers the 401 of lib/auth/resolve.ts.
 */
export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set('identity', await resolveAuthorization(c.get('deps'), c.req.header('authorization')));
  await next();
};
