import { defineRoute } from '../../lib/framework/route.ts';
import { authorizeUser } from '../../lib/usecases/policy.ts';
import { parseBody } from '../../lib/framework/http/parse.ts';
import { refuse } from '../../lib/core/errors.ts';
import { R } from '../../lib/core/refusals.ts';
import { redeemInvite } from '../../lib/usecases/membership.ts';
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
    errors: [
      R.key_required,
      R.invalid_request.example('<field>: <problem>'),
      R.user_session_required,
      R.removed_from_repo,
      R.invite_key_not_recognized,
      R.invite_key_expired,
    ],
    quota: ['quota_members'],
  },
  handler: async (c) => {
    const user = authorizeUser(c, 'repo.join');
    const body = await parseBody(c, JoinRequest, { emptyAsObject: true });
    if (typeof body.key !== 'string' || body.key.trim() === '') throw refuse(R.key_required);
    const { repoId, role } = await redeemInvite(c.get('deps'), user, body.key.trim());
    return c.json({ repo_id: repoId, role });
  },
});
