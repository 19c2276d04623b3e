import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';
import { limitQuery, pagePathParam } from '../../lib/http/params.ts';
import { commitJson } from '../../lib/wire.ts';
import { HistoryResponse } from '../../schema/wire/sync.ts';
import { HistoryQuery } from '../../schema/wire/query.ts';

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
    errors: { 400: ['invalid repo id', 'invalid page path: <path>'], 403: ['not a member of this repo'], 404: ['repo not found'] },
  },
  handler: async (c) => {
    const { repo } = await openRepo(c, 'repo.read');
    const path = pagePathParam(c);
    const commits = await repo.history(path, limitQuery(c, 'limit', 50, 1000));
    return c.json({ commits: commits.map(commitJson) });
  },
});
