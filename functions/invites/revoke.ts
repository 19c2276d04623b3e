import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { refuse } from '../../lib/core/errors.ts';
import { R } from '../../lib/core/refusals.ts';

/** DELETE /v1/repos/:id/invite-keys/:keyId — revoke by key id (never by token). */
export default defineRoute({
  method: 'DELETE',
  path: '/v1/repos/:id/invite-keys/:keyId',
  doc: {
    operationId: 'revokeInviteKey',
    summary: 'Revoke an invite key',
    tag: 'Members',
    access: 'owners, and the legacy key.',
    responses: { 204: { description: 'Revoked: the key can no longer be redeemed.' } },
    errors: [R.owner_only_invites, R.invite_key_not_found],
  },
  handler: async (c) => {
    const { id } = await openRepo(c, 'invite.revoke');
    if (!(await c.get('deps').invites.revoke(id, c.req.param('keyId') ?? ''))) {
      throw refuse(R.invite_key_not_found);
    }
    return c.body(null, 204);
  },
});
