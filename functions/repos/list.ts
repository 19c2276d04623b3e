import { defineRoute } from '../../lib/route.ts';
import { authorize } from '../../lib/policy.ts';
import { listRepos } from '../../lib/repos.ts';

/** GET /v1/repos — every repository (legacy key) or the caller's own, with role. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos',
  handler: async (c) => {
    const identity = authorize(c, 'repo.list');
    return c.json({ repos: await listRepos(c.get('deps'), identity) });
  },
});
