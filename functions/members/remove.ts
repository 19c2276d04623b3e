import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';
import { removeMember } from '../../lib/membership.ts';

/** DELETE /v1/repos/:id/members/:userId — owners remove a member; the last owner stays. */
export default defineRoute({
  method: 'DELETE',
  path: '/v1/repos/:id/members/:userId',
  handler: async (c) => {
    const { id } = await openRepo(c, 'member.remove');
    await removeMember(c.get('deps'), id, c.req.param('userId') ?? '');
    return c.body(null, 204);
  },
});
