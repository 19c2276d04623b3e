import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { flagQuery, pagePathParam } from '../../lib/framework/http/params.ts';
import { diffPage } from '../../lib/usecases/diff.ts';
import { SectionDiff } from '../../schema/wire/diff.ts';
import { DiffQuery } from '../../schema/wire/query.ts';
import { R } from '../../lib/core/refusals.ts';

/** GET /v1/repos/:id/diff/<path>?from=&to=&blame=true — SectionDiff of two revisions of a page (read-only). */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/diff/:path{.+}',
  doc: {
    operationId: 'diffPage',
    summary: 'Section-aware diff of two revisions of a page',
    description:
      'Sections pair by `## ` heading; frontmatter fields are compared one by one (list fields as sets). `to` defaults to the last commit touching the page, `from` to the one before it (not the git parent). A side whose commit lacks the page is an empty page.',
    tag: 'History',
    access: 'members; the legacy key on any repository.',
    query: DiffQuery,
    responses: { 200: { description: 'The SectionDiff.', schema: SectionDiff } },
    errors: [R.invalid_page_path, R.unknown_sha, R.no_parent, R.path_not_in_repo, R.path_not_at_either_sha],
  },
  handler: async (c) => {
    const { repo } = await openRepo(c, 'repo.read');
    const path = pagePathParam(c);
    const diff = await diffPage(c.get('deps'), repo, path, {
      from: c.req.query('from'),
      to: c.req.query('to'),
      blame: flagQuery(c, 'blame'),
    });
    return c.json(diff);
  },
});
