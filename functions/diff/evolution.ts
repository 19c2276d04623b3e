import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { flagQuery, limitQuery, pagePathParam } from '../../lib/framework/http/params.ts';
import { EVOLUTION_DEFAULT_LIMIT, EVOLUTION_MAX_LIMIT, evolutionJsonStream, pageEvolution } from '../../lib/usecases/diff.ts';
import { EvolutionResponse } from '../../schema/wire/diff.ts';
import { EvolutionQuery } from '../../schema/wire/query.ts';
import { R } from '../../lib/core/refusals.ts';

/**
 * GET /v1/repos/:id/evolution/<path>?limit=N&blame=true — every commit touching the page, newest first, with
 * its diff. The JSON is streamed entry by entry (it can reach tens of megabytes).
 */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/evolution/:path{.+}',
  doc: {
    operationId: 'pageEvolution',
    summary: 'Every commit of a page with its diff against the previous one',
    description: 'Newest first; the first commit of the page diffs against the empty page (`from_sha: ""`).',
    tag: 'History',
    access: 'members; the legacy key on any repository.',
    query: EvolutionQuery,
    responses: { 200: { description: 'The entries, streamed.', schema: EvolutionResponse } },
    errors: [R.invalid_page_path, R.path_not_in_repo],
  },
  handler: async (c) => {
    const { repo } = await openRepo(c, 'repo.read');
    const path = pagePathParam(c);
    const evolution = await pageEvolution(c.get('deps'), repo, path, {
      limit: limitQuery(c, 'limit', EVOLUTION_DEFAULT_LIMIT, EVOLUTION_MAX_LIMIT),
      blame: flagQuery(c, 'blame'),
    });
    return c.body(evolutionJsonStream(evolution), 200, { 'Content-Type': 'application/json' });
  },
});
