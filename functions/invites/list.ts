import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';

/** GET /v1/repos/:id/invite-keys — the repository's keys, newest first, expired ones included. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/invite-keys',
  handler: async (c) => {
    const { id } = await openRepo(c, 'invite.list');
    return c.json({ keys: await c.get('deps').invites.list(id) });
  },
});
