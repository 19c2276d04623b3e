import { defineRoute } from '../../../lib/framework/route.ts';
import { authorizeUser } from '../../../lib/usecases/policy.ts';
import { parseBody } from '../../../lib/framework/http/parse.ts';
import { setSubscription } from '../../../lib/hosted/admin.ts';
import { SetSubscriptionRequest } from '../../../schema/wire/hosted.ts';
import { R } from '../../../lib/core/refusals.ts';

/**
 * POST /v1/admin/users/:id/subscription — body `{"subscribed": bool}` → 204; 404 `user not found`.
 * Admins only; hosted build only.
 */
export default defineRoute({
  method: 'POST',
  path: '/v1/admin/users/:id/subscription',
  body: 'small',
  doc: {
    operationId: 'adminSetSubscription',
    summary: "Set a user's subscription by hand",
    tag: 'Admin',
    access: 'users whose email is in SERVICE_ADMIN_EMAILS.',
    params: { id: 'The user id.' },
    body: { schema: SetSubscriptionRequest },
    responses: { 204: { description: 'Done.' } },
    errors: [R.invalid_request.example('<field>: <problem>'), R.admin_only, R.user_not_found],
  },
  handler: async (c) => {
    authorizeUser(c, 'admin.write');
    const { subscribed } = await parseBody(c, SetSubscriptionRequest);
    await setSubscription(c.get('deps'), c.req.param('id') ?? '', subscribed);
    return c.body(null, 204);
  },
});
