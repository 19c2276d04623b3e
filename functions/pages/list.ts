import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { commitJson } from '../../lib/usecases/shape.ts';
import { PagesResponse } from '../../schema/wire/sync.ts';

/** GET /v1/repos/:id/pages — every page at head with the last commit that touched it. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/pages',
  doc: {
    operationId: 'listPages',
    summary: 'Every page at head',
    tag: 'Pages',
    access: 'members; the legacy key on any repository.',
    responses: { 200: { description: 'One entry per page, sorted by path, with the last commit that touched it.', schema: PagesResponse } },
    
  },
  handler: async (c) => {
    const { repo } = await openRepo(c, 'repo.read');
    const pages = await repo.pages();
    return c.json({ pages: pages.map((p) => ({ path: p.path, ...commitJson(p.commit) })) });
  },
});
