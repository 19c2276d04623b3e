import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { deleteWebhook } from '../../lib/usecases/webhooks.ts';
import { R } from '../../lib/core/refusals.ts';

/** DELETE /v1/repos/:id/webhooks/:wid — owners remove a webhook; its pending deliveries go with it. */
export default defineRoute({
  method: 'DELETE',
  path: '/v1/repos/:id/webhooks/:wid',
  doc: {
    operationId: 'deleteWebhook',
    summary: 'Remove a webhook',
    description: 'Its deliveries, pending ones included, are dropped.',
    tag: 'Webhooks',
    access: 'owners, and the legacy key.',
    params: { wid: "The webhook's id." },
    responses: { 204: { description: 'Removed.' } },
    errors: [R.owner_only_webhooks, R.webhook_not_found],
  },
  handler: async (c) => {
    const { id } = await openRepo(c, 'webhook.manage');
    await deleteWebhook(c.get('deps'), id, c.req.param('wid') ?? '');
    return c.body(null, 204);
  },
});
