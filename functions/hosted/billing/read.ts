import { defineRoute } from '../../../lib/route.ts';
import { authorizeUser } from '../../../lib/policy.ts';
import { accountPlan } from '../../../lib/hosted/billing.ts';

/** GET /v1/billing — the caller's plan, limits (null = no cap) and repositories owned. Hosted build only. */
export default defineRoute({
  method: 'GET',
  path: '/v1/billing',
  handler: async (c) => {
    const user = authorizeUser(c, 'billing.read');
    return c.json(await accountPlan(c.get('deps'), user.userId));
  },
});
