import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { parseBody } from '../../lib/framework/http/parse.ts';
import { createWebhook } from '../../lib/usecases/webhooks.ts';
import { CreateWebhookRequest, CreateWebhookResponse, MAX_WEBHOOKS } from '../../schema/wire/webhooks.ts';
import { R } from '../../lib/core/refusals.ts';

/** POST /v1/repos/:id/webhooks — owners add a webhook; its signing secret is shown once. */
export default defineRoute({
  method: 'POST',
  path: '/v1/repos/:id/webhooks',
  body: 'small',
  doc: {
    operationId: 'createWebhook',
    summary: 'Add a webhook',
    description:
      'Each event of the repository (`events`: `push`, `member`; default both) is POSTed to `url` as JSON — the event\'s data plus `event` and `delivery_id` — with `X-KR-Event`, `X-KR-Delivery` and `X-KR-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" keyed with the secret>`. A 2xx answer within 10 s is a delivery; anything else (redirects are not followed) is tried again about 10 s, 1 min, 10 min, 1 h and 6 h after the first attempt, then `failed`. The URL must be `https://` (`http://` too with SERVICE_WEBHOOK_ALLOW_HTTP) and must not name, directly or through DNS, a loopback, private, link-local, unique-local or otherwise non-public address (unless SERVICE_WEBHOOK_ALLOW_PRIVATE); it is checked again at each delivery. At most 20 webhooks per repository.',
    tag: 'Webhooks',
    access: 'owners, and the legacy key.',
    body: { schema: CreateWebhookRequest },
    responses: { 201: { description: 'The webhook, and its secret (`whsec_…`, shown in this answer only).', schema: CreateWebhookResponse } },
    errors: [
      R.webhook_url_https,
      R.webhook_url_not_allowed,
      R.invalid_request.example('<field>: <problem>'),
      R.owner_only_webhooks,
      R.too_many_webhooks.example(MAX_WEBHOOKS),
    ],
  },
  handler: async (c) => {
    const { id } = await openRepo(c, 'webhook.manage');
    const body = await parseBody(c, CreateWebhookRequest);
    return c.json(await createWebhook(c.get('deps'), id, body), 201);
  },
});
