import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';
import { parseBody } from '../../lib/http/parse.ts';
import { checkLabel } from '../../lib/wire.ts';
import { MintInviteRequest } from '../../schema/wire/members.ts';

/** POST /v1/repos/:id/invite-keys — an owner mints a key; the token is shown this once. */
export default defineRoute({
  method: 'POST',
  path: '/v1/repos/:id/invite-keys',
  body: 'small',
  handler: async (c) => {
    const { id, identity } = await openRepo(c, 'invite.mint');
    const body = await parseBody(c, MintInviteRequest, { emptyAsObject: true });
    const createdBy = identity.kind === 'user' ? identity.userId : 'legacy:admin';
    const { key, token } = await c.get('deps').invites.mint(id, createdBy, checkLabel(body.label));
    c.header('Cache-Control', 'no-store');
    return c.json({ key, token }, 201);
  },
});
