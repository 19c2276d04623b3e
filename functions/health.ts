import { defineRoute } from '../lib/route.ts';

/** GET /health — liveness for load balancers and the container health check. */
export default defineRoute({
  method: 'GET',
  path: '/health',
  public: true,
  handler: (c) => c.json({ status: 'ok' }),
});
