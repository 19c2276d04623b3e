import { defineRoute } from '../../../lib/framework/route.ts';
import { authorizeUser } from '../../../lib/usecases/policy.ts';
import { adminUsers } from '../../../lib/hosted/admin.ts';
import { AdminUsersResponse } from '../../../schema/wire/hosted.ts';
import { R } from '../../../lib/core/refusals.ts';

/** GET /v1/admin/users — every user with plan and repositories owned, oldest first. Admins only; hosted build only. */
export default defineRoute({
  method: 'GET',
  path: '/v1/admin/users',
  doc: {
    operationId: 'adminUsers',
    summary: 'Every user with plan and repositories owned',
    tag: 'Admin',
    access: 'users whose email is in SERVICE_ADMIN_EMAILS.',
    responses: { 200: { description: 'Oldest first.', schema: AdminUsersResponse } },
    errors: [R.admin_only],
  },
  handler: async (c) => {
    authorizeUser(c, 'admin.read');
    return c.json({ users: await adminUsers(c.get('deps')) });
  },
});
