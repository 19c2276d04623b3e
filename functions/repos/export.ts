import { defineRoute } from '../../lib/route.ts';
import { exportBundle, openRepo } from '../../lib/repos.ts';

/**
 * GET /v1/repos/:id/export — the whole repository as a git bundle (v2): `git clone <id>.bundle` restores
 * every page and the whole history. Owners and the legacy key.
 */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/export',
  handler: async (c) => {
    const { id } = await openRepo(c, 'repo.export');
    const bundle = await exportBundle(c.get('deps'), id);
    return c.body(bundle, 200, {
      'Content-Type': 'application/x-git-bundle',
      'Content-Disposition': `attachment; filename="${id}.bundle"`,
    });
  },
});
