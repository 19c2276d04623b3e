import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from '../framework/route.ts';
import { resolveAuthorization, resolveGitAuthorization } from './resolve.ts';

/**
 * Runs before every non-public route (lib/framework/app.ts): resolves the Authorization header into the request's
 * identity, or answers the 401 of lib/auth/resolve.ts.
 */
export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set('identity', await resolveAuthorization(c.get('deps'), c.req.header('authorization')));
  await next();
};

/** The same for git's routes: Basic (any user name, the token as password) or Bearer; their 401s ask for Basic. */
export const authenticateGit: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set('identity', await resolveGitAuthorization(c.get('deps'), c.req.header('authorization')));
  await next();
};
