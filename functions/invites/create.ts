import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { parseBody } from '../../lib/framework/http/parse.ts';
import { checkLabel } from '../../lib/usecases/shape.ts';
import { MintInviteRequest, MintInviteResponse } from '../../schema/wire/members.ts';
import { R } from '../../lib/core/refusals.ts';
import { LABEL_MAX_CHARS } from '../../schema/wire/common.ts';

/** POST /v1/repos/:id/invite-keys — an owner mints a key; the token is shown this once. */
export default defineRoute({
  method: 'POST',
  path: '/v1/repos/:id/invite-keys',
  body: 'small',
  doc: {
    operationId: 'createInviteKey',
    summary: 'Mint an invite key',
    description: 'The token (`kri_` + 32 characters) is in this answer only. The key lasts 7 days and may be redeemed any number of times until then. An empty body means `{}`.',
    tag: 'Members',
    access: 'owners; the legacy key gets 403 `user session required`.',
    body: { schema: MintInviteRequest, required: false },
    responses: { 201: { description: 'The key and its token.', schema: MintInviteResponse } },
    errors: [R.label_too_long.example(LABEL_MAX_CHARS), R.invalid_request.example('<field>: <problem>'), R.user_session_required, R.owner_only_invites],
  },
  handler: async (c) => {
    const { id, identity } = await openRepo(c, 'invite.mint');
    const body = await parseBody(c, MintInviteRequest, { emptyAsObject: true });
    const createdBy = identity.kind === 'user' ? identity.userId : 'legacy:admin';
    const { key, token } = await c.get('deps').invites.mint(id, createdBy, checkLabel(body.label));
    c.header('Cache-Control', 'no-store');
    return c.json({ key, token }, 201);
  },
});
