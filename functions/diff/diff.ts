import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';
import { flagQuery, pagePathParam } from '../../lib/http/params.ts';
import { diffPage } from '../../lib/diff-service.ts';

/** GET /v1/repos/:id/diff/<path>?from=&to=&blame=true — SectionDiff of two revisions of a page (read-only). */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/diff/:path{.+}',
  handler: async (c) => {
    const { id } = await openRepo(c, 'repo.read');
    const path = pagePathParam(c);
    const diff = await diffPage(c.get('deps'), id, path, {
      from: c.req.query('from'),
      to: c.req.query('to'),
      blame: flagQuery(c, 'blame'),
    });
    return c.json(diff);
  },
});
