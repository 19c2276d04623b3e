import { defineRoute } from '../../lib/route.ts';
import { authorizeUser } from '../../lib/policy.ts';
import { PatsResponse } from '../../schema/wire/auth.ts';

/** GET /v1/pats — the caller's own PATs, newest first; never a token or a hash. */
export default defineRoute({
  method: 'GET',
  path: '/v1/pats',
  doc: {
    operationId: 'listPats',
    summary: "The caller's personal access tokens",
    tag: 'Accounts',
    access: 'a real user; the legacy key gets 403 `user session required`.',
    responses: { 200: { description: 'Newest first; never a token. Revoked tokens are gone.', schema: PatsResponse } },
    errors: { 403: ['user session required'] },
  },
  handler: async (c) => {
    const me = authorizeUser(c, 'pat.list');
    const res: PatsResponse = { pats: await c.get('deps').pats.list(me.userId) };
    return c.json(res);
  },
});
