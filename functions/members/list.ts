import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { MembersResponse } from '../../schema/wire/members.ts';

/** GET /v1/repos/:id/members — members with role and join time, oldest first. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/members',
  doc: {
    operationId: 'listMembers',
    summary: 'The members of a repository',
    tag: 'Members',
    access: 'members; the legacy key on any repository.',
    responses: { 200: { description: 'Oldest first.', schema: MembersResponse } },
    
  },
  handler: async (c) => {
    const { id } = await openRepo(c, 'members.list');
    return c.json({ members: await c.get('deps').members.list(id) });
  },
});
