import type { Deps } from '../framework/deps.ts';
import { Billing } from '../db/billing.ts';
import { refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import { describeIssue } from '../framework/http/parse.ts';
import { verifySignature } from './signature.ts';
import { WebhookEvent, type BillingResponse } from '../../schema/wire/hosted.ts';

/**
 * Billing (docs/api.md "Hosted build: billing"): a user's plan, the checkout link, and the signed webhook that
 * turns subscriptions on and off. Who may call what is lib/usecases/policy.ts's business.
 */

export const billingOf = (deps: Pick<Deps, 'db' | 'clock'>): Billing => new Billing(deps.db, deps.clock);

/**
 * `GET /v1/billing`: plan `pro` when subscribed, else `free`. A subscribed user has no caps: both limits
 * are `null`.
 */
export async function accountPlan(deps: Deps, userId: string): Promise<BillingResponse> {
  const { subscribed, reposOwned } = await billingOf(deps).planUsage(userId);
  return {
    plan: subscribed ? 'pro' : 'free',
    subscribed,
    limits: subscribed
      ? { repos: null, members: null }
      : { repos: deps.config.planFreeRepos, members: deps.config.planFreeMembers },
    usage: { repos_owned: reposOwned },
  };
}

/** `POST /v1/billing/checkout`: SERVICE_BILLING_CHECKOUT_URL with `client_reference_id=<user id>`; 503 when unset. */
export function checkoutUrl(deps: Deps, userId: string): string {
  const base = deps.config.billingCheckoutUrl;
  if (!base) throw refuse(R.billing_not_configured);
  const url = new URL(base);
  url.searchParams.set('client_reference_id', userId);
  return url.href;
}

/** Known event types → the subscription they set. */
const EVENTS = new Map<string, boolean>([
  ['subscription.activated', true],
  ['subscription.canceled', false],
]);

/**
 * `POST /billing/webhook`, given the raw body bytes and the signature header. In order: 503 when
 * SERVICE_BILLING_WEBHOOK_SECRET is unset; 401 `invalid signature` / `stale signature`; 400 for a body that
 * is not a JSON object with a string `type`; an unknown `type` is ignored; 400 `user_id required`; 404
 * `user not found`; a replayed signature, or an event older than the subscription's last change, changes
 * nothing. Every accepted case answers 204.
 */
export async function handleWebhook(deps: Deps, signatureHeader: string | undefined, raw: Uint8Array): Promise<void> {
  const secret = deps.config.billingWebhookSecret;
  if (secret === undefined) throw refuse(R.billing_not_configured);
  const check = await verifySignature(secret, signatureHeader, raw, Math.floor(deps.clock.now() / 1000));
  if (!check.ok) throw refuse(check.error === 'stale signature' ? R.stale_signature : R.invalid_signature);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw));
  } catch {
    throw refuse(R.invalid_json);
  }
  const parsed = WebhookEvent.safeParse(value);
  if (!parsed.success) throw refuse(R.invalid_request, describeIssue(parsed.error));
  const { type, user_id: userId } = parsed.data;
  const subscribed = EVENTS.get(type);
  if (subscribed === undefined) return;
  if (typeof userId !== 'string' || userId === '') throw refuse(R.user_id_required);
  const outcome = await billingOf(deps).applyWebhook({ signature: check.signature, userId, subscribed, t: check.t });
  if (outcome === 'unknown_user') throw refuse(R.user_not_found);
  if (outcome !== 'applied') deps.log.info('billing_webhook', { outcome, type, user_id: userId });
}
