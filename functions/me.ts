import { defineRoute } from '../lib/framework/route.ts';
import { authorizeUser, decide } from '../lib/usecases/policy.ts';
import { MeResponse } from '../schema/wire/auth.ts';
import { R } from '../lib/core/refusals.ts';

/**
 * GET /v1/me — the signed-in user (session or PAT), and what this server offers them: `server.hosted` (the
 * billing routes exist) and, on the hosted build, `admin: true` when the admin routes would let them in. The
 * legacy key gets 401 `session required`.
 */
export default defineRoute({
  method: 'GET',
  path: '/v1/me',
  doc: {
    operationId: 'getMe',
    summary: 'The signed-in user',
    tag: 'Accounts',
    access: 'a real user (session token or PAT); the legacy key gets 401 `session required`.',
    responses: {
      200: {
        description:
          'The user behind the token. `server.hosted`: the hosted build (billing and admin routes exist). `admin`: present, `true`, on the hosted build for a user whose email is in SERVICE_ADMIN_EMAILS. Clients show views from these instead of probing routes that would answer 404 or 403.',
        schema: MeResponse,
      },
    },
    errors: [R.session_required],
  },
  handler: (c) => {
    const me = authorizeUser(c, 'me.read');
    const { hosted, adminEmails } = c.get('deps').config;
    // The admin routes' own decision, so the flag never disagrees with what they answer.
    const admin = hosted && decide(me, 'admin.read', null, adminEmails).allow;
    const res: MeResponse = { id: me.userId, email: me.email, name: me.name, server: { hosted }, ...(admin ? { admin } : {}) };
    return c.json(res);
  },
});
