import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';
import { flagQuery, limitQuery, pagePathParam } from '../../lib/http/params.ts';
import { EVOLUTION_DEFAULT_LIMIT, EVOLUTION_MAX_LIMIT, evolutionJsonStream, pageEvolution } from '../../lib/diff-service.ts';

/**
 * GET /v1/repos/:id/evolution/<path>?limit=N&blame=true — every commit touching the page, newest first, with
 * its diff. The JSON is streamed entry by entry (it can reach tens of megabytes).
 */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/evolution/:path{.+}',
  handler: async (c) => {
    const { id } = await openRepo(c, 'repo.read');
    const path = pagePathParam(c);
    const evolution = await pageEvolution(c.get('deps'), id, path, {
      limit: limitQuery(c, 'limit', EVOLUTION_DEFAULT_LIMIT, EVOLUTION_MAX_LIMIT),
      blame: flagQuery(c, 'blame'),
    });
    return c.body(evolutionJsonStream(evolution), 200, { 'Content-Type': 'application/json' });
  },
});
