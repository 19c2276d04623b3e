/** Webhooks (docs/api.md "Webhooks"): the bodies of the `/v1/repos/:id/webhooks` routes. */
import * as z from 'zod';
import { EventKind } from './events.ts';

/** Webhooks one repository may have. */
export const MAX_WEBHOOKS = 20;
/** The longest webhook URL accepted, in characters. */
export const MAX_WEBHOOK_URL_CHARS = 2048;

/** `events`: the kinds to deliver, default both; at least one. */
export const CreateWebhookRequest = z.object({
  url: z.string(),
  events: z.array(EventKind).min(1, 'expected at least one of push, member').optional(),
});
export type CreateWebhookRequest = z.infer<typeof CreateWebhookRequest>;

export const Webhook = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(EventKind),
  created_at: z.number().int(),
});
export type Webhook = z.infer<typeof Webhook>;

/** The secret (`whsec_…`, the HMAC key of `X-KR-Signature`) appears in this answer only. */
export const CreateWebhookResponse = z.object({ webhook: Webhook, secret: z.string() });
export type CreateWebhookResponse = z.infer<typeof CreateWebhookResponse>;

export const WebhooksResponse = z.object({ webhooks: z.array(Webhook) });
export type WebhooksResponse = z.infer<typeof WebhooksResponse>;

/**
 * One delivery of one event to one webhook. `event`: `push`, `member` or `ping` (the test route).
 * `last_status` is the receiver's last HTTP status, `last_error` why the last attempt failed,
 * `next_attempt_at` (Unix seconds) when a pending delivery is tried next.
 */
export const Delivery = z.object({
  id: z.string(),
  event: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int(),
  last_status: z.number().int().optional(),
  last_error: z.string().optional(),
  next_attempt_at: z.number().int().optional(),
  created_at: z.number().int(),
});
export type Delivery = z.infer<typeof Delivery>;

export const DeliveriesResponse = z.object({ deliveries: z.array(Delivery) });
export type DeliveriesResponse = z.infer<typeof DeliveriesResponse>;

/** `GET /v1/repos/:id/webhooks/:wid/deliveries`. */
export const DeliveriesQuery = z.object({
  limit: z
    .number()
    .int()
    .min(1)
    .default(50)
    .describe('How many deliveries at most: default 50, capped at 200; anything but a positive integer means 50.'),
});
