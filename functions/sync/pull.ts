import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';
import { pull } from '../../lib/sync.ts';

/** GET /v1/repos/:id/sync/pull?since=<sha> — every page, or what changed and was deleted since. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/sync/pull',
  handler: async (c) => {
    const { id, identity } = await openRepo(c, 'repo.read');
    const since = c.req.query('since');
    const body = await pull(
      c.get('deps'),
      identity,
      id,
      since === undefined || since === '' ? undefined : since,
      c.req.header('x-service-client'),
    );
    return c.json(body);
  },
});
