import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { pagePathParam } from '../../lib/framework/http/params.ts';
import { refuse } from '../../lib/core/errors.ts';
import { R } from '../../lib/core/refusals.ts';
import { LinksResponse } from '../../schema/wire/links.ts';

/** GET /v1/repos/:id/links/<path> — what the page at head links to, and the pages that link to it. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/links/:path{.+}',
  doc: {
    operationId: 'pageLinks',
    summary: 'Links from and to a page',
    description:
      '`[[slug]]`, `[[slug|shown text]]` and `[[type/slug]]` link by slug (resolved among the page types; a slug under several types is `ambiguous`), ' +
      'a markdown link to a relative `.md` path links by path (resolved against the linking page\'s folder). Links inside code do not count. ' +
      '`outgoing`: in document order, each distinct target once, `path` when it names a page at head. `incoming`: every page at head that links to this one, sorted by path. ' +
      'Kept current with every push.',
    tag: 'Pages',
    access: 'members; the legacy key on any repository.',
    responses: { 200: { description: 'Both directions, resolved against the pages at head.', schema: LinksResponse } },
    errors: [R.invalid_page_path, R.page_not_found],
  },
  handler: async (c) => {
    const { repo } = await openRepo(c, 'repo.read');
    const path = pagePathParam(c);
    const links = await repo.links(path);
    if (!links) throw refuse(R.page_not_found);
    return c.json(links);
  },
});
