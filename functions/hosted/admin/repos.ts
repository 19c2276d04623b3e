import { defineRoute } from '../../../lib/route.ts';
import { authorizeUser } from '../../../lib/policy.ts';
import { adminRepos } from '../../../lib/hosted/admin.ts';

/** GET /v1/admin/repos — every repository with owners, member count and page count. Admins only; hosted build only. */
export default defineRoute({
  method: 'GET',
  path: '/v1/admin/repos',
  handler: async (c) => {
    authorizeUser(c, 'admin.read');
    return c.json({ repos: await adminRepos(c.get('deps')) });
  },
});
