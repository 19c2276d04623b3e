import { defineRoute } from '../../lib/framework/route.ts';
import { parseBody } from '../../lib/framework/http/parse.ts';
import { repoIdParam } from '../../lib/framework/http/params.ts';
import { pushTarget } from '../../lib/usecases/open-repo.ts';
import { MAX_FILES_PER_PUSH, push, validatePush } from '../../lib/usecases/sync.ts';
import { PushRequest, PushResponse } from '../../schema/wire/sync.ts';
import { R } from '../../lib/core/refusals.ts';

/**
 * POST /v1/repos/:id/sync/push — every accepted file in one commit; per-file conflicts → 409. A missing
 * repository is created (its pusher, if a real user, becomes owner) — but only once the whole body
 * has been validated, so a refused push leaves nothing behind.
 */
export default defineRoute({
  method: 'POST',
  path: '/v1/repos/:id/sync/push',
  body: 'push',
  doc: {
    operationId: 'push',
    summary: 'Push pages: every accepted file in one commit',
    description:
      'Every path is checked first; one bad path refuses the whole push. A file whose `parent_sha` is not the last commit of its page (or a unique abbreviation of it) is a conflict; the others are committed together. With `"merge": "sections"` such a stale write (not a delete, its parent resolving) is merged three ways with the page at head instead — frontmatter key by key, the preamble and sections by heading, bodies changed on both sides line by line — and committed when it merges cleanly: its `pushed` entry then carries `merged`, `merged_with` (the head it was merged with) and `content` (the merged text, base64); otherwise it stays a conflict whose entry names what could not be merged in `conflicting`. A missing repository is created, its pusher (a real user) becoming owner. A user is the commit author; under the legacy key `author_name`/`author_email` are used (default `unknown`/`unknown@service.local`).',
    tag: 'Pages',
    access: 'members; anyone with a credential into a repository that does not exist yet (it is created); the legacy key everywhere.',
    body: { schema: PushRequest, description: 'At most SERVICE_MAX_BODY_BYTES (8 MiB by default) and 10,000 files.' },
    responses: {
      200: { description: 'Every file committed (or unchanged).', schema: PushResponse },
      409: { description: 'Some files conflicted; the others (if any) were committed.', schema: PushResponse },
    },
    errors: [
      R.invalid_page_path,
      R.path_case.example('<new>', '<existing>'),
      R.invalid_parent_sha,
      R.invalid_merge_mode,
      R.invalid_request.example('files[<i>].content: required unless delete is true'),
      R.invalid_request.example('<field>: <problem>'),
      R.repo_exists,
      R.path_collision,
      R.concurrent_update,
      R.too_many_files.example(MAX_FILES_PER_PUSH),
      R.repo_busy,
    ],
    createsRepo: true,
    quota: ['quota_repos'],
  },
  handler: async (c) => {
    const deps = c.get('deps');
    const id = repoIdParam(c);
    const target = await pushTarget(c, id);
    const body = await parseBody(c, PushRequest);
    const files = await validatePush(body);
    const { identity, repo } = await target.take();
    const res = await push(deps, identity, repo, body, files, { requestId: c.get('requestId') });
    return c.json(res.body, res.status);
  },
});
