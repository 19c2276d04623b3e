import { defineRoute } from '../../../lib/framework/route.ts';
import { authorizeUser } from '../../../lib/usecases/policy.ts';
import { accountPlan } from '../../../lib/hosted/billing.ts';
import { BillingResponse } from '../../../schema/wire/hosted.ts';
import { R } from '../../../lib/core/refusals.ts';

/** GET /v1/billing — the caller's plan, limits (null = no cap) and repositories owned. Hosted build only. */
export default defineRoute({
  method: 'GET',
  path: '/v1/billing',
  doc: {
    operationId: 'getBilling',
    summary: "The caller's plan, caps and usage",
    tag: 'Billing',
    access: 'a real user; the legacy key gets 403 `user session required`.',
    responses: { 200: { description: 'A subscribed user has no caps (`null`).', schema: BillingResponse } },
    errors: [R.user_session_required],
  },
  handler: async (c) => {
    const user = authorizeUser(c, 'billing.read');
    return c.json(await accountPlan(c.get('deps'), user.userId));
  },
});
