import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { parseBody } from '../../lib/framework/http/parse.ts';
import { refuse } from '../../lib/core/errors.ts';
import { R } from '../../lib/core/refusals.ts';
import { changeRole } from '../../lib/usecases/membership.ts';
import { SetRoleRequest, SetRoleResponse } from '../../schema/wire/members.ts';

/** POST /v1/repos/:id/members/:userId/role — owners give a member another role; the last owner stays one. */
export default defineRoute({
  method: 'POST',
  path: '/v1/repos/:id/members/:userId/role',
  body: 'small',
  doc: {
    operationId: 'setMemberRole',
    summary: "Change a member's role",
    description:
      'Promotes a member to owner or demotes an owner to member. A demotion needs another owner to remain: two owners demoting each other at once leave one. ' +
      'Giving a member the role they hold changes nothing and answers the same. ' +
      "On the hosted build the new owner's plan caps the repositories they own: promoting a user who is not subscribed and already owns the plan's number of repositories is refused with 402.",
    tag: 'Members',
    access: 'owners, and the legacy key.',
    body: { schema: SetRoleRequest },
    responses: { 200: { description: 'The member with their role now.', schema: SetRoleResponse } },
    errors: [R.invalid_role, R.invalid_request.example('<field>: <problem>'), R.owner_only_roles, R.member_not_found, R.last_owner],
    quota: ['quota_repos'],
    quotaMessage: { quota_repos: "repository limit reached for the new owner's plan (<limit>)" },
  },
  handler: async (c) => {
    const { id, identity } = await openRepo(c, 'member.role');
    const { role } = await parseBody(c, SetRoleRequest);
    if (role !== 'owner' && role !== 'member') throw refuse(R.invalid_role);
    return c.json(await changeRole(c.get('deps'), identity, id, c.req.param('userId') ?? '', role));
  },
});
