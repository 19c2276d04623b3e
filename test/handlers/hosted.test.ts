import { afterEach, describe, expect, it } from 'vitest';
import billingRead from '../../functions/hosted/billing/read.ts';
import billingCheckout from '../../functions/hosted/billing/checkout.ts';
import billingWebhook from '../../functions/hosted/billing/webhook.ts';
import adminStats from '../../functions/hosted/admin/stats.ts';
import adminUsers from '../../functions/hosted/admin/users.ts';
import adminRepos from '../../functions/hosted/admin/repos.ts';
import adminSubscription from '../../functions/hosted/admin/subscription.ts';
import { ManualClock } from '../../lib/util/clock.ts';
import { billingOf } from '../../lib/hosted/billing.ts';
import { signPayload } from '../../lib/hosted/signature.ts';
import type { RouteDef } from '../../lib/framework/route.ts';
import { mountHandler, type MountOptions, type MountedHandler } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const T0 = Date.UTC(2026, 0, 1) / 1000;
const WEBHOOK_SECRET = 'whsec-test';
const ADMIN = 'root@example.com';

/** The hosted build's configuration (SERVICE_HOSTED=1), with billing and one admin configured. */
const hosted = (route: RouteDef, opts: MountOptions = {}) =>
  mountHandler(route, {
    ...opts,
    env: {
      SERVICE_HOSTED: '1',
      SERVICE_PLAN_FREE_REPOS: '2',
      SERVICE_BILLING_CHECKOUT_URL: 'https://pay.example.com/checkout?plan=pro',
      SERVICE_BILLING_WEBHOOK_SECRET: WEBHOOK_SECRET,
      SERVICE_ADMIN_EMAILS: ADMIN.toUpperCase(),
      ...opts.env,
    },
  });

const subscribed = async (m: MountedHandler, userId: string) => (await billingOf(m.deps).planUsage(userId)).subscribed;

describe('GET /v1/billing (functions/hosted/billing/read.ts)', () => {
  it('a free user: limits and usage; a subscribed one: pro without caps', async () => {
    h = await hosted(billingRead);
    const alice = await h.user('alice@example.com');
    await h.deps.repos.create('notes');
    await h.deps.members.add('notes', alice.id, 'owner');
    const free = await alice.request('/v1/billing');
    expect(free.status).toBe(200);
    expect(await free.json()).toEqual({ plan: 'free', subscribed: false, limits: { repos: 2, members: 5 }, usage: { repos_owned: 1 } });
    await billingOf(h.deps).setSubscribed(alice.id, true);
    const pro = await alice.request('/v1/billing');
    expect(await pro.json()).toEqual({ plan: 'pro', subscribed: true, limits: { repos: null, members: null }, usage: { repos_owned: 1 } });
  });

  it('the legacy key gets 403 user session required', async () => {
    h = await hosted(billingRead);
    const res = await h.legacy.request('/v1/billing');
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: 'user session required', code: 'user_session_required' });
  });
});

describe('POST /v1/billing/checkout (functions/hosted/billing/checkout.ts)', () => {
  it('the checkout URL with client_reference_id; 503 when not configured', async () => {
    h = await hosted(billingCheckout);
    const alice = await h.user('alice@example.com');
    const res = await alice.request('/v1/billing/checkout', { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ url: `https://pay.example.com/checkout?plan=pro&client_reference_id=${alice.id}` });
    await h.close();

    h = await hosted(billingCheckout, { env: { SERVICE_BILLING_CHECKOUT_URL: '' } });
    const bob = await h.user('bob@example.com');
    const off = await bob.request('/v1/billing/checkout', { method: 'POST' });
    expect(off.status).toBe(503);
    expect(await off.json()).toEqual({ error: 'billing not configured', code: 'billing_not_configured' });
  });
});

describe('POST /billing/webhook (functions/hosted/billing/webhook.ts)', () => {
  const send = async (m: MountedHandler, event: unknown, t: number, secret = WEBHOOK_SECRET) => {
    const body = new TextEncoder().encode(JSON.stringify(event));
    const sig = await signPayload(secret, t, body);
    return m.request('/billing/webhook', { method: 'POST', body, headers: { 'x-billing-signature': `t=${t},v1=${sig}` } });
  };

  it('a signed activation subscribes the user (no bearer); a replay changes nothing', async () => {
    const clock = new ManualClock();
    h = await hosted(billingWebhook, { clock });
    const alice = await h.user('alice@example.com');
    const res = await send(h, { type: 'subscription.activated', user_id: alice.id }, T0);
    expect(res.status).toBe(204);
    expect(await res.text()).toBe('');
    expect(await subscribed(h, alice.id)).toBe(true);
    await billingOf(h.deps).setSubscribed(alice.id, false);
    clock.advance(1000);
    expect((await send(h, { type: 'subscription.activated', user_id: alice.id }, T0)).status).toBe(204);
    expect(await subscribed(h, alice.id)).toBe(false);
  });

  it('401 for a wrong or stale signature, 404 for an unknown user, 204 for an unknown type', async () => {
    const clock = new ManualClock();
    h = await hosted(billingWebhook, { clock });
    const wrong = await send(h, { type: 'subscription.activated', user_id: 'x' }, T0, 'another-secret');
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({ error: 'invalid signature', code: 'invalid_signature' });
    const missing = await h.request('/billing/webhook', { method: 'POST', json: { type: 'subscription.activated' } });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toEqual({ error: 'invalid signature', code: 'invalid_signature' });
    const stale = await send(h, { type: 'subscription.activated', user_id: 'x' }, T0 - 301);
    expect(stale.status).toBe(401);
    expect(await stale.json()).toEqual({ error: 'stale signature', code: 'stale_signature' });
    const unknownUser = await send(h, { type: 'subscription.activated', user_id: 'nobody' }, T0);
    expect(unknownUser.status).toBe(404);
    expect(await unknownUser.json()).toEqual({ error: 'user not found', code: 'user_not_found' });
    expect((await send(h, { type: 'invoice.paid' }, T0)).status).toBe(204);
  });

  it('503 billing not configured without a webhook secret', async () => {
    h = await hosted(billingWebhook, { env: { SERVICE_BILLING_WEBHOOK_SECRET: '' } });
    const res = await send(h, { type: 'subscription.activated', user_id: 'x' }, Math.floor(Date.now() / 1000));
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ error: 'billing not configured', code: 'billing_not_configured' });
  });
});

