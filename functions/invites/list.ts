import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { InviteKeysResponse } from '../../schema/wire/members.ts';
import { R } from '../../lib/core/refusals.ts';

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
    errors: [R.owner_only_invites],
  },
  handler: async (c) => {
    const { id } = await openRepo(c, 'invite.list');
    return c.json({ keys: await c.get('deps').invites.list(id) });
  },
});
