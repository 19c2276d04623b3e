import { defineRoute } from '../../lib/route.ts';
import { authorizeUser } from '../../lib/policy.ts';
import { parseBody } from '../../lib/http/parse.ts';
import { HttpError } from '../../lib/errors.ts';
import { redeemInvite } from '../../lib/membership.ts';
import { JoinRequest, JoinResponse } from '../../schema/wire/members.ts';

/** POST /v1/repos/join — redeem an invite key; re-joining keeps the role already held. */
export default defineRoute({
  method: 'POST',
  path: '/v1/repos/join',
  body: 'small',
  doc: {
    operationId: 'joinRepo',
    summary: 'Redeem an invite key',
    description: 'Joining again keeps the role already held.',
    tag: 'Members',
    access: 'a real user; the legacy key gets 403 `user session required`.',
    body: { schema: JoinRequest, description: '`key`: the `kri_` token.' },
    responses: { 200: { description: 'The repository joined and the role held there.', schema: JoinResponse } },
    errors: {
      400: ['key required', 'invalid request: <field>: <problem>'],
      403: ['user session required', 'removed from this repo; ask an owner for a new invite key'],
      404: ['invite key not recognized'],
      410: ['invite key expired'],
    },
    quota: ['quota_members'],
  },
  handler: async (c) => {
    const user = authorizeUser(c, 'repo.join');
    const body = await parseBody(c, JoinRequest, { emptyAsObject: true });
    if (typeof body.key !== 'string' || body.key.trim() === '') throw new HttpError(400, 'key required');
    const { repoId, role } = await redeemInvite(c.get('deps'), user, body.key.trim());
    return c.json({ repo_id: repoId, role });
  },
});
