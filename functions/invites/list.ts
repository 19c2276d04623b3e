import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';
import { InviteKeysResponse } from '../../schema/wire/members.ts';

/** GET /v1/repos/:id/invite-keys — the repository's keys, newest first, expired ones included. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/invite-keys',
  doc: {
    operationId: 'listInviteKeys',
    summary: "The repository's invite keys",
    tag: 'Members',
    access: 'owners, and the legacy key.',
    responses: { 200: { description: 'Newest first, expired ones included, revoked ones gone; never a token.', schema: InviteKeysResponse } },
    errors: {
      400: ['invalid repo id'],
      403: ['not a member of this repo', 'only an owner can manage invite keys'],
      404: ['repo not found'],
    },
  },
  handler: async (c) => {
    const { id } = await openRepo(c, 'invite.list');
    return c.json({ keys: await c.get('deps').invites.list(id) });
  },
});
