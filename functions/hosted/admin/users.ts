import { defineRoute } from '../../../lib/route.ts';
import { authorizeUser } from '../../../lib/policy.ts';
import { adminUsers } from '../../../lib/hosted/admin.ts';

/** GET /v1/admin/users — every user with plan and repositories owned, oldest first. Admins only; hosted build only. */
export default defineRoute({
  method: 'GET',
  path: '/v1/admin/users',
  handler: async (c) => {
    authorizeUser(c, 'admin.read');
    return c.json({ users: await adminUsers(c.get('deps')) });
  },
});
