import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { testWebhook } from '../../lib/usecases/webhooks.ts';
import { R } from '../../lib/core/refusals.ts';

/** POST /v1/repos/:id/webhooks/:wid/test — queues a `ping` delivery to the webhook. */
export default defineRoute({
  method: 'POST',
  path: '/v1/repos/:id/webhooks/:wid/test',
  body: 'none',
  doc: {
    operationId: 'testWebhook',
    summary: 'Send a test event to a webhook',
    description:
      'Queues a delivery of event `ping` with data `{"repo_id","webhook_id"}`, signed and retried like any other; its outcome shows in the deliveries.',
    tag: 'Webhooks',
    access: 'owners, and the legacy key.',
    params: { wid: "The webhook's id." },
    responses: { 202: { description: 'Queued.' } },
    errors: [R.owner_only_webhooks, R.webhook_not_found],
  },
  handler: async (c) => {
    const { id } = await openRepo(c, 'webhook.manage');
    await testWebhook(c.get('deps'), id, c.req.param('wid') ?? '');
    return c.body(null, 202);
  },
});
