import { defineRoute } from '../../../lib/framework/route.ts';
import { authorizeUser } from '../../../lib/usecases/policy.ts';
import { checkoutUrl } from '../../../lib/hosted/billing.ts';
import { CheckoutResponse } from '../../../schema/wire/hosted.ts';
import { R } from '../../../lib/core/refusals.ts';

/**
 * POST /v1/billing/checkout — where to pay: SERVICE_BILLING_CHECKOUT_URL with `client_reference_id=<user
 * id>` (503 `billing not configured` when unset). No request body. Hosted build only.
 */
export default defineRoute({
  method: 'POST',
  path: '/v1/billing/checkout',
  body: 'none',
  doc: {
    operationId: 'checkout',
    summary: 'Where to pay for a subscription',
    description: 'No body. The URL is SERVICE_BILLING_CHECKOUT_URL with `client_reference_id=<user id>` added.',
    tag: 'Billing',
    access: 'a real user; the legacy key gets 403 `user session required`.',
    responses: { 200: { description: 'The payment page.', schema: CheckoutResponse } },
    errors: [R.user_session_required, R.billing_not_configured],
  },
  handler: (c) => {
    const user = authorizeUser(c, 'billing.checkout');
    const res: CheckoutResponse = { url: checkoutUrl(c.get('deps'), user.userId) };
    return c.json(res);
  },
});
