import { defineRoute } from '../../lib/framework/route.ts';
import { authorizeUser } from '../../lib/usecases/policy.ts';
import { refuse } from '../../lib/core/errors.ts';
import { R } from '../../lib/core/refusals.ts';
import { CREDENTIAL_LOST } from '../../lib/events/hub.ts';

/**
 * DELETE /v1/pats/:id — revoke one of the caller's PATs and every PAT minted with it, transitively (their
 * rows are deleted, so the tokens stop working at once, and the event streams opened with them end with
 * `event: revoked` before the answer). Unknown ids and other users' PATs are both 404
 * `pat not found`.
 */
export default defineRoute({
  method: 'DELETE',
  path: '/v1/pats/:id',
  doc: {
    operationId: 'revokePat',
    summary: 'Revoke one of your personal access tokens',
    tag: 'Accounts',
    access: 'a real user, for their own tokens only.',
    params: { id: "The PAT's id (from `GET /v1/pats`), not the token." },
    description:
      'Every PAT minted with it, and every PAT minted with those, at any depth, is revoked with it. Event streams opened with any of them end with `event: revoked` before the answer.',
    responses: { 204: { description: 'Revoked: the token, and every token minted with it, stops working at once.' } },
    errors: [R.user_session_required, R.pat_not_found],
  },
  handler: async (c) => {
    const me = authorizeUser(c, 'pat.revoke');
    const deps = c.get('deps');
    const revoked = await deps.pats.revoke(me.userId, c.req.param('id') ?? '');
    if (revoked.length === 0) throw refuse(R.pat_not_found);
    // Event streams opened with any of them end now, not at their next re-check.
    await deps.live.endStreams({ userId: me.userId, patIds: revoked }, CREDENTIAL_LOST);
    return c.body(null, 204);
  },
});
