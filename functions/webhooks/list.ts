import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { WebhooksResponse } from '../../schema/wire/webhooks.ts';

/** GET /v1/repos/:id/webhooks — the repository's webhooks, without their secrets. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/webhooks',
  doc: {
    operationId: 'listWebhooks',
    summary: 'The webhooks of a repository',
    tag: 'Webhooks',
    access: 'members; the legacy key on any repository.',
    responses: { 200: { description: 'Oldest first; secrets are never shown again.', schema: WebhooksResponse } },
    
  },
  handler: async (c) => {
    const { id } = await openRepo(c, 'webhook.list');
    return c.json({ webhooks: await c.get('deps').live.listWebhooks(id) });
  },
});
