import { defineRoute } from '../../../lib/route.ts';
import { authorizeUser } from '../../../lib/policy.ts';
import { adminStats } from '../../../lib/hosted/admin.ts';

/** GET /v1/admin/stats — users, repositories, subscribed users, pages at head. Admins only; hosted build only. */
export default defineRoute({
  method: 'GET',
  path: '/v1/admin/stats',
  handler: async (c) => {
    authorizeUser(c, 'admin.read');
    return c.json(await adminStats(c.get('deps')));
  },
});
