import { defineRoute } from '../../lib/framework/route.ts';
import { authorize } from '../../lib/usecases/policy.ts';
import { listRepos } from '../../lib/usecases/open-repo.ts';
import { ReposResponse } from '../../schema/wire/repos.ts';

/** GET /v1/repos — every repository (legacy key) or the caller's own, with role. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos',
  doc: {
    operationId: 'listRepos',
    summary: 'Your repositories',
    tag: 'Repositories',
    access: 'any credential: a user sees the repositories they belong to (with `role`), the legacy key every repository.',
    responses: { 200: { description: 'Sorted by id.', schema: ReposResponse } },
  },
  handler: async (c) => {
    const identity = authorize(c, 'repo.list');
    return c.json({ repos: await listRepos(c.get('deps'), identity) });
  },
});
