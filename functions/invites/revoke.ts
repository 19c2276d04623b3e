import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';
import { HttpError } from '../../lib/errors.ts';

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
    errors: {
      400: ['invalid repo id'],
      403: ['not a member of this repo', 'only an owner can manage invite keys'],
      404: ['repo not found', 'invite key not found'],
    },
  },
  handler: async (c) => {
    const { id } = await openRepo(c, 'invite.revoke');
    if (!(await c.get('deps').invites.revoke(id, c.req.param('keyId') ?? ''))) {
      throw new HttpError(404, 'invite key not found');
    }
    return c.body(null, 204);
  },
});
