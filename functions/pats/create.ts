import { defineRoute } from '../../lib/framework/route.ts';
import { authorizeUser } from '../../lib/usecases/policy.ts';
import { parseBody } from '../../lib/framework/http/parse.ts';
import { checkLabel } from '../../lib/usecases/shape.ts';
import { CreatePatRequest, CreatePatResponse } from '../../schema/wire/auth.ts';
import { R } from '../../lib/core/refusals.ts';
import { LABEL_MAX_CHARS } from '../../schema/wire/common.ts';

/**
 * POST /v1/pats — mint a personal access token for the caller (a session or an existing PAT; the legacy
 * key gets 403 `user session required`). A PAT minted with a PAT never outlives it. The token is in this
 * answer and nowhere else, ever.
 */
export default defineRoute({
  method: 'POST',
  path: '/v1/pats',
  body: 'small',
  doc: {
    operationId: 'createPat',
    summary: 'Mint a personal access token',
    description:
      "The token (`krp_` + 32 characters) is in this answer only; the server keeps its SHA-256. A PAT minted with a PAT never outlives it: its expiry is capped at that PAT's, and revoking that PAT revokes it. An empty body means `{}`.",
    tag: 'Accounts',
    access: 'a real user (session token or PAT); the legacy key gets 403 `user session required`.',
    body: { schema: CreatePatRequest, required: false },
    responses: { 201: { description: 'The new token and its record.', schema: CreatePatResponse } },
    errors: [
      R.label_too_long.example(LABEL_MAX_CHARS),
      R.invalid_request.example('expires_in_days: must be an integer from 1 to 366'),
      R.invalid_request.example('<field>: <problem>'),
      R.invalid_token,
      R.user_session_required,
    ],
  },
  handler: async (c) => {
    const me = authorizeUser(c, 'pat.mint');
    const body = await parseBody(c, CreatePatRequest, { emptyAsObject: true });
    const { pat, token } = await c.get('deps').pats.create(me.userId, {
      label: checkLabel(body.label),
      expiresInDays: body.expires_in_days,
      ...(me.via === 'pat' && me.patId ? { parentPatId: me.patId } : {}),
    });
    c.header('Cache-Control', 'no-store');
    const res: CreatePatResponse = { pat, token };
    return c.json(res, 201);
  },
});
