import { defineRoute } from '../../../lib/route.ts';
import { authorizeUser } from '../../../lib/policy.ts';
import { parseBody } from '../../../lib/http/parse.ts';
import { setSubscription } from '../../../lib/hosted/admin.ts';
import { SetSubscriptionRequest } from '../../../schema/wire/hosted.ts';

/**
 * POST /v1/admin/users/:id/subscription — body `{"subscribed": bool}` → 204; 404 `user not found`.
 * Admins only; hosted build only.
 */
export default defineRoute({
  method: 'POST',
  path: '/v1/admin/users/:id/subscription',
  body: 'small',
  handler: async (c) => {
    authorizeUser(c, 'admin.write');
    const { subscribed } = await parseBody(c, SetSubscriptionRequest);
    await setSubscription(c.get('deps'), c.req.param('id') ?? '', subscribed);
    return c.body(null, 204);
  },
});
