import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { limitQuery, offsetQuery } from '../../lib/framework/http/params.ts';
import { refuse } from '../../lib/core/errors.ts';
import { R } from '../../lib/core/refusals.ts';
import { ACTIVITY_ACTIONS, type ActivityAction } from '../../lib/db/activity.ts';
import { ActivityResponse } from '../../schema/wire/repos.ts';
import { ActivityQuery } from '../../schema/wire/query.ts';

/** `?actions=push,import`: the actions asked for (undefined: the default feed); an unknown one is a 400. */
function actionsQuery(raw: string | undefined): ActivityAction[] | undefined {
  if (raw === undefined) return undefined;
  const asked = raw.split(',').map((a) => a.trim());
  if (asked.some((a) => !(ACTIVITY_ACTIONS as readonly string[]).includes(a))) throw refuse(R.invalid_actions, raw.slice(0, 200));
  return [...new Set(asked as ActivityAction[])];
}

/** GET /v1/repos/:id/activity?limit=N&offset=M&actions=a,b — the feed, newest first, with the total kept. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/activity',
  doc: {
    operationId: 'listActivity',
    summary: "The repository's activity feed",
    description:
      'Pushes (with the first 50 committed paths, and `sha`, the commit), pulls that received pages (with the announced client) and imports, by real users; the newest 1,000 events are kept. ' +
      'Membership changes (`member`: a join by invite key, a removal, a role change, with the member it is about) are kept apart, 1,000 of their own, and listed only when `actions` names `member`.',
    tag: 'Members',
    access: 'members; the legacy key on any repository.',
    query: ActivityQuery,
    responses: { 200: { description: 'Newest first, and how many events the feed holds.', schema: ActivityResponse } },
    errors: [R.invalid_actions],
  },
  handler: async (c) => {
    const { id } = await openRepo(c, 'activity.read');
    const actions = actionsQuery(c.req.query('actions'));
    const feed = await c.get('deps').activity.list(id, limitQuery(c, 'limit', 50, 500), offsetQuery(c, 'offset'), actions);
    return c.json(feed);
  },
});
