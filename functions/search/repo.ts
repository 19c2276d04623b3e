import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { searchParams, searchRepo } from '../../lib/search/service.ts';
import { QUERY_ERRORS } from '../../lib/core/search-query.ts';
import { SearchQuery, SearchResponse } from '../../schema/wire/search.ts';

/** GET /v1/repos/:id/search?q=&type=&tag=&limit=&offset= — full-text search over one repository's pages at head. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/search',
  doc: {
    operationId: 'searchRepo',
    summary: "Search one repository's pages",
    description:
      'Full-text search over the pages at head, best first: title, tags and summary (frontmatter) and the headings rank above the body. ' +
      'A page is searchable as soon as the push that wrote it is answered.',
    tag: 'Search',
    access: 'members; the legacy key on any repository.',
    query: SearchQuery,
    responses: { 200: { description: 'Best first, with `total` counting every match.', schema: SearchResponse } },
    errors: [...QUERY_ERRORS],
  },
  handler: async (c) => {
    const { repo } = await openRepo(c, 'repo.read');
    return c.json(await searchRepo(repo, searchParams(c)));
  },
});
