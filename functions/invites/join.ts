import { defineRoute } from '../../lib/route.ts';
import { authorizeUser } from '../../lib/policy.ts';
import { parseBody } from '../../lib/http/parse.ts';
import { HttpError } from '../../lib/http/errors.ts';
import { redeemInvite } from '../../lib/membership.ts';
import { JoinRequest } from '../../schema/wire/members.ts';

/** POST /v1/repos/join — redeem an invite key; re-joining keeps the role already held. */
export default defineRoute({
  method: 'POST',
  path: '/v1/repos/join',
  body: 'small',
  handler: async (c) => {
    const user = authorizeUser(c, 'repo.join');
    const body = await parseBody(c, JoinRequest, { emptyAsObject: true });
    if (typeof body.key !== 'string' || body.key.trim() === '') throw new HttpError(400, 'key required');
    const { repoId, role } = await redeemInvite(c.get('deps'), user, body.key.trim());
    return c.json({ repo_id: repoId, role });
  },
});
