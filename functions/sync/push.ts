import { defineRoute } from '../../lib/route.ts';
import { parseBody } from '../../lib/http/parse.ts';
import { repoIdParam } from '../../lib/http/params.ts';
import { pushTarget } from '../../lib/repos.ts';
import { push, validatePush } from '../../lib/sync.ts';
import { PushRequest, PushResponse } from '../../schema/wire/sync.ts';

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
    errors: {
      400: [
        'invalid repo id',
        'invalid page path: <path>',
        'path "<new>" differs only in letter case from "<existing>"',
        'invalid parent_sha: <value>',
        'invalid merge mode',
        'invalid request: files[<i>].content: required unless delete is true',
        'invalid request: <field>: <problem>',
      ],
      403: ['not a member of this repo'],
      409: ['repo already exists', 'path collides with an existing page or directory: <path>', 'concurrent update, retry'],
      413: ['too many files in one push (max 10000)'],
      503: ['repository busy, retry'],
    },
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
