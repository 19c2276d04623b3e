import { defineRoute } from '../../../lib/route.ts';
import { handleWebhook } from '../../../lib/hosted/billing.ts';

/**
 * POST /billing/webhook — the payment provider's subscription events, signed with
 * SERVICE_BILLING_WEBHOOK_SECRET in `X-Billing-Signature` (no bearer). The body is read once, as bytes:
 * the signature covers them exactly. Hosted build only.
 */
export default defineRoute({
  method: 'POST',
  path: '/billing/webhook',
  public: true,
  body: 'small',
  handler: async (c) => {
    const raw = new Uint8Array(await c.req.arrayBuffer());
    await handleWebhook(c.get('deps'), c.req.header('x-billing-signature'), raw);
    return c.body(null, 204);
  },
});
