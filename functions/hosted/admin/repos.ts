import { defineRoute } from '../../../lib/framework/route.ts';
import { authorizeUser } from '../../../lib/usecases/policy.ts';
import { adminRepos } from '../../../lib/hosted/admin.ts';
import { AdminReposResponse } from '../../../schema/wire/hosted.ts';
import { R } from '../../../lib/core/refusals.ts';

/** GET /v1/admin/repos — every repository with owners, member count and page count. Admins only; hosted build only. */
export default defineRoute({
  method: 'GET',
  path: '/v1/admin/repos',
  doc: {
    operationId: 'adminRepos',
    summary: 'Every repository with owners, members and pages',
    tag: 'Admin',
    access: 'users whose email is in SERVICE_ADMIN_EMAILS.',
    responses: { 200: { description: 'Sorted by id; `members` counts owners too.', schema: AdminReposResponse } },
    errors: [R.admin_only],
  },
  handler: async (c) => {
    authorizeUser(c, 'admin.read');
    return c.json({ repos: await adminRepos(c.get('deps')) });
  },
});
