import type { Deps } from '../framework/deps.ts';
import type { Identity } from '../auth/identity.ts';
import { refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import { checkWebhookUrl } from '../events/url.ts';
import type { StreamGrant } from '../events/stream.ts';
import { MAX_WEBHOOKS, type CreateWebhookRequest, type CreateWebhookResponse, type Delivery } from '../../schema/wire/webhooks.ts';
import type { EventKind } from '../../schema/wire/events.ts';

/**
 * Live events and webhooks as the API routes see them (docs/api.md "Live events", "Webhooks"): what a stream's
 * caller is held to, and the webhook rules the routes enforce before deps.live stores anything.
 */

/**
 * The identity an event stream counts against (10 per identity per repository and 50 in all: a user whatever
 * their token, the legacy key as one), the PAT it was opened with (its revocation ends it) and the token
 * re-checked at each ping.
 */
export function streamGrant(identity: Identity, token: string): StreamGrant {
  return identity.kind === 'user'
    ? { holder: `user:${identity.userId}`, userId: identity.userId, patId: identity.via === 'pat' ? (identity.patId ?? null) : null, token }
    : { holder: 'legacy', userId: null, patId: null, token: null };
}

/**
 * `POST /v1/repos/:id/webhooks`: the URL checked (scheme, no credentials, public addresses — its name
 * resolved where the runtime can), then stored with a new secret; 409 past MAX_WEBHOOKS.
 */
export async function createWebhook(deps: Deps, repoId: string, body: CreateWebhookRequest): Promise<CreateWebhookResponse> {
  const policy = { allowHttp: deps.config.webhookAllowHttp, allowPrivate: deps.config.webhookAllowPrivate };
  await checkWebhookUrl(body.url, policy, deps.resolveHost);
  const events: EventKind[] = body.events ? [...new Set(body.events)] : ['push', 'member'];
  const made = await deps.live.createWebhook(repoId, body.url.trim(), events);
  if (!made) throw refuse(R.too_many_webhooks, MAX_WEBHOOKS);
  return made;
}

/** `DELETE /v1/repos/:id/webhooks/:wid`: the webhook and its deliveries, pending ones included. */
export async function deleteWebhook(deps: Deps, repoId: string, webhookId: string): Promise<void> {
  if (!(await deps.live.deleteWebhook(repoId, webhookId))) throw refuse(R.webhook_not_found);
}

/** `POST /v1/repos/:id/webhooks/:wid/test`: a `ping` delivery, sent as soon as the deliverer gets to it. */
export async function testWebhook(deps: Deps, repoId: string, webhookId: string): Promise<void> {
  if (!(await deps.live.testWebhook(repoId, webhookId))) throw refuse(R.webhook_not_found);
}

/** `GET /v1/repos/:id/webhooks/:wid/deliveries`: newest first. */
export async function webhookDeliveries(deps: Deps, repoId: string, webhookId: string, limit: number): Promise<Delivery[]> {
  const list = await deps.live.deliveries(repoId, webhookId, limit);
  if (!list) throw refuse(R.webhook_not_found);
  return list;
}
