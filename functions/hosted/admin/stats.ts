import { defineRoute } from '../../../lib/framework/route.ts';
import { authorizeUser } from '../../../lib/usecases/policy.ts';
import { adminStats } from '../../../lib/hosted/admin.ts';
import { AdminStats } from '../../../schema/wire/hosted.ts';
import { R } from '../../../lib/core/refusals.ts';

/** GET /v1/admin/stats — users, repositories, subscribed users, pages at head. Admins only; hosted build only. */
export default defineRoute({
  method: 'GET',
  path: '/v1/admin/stats',
  doc: {
    operationId: 'adminStats',
    summary: 'Counts of users, repositories, subscribers and pages',
    tag: 'Admin',
    access: 'users whose email is in SERVICE_ADMIN_EMAILS; anyone else, the legacy key included, gets 403 `admin only`.',
    responses: { 200: { description: '`pages`: pages at head across every repository.', schema: AdminStats } },
    errors: [R.admin_only],
  },
  handler: async (c) => {
    authorizeUser(c, 'admin.read');
    return c.json(await adminStats(c.get('deps')));
  },
});
