import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';
import { flagQuery, limitQuery, pagePathParam } from '../../lib/http/params.ts';
import { EVOLUTION_DEFAULT_LIMIT, EVOLUTION_MAX_LIMIT, evolutionJsonStream, pageEvolution } from '../../lib/differ/service.ts';
import { EvolutionResponse } from '../../schema/wire/diff.ts';
import { EvolutionQuery } from '../../schema/wire/query.ts';

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
    errors: {
      400: ['invalid repo id', 'invalid page path: <path>'],
      403: ['not a member of this repo'],
      404: ['repo not found', 'path not present in repo'],
    },
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
