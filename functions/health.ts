import { defineRoute } from '../lib/framework/route.ts';
import { HealthResponse } from '../schema/wire/service.ts';

/** GET /health — liveness for load balancers and the container health check. */
export default defineRoute({
  method: 'GET',
  path: '/health',
  public: true,
  rateLimited: false,
  doc: {
    operationId: 'health',
    summary: 'Liveness check',
    tag: 'Service',
    access: 'anyone; no credential.',
    responses: { 200: { description: 'The server is up.', schema: HealthResponse } },
  },
  handler: (c) => c.json({ status: 'ok' }),
});
