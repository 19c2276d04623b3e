import { defineRoute } from '../../../lib/framework/route.ts';
import { handleWebhook } from '../../../lib/hosted/billing.ts';
import { WebhookEvent } from '../../../schema/wire/hosted.ts';
import { readBody } from '../../../lib/framework/http/body-limit.ts';
import { R } from '../../../lib/core/refusals.ts';

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
  doc: {
    operationId: 'billingWebhook',
    summary: "The payment provider's subscription events",
    description:
      'Signed in `X-Billing-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">` with SERVICE_BILLING_WEBHOOK_SECRET. A signature seen before, an event older than the last change of that subscription and an unknown `type` are answered 204 and change nothing.',
    tag: 'Billing',
    access: 'the payment provider: no bearer token, a valid signature.',
    body: { schema: WebhookEvent, description: '`type`: `subscription.activated` or `subscription.canceled`; `user_id`: the service user id.' },
    responses: { 204: { description: 'Accepted.' } },
    errors: [R.invalid_request.example('<field>: <problem>'), R.user_id_required, R.invalid_signature, R.stale_signature, R.user_not_found, R.billing_not_configured],
  },
  handler: async (c) => {
    const raw = await readBody(c);
    await handleWebhook(c.get('deps'), c.req.header('x-billing-signature'), raw);
    return c.body(null, 204);
  },
});
