import { defineRoute } from '../lib/route.ts';
import { authorizeUser } from '../lib/policy.ts';
import { MeResponse } from '../schema/wire/auth.ts';

/** GET /v1/me — the signed-in user (session or PAT). The legacy key gets 401 `session required`. */
export default defineRoute({
  method: 'GET',
  path: '/v1/me',
  doc: {
    operationId: 'getMe',
    summary: 'The signed-in user',
    tag: 'Accounts',
    access: 'a real user (session token or PAT); the legacy key gets 401 `session required`.',
    responses: { 200: { description: 'The user behind the token.', schema: MeResponse } },
    errors: { 401: ['session required'] },
  },
  handler: (c) => {
    const me = authorizeUser(c, 'me.read');
    const res: MeResponse = { id: me.userId, email: me.email, name: me.name };
    return c.json(res);
  },
});
