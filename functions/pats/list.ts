import { defineRoute } from '../../lib/route.ts';
import { authorizeUser } from '../../lib/policy.ts';
import type { PatsResponse } from '../../schema/wire/auth.ts';

/** GET /v1/pats — the caller's own PATs, newest first; never a token or a hash. */
export default defineRoute({
  method: 'GET',
  path: '/v1/pats',
  handler: async (c) => {
    const me = authorizeUser(c, 'pat.list');
    const res: PatsResponse = { pats: await c.get('deps').pats.list(me.userId) };
    return c.json(res);
  },
});
