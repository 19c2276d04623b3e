import { defineRoute } from '../../lib/route.ts';
import { openRepo } from '../../lib/repos.ts';
import { limitQuery, offsetQuery } from '../../lib/http/params.ts';
import { ActivityResponse } from '../../schema/wire/repos.ts';
import { ActivityQuery } from '../../schema/wire/query.ts';

/** GET /v1/repos/:id/activity?limit=N&offset=M — the feed, newest first, with the total kept. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/activity',
  doc: {
    operationId: 'listActivity',
    summary: "The repository's activity feed",
    description: 'Pushes (with the first 50 committed paths, and `sha`, the commit) and pulls that received pages (with the announced client), by real users; the newest 1,000 events are kept.',
    tag: 'Members',
    access: 'members; the legacy key on any repository.',
    query: ActivityQuery,
    responses: { 200: { description: 'Newest first, and how many events the feed holds.', schema: ActivityResponse } },
    errors: { 400: ['invalid repo id'], 403: ['not a member of this repo'], 404: ['repo not found'] },
  },
  handler: async (c) => {
    const { id } = await openRepo(c, 'activity.read');
    const feed = await c.get('deps').activity.list(id, limitQuery(c, 'limit', 50, 500), offsetQuery(c, 'offset'));
    return c.json(feed);
  },
});