describe('GET /v1/admin/stats (functions/hosted/admin/stats.ts)', () => {
  it('counts for an admin (email matched ignoring case); 403 admin only for anyone else', async () => {
    h = await hosted(adminStats);
    const root = await h.user('Root@Example.com');
    const alice = await h.user('alice@example.com');
    await billingOf(h.deps).setSubscribed(alice.id, true);
    await h.commit('notes', { 'a.md': 'a', 'b.md': 'b' });
    await h.deps.repos.create('empty');
    const res = await root.request('/v1/admin/stats');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ users: 2, repos: 2, subscribed_users: 1, pages: 2 });
    for (const caller of [alice, h.legacy]) {
      const denied = await caller.request('/v1/admin/stats');
      expect(denied.status).toBe(403);
      expect(await denied.json()).toEqual({ error: 'admin only', code: 'admin_only' });
    }
  });
});

describe('GET /v1/admin/users (functions/hosted/admin/users.ts)', () => {
  it('every user, oldest first, with plan and repositories owned', async () => {
    const clock = new ManualClock();
    h = await hosted(adminUsers, { clock });
    const root = await h.user(ADMIN, { name: 'Root' });
    clock.advance(1000);
    const alice = await h.user('alice@example.com', { name: 'Alice' });
    await h.deps.repos.create('notes');
    await h.deps.members.add('notes', alice.id, 'owner');
    await billingOf(h.deps).setSubscribed(alice.id, true);
    const res = await root.request('/v1/admin/users');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      users: [
        { id: root.id, email: ADMIN, name: 'Root', subscribed: false, repos_owned: 0, created_at: T0 },
        { id: alice.id, email: 'alice@example.com', name: 'Alice', subscribed: true, repos_owned: 1, created_at: T0 + 1 },
      ],
    });
  });
});

describe('GET /v1/admin/repos (functions/hosted/admin/repos.ts)', () => {
  it('every repository by id with owners, member count and page count', async () => {
    h = await hosted(adminRepos);
    const root = await h.user(ADMIN);
    const alice = await h.user('alice@example.com');
    const bob = await h.user('bob@example.com');
    await h.commit('notes', { 'a.md': 'a' });
    await h.deps.members.add('notes', alice.id, 'owner');
    await h.deps.members.add('notes', bob.id, 'member');
    await h.deps.repos.create('empty');
    const res = await root.request('/v1/admin/repos');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      repos: [
        { id: 'empty', owners: [], members: 0, page_count: 0 },
        { id: 'notes', owners: ['alice@example.com'], members: 2, page_count: 1 },
      ],
    });
  });
});

describe('POST /v1/admin/users/:id/subscription (functions/hosted/admin/subscription.ts)', () => {
  it('sets and clears a subscription: 204; 404 for an unknown user; 400 for a bad body', async () => {
    h = await hosted(adminSubscription);
    const root = await h.user(ADMIN);
    const alice = await h.user('alice@example.com');
    const on = await root.request(`/v1/admin/users/${alice.id}/subscription`, { method: 'POST', json: { subscribed: true } });
    expect(on.status).toBe(204);
    expect(await subscribed(h, alice.id)).toBe(true);
    const off = await root.request(`/v1/admin/users/${alice.id}/subscription`, { method: 'POST', json: { subscribed: false } });
    expect(off.status).toBe(204);
    expect(await subscribed(h, alice.id)).toBe(false);
    const nobody = await root.request('/v1/admin/users/nobody/subscription', { method: 'POST', json: { subscribed: true } });
    expect(nobody.status).toBe(404);
    expect(await nobody.json()).toEqual({ error: 'user not found', code: 'user_not_found' });
    const bad = await root.request(`/v1/admin/users/${alice.id}/subscription`, { method: 'POST', json: { subscribed: 'yes' } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'invalid request: subscribed: expected boolean', code: 'invalid_request' });
  });

  it('a user who is not an admin gets 403 admin only and nothing changes', async () => {
    h = await hosted(adminSubscription);
    const alice = await h.user('alice@example.com');
    const res = await alice.request(`/v1/admin/users/${alice.id}/subscription`, { method: 'POST', json: { subscribed: true } });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: 'admin only', code: 'admin_only' });
    expect(await subscribed(h, alice.id)).toBe(false);
  });
});
