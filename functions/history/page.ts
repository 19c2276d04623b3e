import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { limitQuery, pagePathParam } from '../../lib/framework/http/params.ts';
import { commitJson } from '../../lib/usecases/shape.ts';
import { HistoryResponse } from '../../schema/wire/sync.ts';
import { HistoryQuery } from '../../schema/wire/query.ts';
import { R } from '../../lib/core/refusals.ts';

/** GET /v1/repos/:id/history/<path>?limit=N — commits touching the page, newest first. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/history/:path{.+}',
  doc: {
    operationId: 'pageHistory',
    summary: 'The commits that touched a page',
    tag: 'History',
    access: 'members; the legacy key on any repository.',
    query: HistoryQuery,
    responses: { 200: { description: 'Newest first; empty for a path no commit touched.', schema: HistoryResponse } },
    errors: [R.invalid_page_path],
  },
  handler: async (c) => {
    const { repo } = await openRepo(c, 'repo.read');
    const path = pagePathParam(c);
    const commits = await repo.history(path, limitQuery(c, 'limit', 50, 1000));
    return c.json({ commits: commits.map(commitJson) });
  },
});
