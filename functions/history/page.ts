import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';
import { limitQuery, pagePathParam } from '../../lib/http/params.ts';
import { commitJson } from '../../lib/wire.ts';

/** GET /v1/repos/:id/history/<path>?limit=N — commits touching the page, newest first. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/history/:path{.+}',
  handler: async (c) => {
    const { id } = await openRepo(c, 'repo.read');
    const path = pagePathParam(c);
    const commits = await c.get('deps').repos.history(id, path, limitQuery(c, 'limit', 50, 1000));
    return c.json({ commits: commits.map(commitJson) });
  },
});
