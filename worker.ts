/**
 * Workers entry: the hosted build (wrangler.toml points here). The same app as server.ts, with its
 * dependencies made from each request's bindings (lib/runtime/workers/entry.ts), and the Durable Object classes
 * it binds: one RepoObject per repository, RateLimiterObjects for the rate limiters, a StreamSlotsObject per
 * identity with open event streams.
 */
import { handleWorkerRequest, type WorkerEnv } from './lib/runtime/workers/entry.ts';
import { routesFor } from './functions/index.ts';

export { RepoObject } from './lib/runtime/workers/repo-object.ts';
export { RateLimiterObject } from './lib/runtime/workers/rate-limiter.ts';
export { StreamSlotsObject } from './lib/runtime/workers/stream-slots.ts';

export default {
  fetch(request: Request, env: WorkerEnv, ctx: unknown): Promise<Response> {
    return handleWorkerRequest(request, env, ctx, routesFor);
  },
};
