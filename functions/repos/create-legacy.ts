import { defineRoute } from '../../lib/framework/route.ts';
import { authorize } from '../../lib/usecases/policy.ts';
import { repoIdParam } from '../../lib/framework/http/params.ts';
import { legacyCreateRepo } from '../../lib/usecases/open-repo.ts';
import { LegacyCreateRepoResponse } from '../../schema/wire/repos.ts';
import { R } from '../../lib/core/refusals.ts';

/** POST /v1/repos/:id — the legacy, idempotent creation path (id stripped to [A-Za-z0-9_-]). */
export default defineRoute({
  method: 'POST',
  path: '/v1/repos/:id',
  body: 'none',
  doc: {
    operationId: 'createRepoLegacy',
    summary: 'Create a repository if it does not exist (legacy, idempotent)',
    description: 'No body. A real user becomes owner only of a repository this call creates.',
    tag: 'Repositories',
    access: 'any credential; on an existing repository a user must be a member.',
    responses: { 201: { description: 'The repository exists (created now or before).', schema: LegacyCreateRepoResponse } },
    errors: [R.repo_exists, R.repo_busy],
    createsRepo: true,
    quota: ['quota_repos'],
  },
  handler: async (c) => {
    const identity = authorize(c, 'repo.create.legacy');
    const id = repoIdParam(c);
    await legacyCreateRepo(c.get('deps'), identity, id);
    return c.json({ repo_id: id }, 201);
  },
});
