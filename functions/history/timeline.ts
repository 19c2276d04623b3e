import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { limitQuery } from '../../lib/framework/http/params.ts';
import { commitJson } from '../../lib/usecases/shape.ts';
import { TimelineResponse } from '../../schema/wire/sync.ts';
import { TimelineQuery } from '../../schema/wire/query.ts';

/** GET /v1/repos/:id/timeline?limit=N — the newest commits with the paths each touched. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/timeline',
  doc: {
    operationId: 'timeline',
    summary: "The repository's newest commits",
    tag: 'History',
    access: 'members; the legacy key on any repository.',
    query: TimelineQuery,
    responses: { 200: { description: 'Newest first, each with the paths it touched.', schema: TimelineResponse } },
    
  },
  handler: async (c) => {
    const { repo } = await openRepo(c, 'repo.read');
    const commits = await repo.timeline(limitQuery(c, 'limit', 50, 1000));
    return c.json({ commits: commits.map((cm) => ({ ...commitJson(cm), paths: cm.paths })) });
  },
});
