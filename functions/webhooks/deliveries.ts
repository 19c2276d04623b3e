import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { limitQuery } from '../../lib/framework/http/params.ts';
import { webhookDeliveries } from '../../lib/usecases/webhooks.ts';
import { DeliveriesQuery, DeliveriesResponse } from '../../schema/wire/webhooks.ts';
import { R } from '../../lib/core/refusals.ts';

/** GET /v1/repos/:id/webhooks/:wid/deliveries — what was sent to a webhook, and how it went. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/webhooks/:wid/deliveries',
  doc: {
    operationId: 'listDeliveries',
    summary: 'The deliveries of a webhook',
    description:
      '`status`: `pending` (not delivered yet; `next_attempt_at` says when it is tried next), `delivered` (a 2xx answer) or `failed` (every attempt failed). `last_status` is the last HTTP status received, `last_error` why the last attempt failed. The 200 newest finished deliveries are kept per webhook.',
    tag: 'Webhooks',
    access: 'owners, and the legacy key.',
    params: { wid: "The webhook's id." },
    query: DeliveriesQuery,
    responses: { 200: { description: 'Newest first.', schema: DeliveriesResponse } },
    errors: [R.owner_only_webhooks, R.webhook_not_found],
  },
  handler: async (c) => {
    const { id } = await openRepo(c, 'webhook.manage');
    const limit = limitQuery(c, 'limit', 50, 200);
    return c.json({ deliveries: await webhookDeliveries(c.get('deps'), id, c.req.param('wid') ?? '', limit) });
  },
});
