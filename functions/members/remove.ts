import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { removeMember } from '../../lib/usecases/membership.ts';
import { R } from '../../lib/core/refusals.ts';

/** DELETE /v1/repos/:id/members/:userId — owners remove a member; the last owner stays. */
export default defineRoute({
  method: 'DELETE',
  path: '/v1/repos/:id/members/:userId',
  doc: {
    operationId: 'removeMember',
    summary: 'Remove a member',
    description: 'A removed user is not readmitted by an invite key minted before the removal. Their past commits keep their name.',
    tag: 'Members',
    access: 'owners, and the legacy key.',
    responses: { 204: { description: 'Removed.' } },
    errors: [R.owner_only_remove, R.member_not_found, R.last_owner],
  },
  handler: async (c) => {
    const { id, identity } = await openRepo(c, 'member.remove');
    await removeMember(c.get('deps'), identity, id, c.req.param('userId') ?? '');
    return c.body(null, 204);
  },
});
