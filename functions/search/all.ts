import { defineRoute } from '../../lib/framework/route.ts';
import { authorize } from '../../lib/usecases/policy.ts';
import { searchAll, searchParams } from '../../lib/search/service.ts';
import { SearchQuery, SearchResponse } from '../../schema/wire/search.ts';
import { QUERY_ERRORS } from '../../lib/core/search-query.ts';

/** GET /v1/search?q=&type=&tag=&limit=&offset= — full-text search over every repository the caller can read. */
export default defineRoute({
  method: 'GET',
  path: '/v1/search',
  doc: {
    operationId: 'searchAll',
    summary: 'Search every repository you belong to',
    description:
      'As `GET /v1/repos/{id}/search`, over every repository the caller is a member of (the legacy key: every repository), ' +
      'merged best first; `total` adds up the matches of every repository.',
    tag: 'Search',
    access: 'any credential: a user searches the repositories they belong to, the legacy key every repository.',
    query: SearchQuery,
    responses: { 200: { description: 'Best first across repositories, with `total` counting every match.', schema: SearchResponse } },
    errors: [...QUERY_ERRORS],
  },
  handler: async (c) => {
    // Whoever may list repositories may search the ones listed (lib/usecases/policy.ts 'repo.list').
    const identity = authorize(c, 'repo.list');
    return c.json(await searchAll(c.get('deps'), identity, searchParams(c)));
  },
});
