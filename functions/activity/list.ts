import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';
import { limitQuery, offsetQuery } from '../../lib/http/params.ts';

/** GET /v1/repos/:id/activity?limit=N&offset=M — the feed, newest first, with the total kept. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/activity',
  handler: async (c) => {
    const { id } = await openRepo(c, 'activity.read');
    const feed = await c.get('deps').activity.list(id, limitQuery(c, 'limit', 50, 500), offsetQuery(c, 'offset'));
    return c.json(feed);
  },
});
