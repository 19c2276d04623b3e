import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';
import { commitJson } from '../../lib/wire.ts';
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
    errors: { 400: ['invalid repo id'], 403: ['not a member of this repo'], 404: ['repo not found'] },
  },
  handler: async (c) => {
    const { repo } = await openRepo(c, 'repo.read');
    const pages = await repo.pages();
    return c.json({ pages: pages.map((p) => ({ path: p.path, ...commitJson(p.commit) })) });
  },
});
