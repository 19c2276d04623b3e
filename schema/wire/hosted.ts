import * as z from 'zod';

/** Bodies of the hosted build's routes (docs/api.md "Hosted build: billing", "Hosted build: admin"). */

/**
 * A 402: `code` names the cap, `limit` its value, `upgrade_url` where to lift it; a refused join
 * (`quota_members` from `POST /v1/repos/join`) adds `owners`, the emails of the repository's owners, since only
 * they can lift it.
 */
export const QuotaErrorBody = z.object({
  error: z.string(),
  code: z.enum(['quota_repos', 'quota_members']),
  limit: z.number().int(),
  upgrade_url: z.string(),
  owners: z.array(z.string()).optional().describe("A refused join only: the emails of the repository's owners, whose plan sets the cap."),
});
export type QuotaErrorBody = z.infer<typeof QuotaErrorBody>;

/** `GET /v1/billing`. A subscribed user ("pro") has no caps: both limits are `null`. */
export const BillingResponse = z.object({
  plan: z.enum(['free', 'pro']),
  subscribed: z.boolean(),
  limits: z.object({ repos: z.number().int().nullable(), members: z.number().int().nullable() }),
  usage: z.object({ repos_owned: z.number().int() }),
});
export type BillingResponse = z.infer<typeof BillingResponse>;

/** `POST /v1/billing/checkout` (no request body). */
export const CheckoutResponse = z.object({ url: z.string() });
export type CheckoutResponse = z.infer<typeof CheckoutResponse>;

/**
 * `POST /billing/webhook`. Known types: `subscription.activated`, `subscription.canceled` (they need a
 * `user_id`); any other type is accepted and ignored.
 */
export const WebhookEvent = z.object({ type: z.string(), user_id: z.unknown().optional() });
export type WebhookEvent = z.infer<typeof WebhookEvent>;

/** `GET /v1/admin/stats`: counts; `pages` = pages at head across every repository. */
export const AdminStats = z.object({
  users: z.number().int(),
  repos: z.number().int(),
  subscribed_users: z.number().int(),
  pages: z.number().int(),
});
export type AdminStats = z.infer<typeof AdminStats>;

export const AdminUser = z.object({
  id: z.string(),
  email: z.string(),
  name: z.string(),
  subscribed: z.boolean(),
  repos_owned: z.number().int(),
  created_at: z.number().int(),
});
export type AdminUser = z.infer<typeof AdminUser>;
/** `GET /v1/admin/users`: oldest first. */
export const AdminUsersResponse = z.object({ users: z.array(AdminUser) });
export type AdminUsersResponse = z.infer<typeof AdminUsersResponse>;

/** `members` counts owners too; `owners` are emails, oldest first. */
export const AdminRepo = z.object({
  id: z.string(),
  owners: z.array(z.string()),
  members: z.number().int(),
  page_count: z.number().int(),
});
export type AdminRepo = z.infer<typeof AdminRepo>;
/** `GET /v1/admin/repos`: sorted by id. */
export const AdminReposResponse = z.object({ repos: z.array(AdminRepo) });
export type AdminReposResponse = z.infer<typeof AdminReposResponse>;

/** `POST /v1/admin/users/:id/subscription` → 204. */
export const SetSubscriptionRequest = z.object({ subscribed: z.boolean() });
export type SetSubscriptionRequest = z.infer<typeof SetSubscriptionRequest>;
