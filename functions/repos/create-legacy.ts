import { defineRoute } from '../../lib/route.ts';
import { authorize } from '../../lib/policy.ts';
import { repoIdParam } from '../../lib/http/params.ts';
import { legacyCreateRepo } from '../../lib/repos.ts';

/** POST /v1/repos/:id — the legacy, idempotent creation path (id stripped to [A-Za-z0-9_-]). */
export default defineRoute({
  method: 'POST',
  path: '/v1/repos/:id',
  body: 'none',
  handler: async (c) => {
    const identity = authorize(c, 'repo.create.legacy');
    const id = repoIdParam(c);
    await legacyCreateRepo(c.get('deps'), identity, id);
    return c.json({ repo_id: id }, 201);
  },
});
