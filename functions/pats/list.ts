import { defineRoute } from '../../lib/framework/route.ts';
import { authorizeUser } from '../../lib/usecases/policy.ts';
import { PatsResponse } from '../../schema/wire/auth.ts';
import { R } from '../../lib/core/refusals.ts';

/** GET /v1/pats — the caller's own PATs, newest first; never a token or a hash. The one in use is marked `current`. */
export default defineRoute({
  method: 'GET',
  path: '/v1/pats',
  doc: {
    operationId: 'listPats',
    summary: "The caller's personal access tokens",
    tag: 'Accounts',
    access: 'a real user; the legacy key gets 403 `user session required`.',
    responses: { 200: { description: 'Newest first; never a token. Revoked tokens are gone. The token the request was made with carries `current: true`.', schema: PatsResponse } },
    errors: [R.user_session_required],
  },
  handler: async (c) => {
    const me = authorizeUser(c, 'pat.list');
    const pats = await c.get('deps').pats.list(me.userId);
    const res: PatsResponse = { pats: pats.map((p) => (p.id === me.patId ? { ...p, current: true as const } : p)) };
    return c.json(res);
  },
});
