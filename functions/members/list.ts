import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';

/** GET /v1/repos/:id/members — members with role and join time, oldest first. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/members',
  handler: async (c) => {
    const { id } = await openRepo(c, 'members.list');
    return c.json({ members: await c.get('deps').members.list(id) });
  },
});
