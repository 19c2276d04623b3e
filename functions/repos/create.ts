import { defineRoute } from '../../lib/framework/route.ts';
import { authorizeUser } from '../../lib/usecases/policy.ts';
import { parseBody } from '../../lib/framework/http/parse.ts';
import { refuse } from '../../lib/core/errors.ts';
import { R } from '../../lib/core/refusals.ts';
import { REPO_ID_PATTERN } from '../../lib/core/page/path.ts';
import { createRepo } from '../../lib/usecases/open-repo.ts';
import { CreateRepoRequest, CreateRepoResponse } from '../../schema/wire/repos.ts';

/** POST /v1/repos — create a repository; the creator becomes its owner (or adopts an ownerless one). */
export default defineRoute({
  method: 'POST',
  path: '/v1/repos',
  body: 'small',
  doc: {
    operationId: 'createRepo',
    summary: 'Create a repository; you become its owner',
    tag: 'Repositories',
    access: 'a real user; the legacy key gets 403 `user session required`.',
    body: { schema: CreateRepoRequest },
    responses: { 201: { description: 'Created, with the caller as owner.', schema: CreateRepoResponse } },
    errors: [
      R.invalid_new_repo_id,
      R.invalid_request.example('id: expected string'),
      R.invalid_request.example('<field>: <problem>'),
      R.user_session_required,
      R.repo_exists,
      R.repo_busy,
    ],
    quota: ['quota_repos'],
  },
  handler: async (c) => {
    const user = authorizeUser(c, 'repo.create');
    const body = await parseBody(c, CreateRepoRequest);
    if (!REPO_ID_PATTERN.test(body.id)) throw refuse(R.invalid_new_repo_id);
    await createRepo(c.get('deps'), user, body.id);
    return c.json({ id: body.id, role: 'owner' as const }, 201);
  },
});
