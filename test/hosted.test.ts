import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { GitStore } from '../lib/git/store.ts';
import { nodeStoreFs } from '../lib/runtime/node/store-fs.ts';
import { PathIndex } from '../lib/repo/path-index.ts';
import { RepoStore } from '../lib/repo/repo-store.ts';
import { ManualClock } from '../lib/util/clock.ts';
import { loadConfig } from '../lib/framework/config.ts';
import { openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import type { Database } from '../lib/runtime/node/libsql.ts';
import { Billing } from '../lib/db/billing.ts';
import { Members } from '../lib/db/members.ts';
import { Users } from '../lib/db/users.ts';
import { planQuota, quotaFor } from '../lib/hosted/quota.ts';
import { parseSignatureHeader, signPayload, verifySignature } from '../lib/hosted/signature.ts';
import { unlimitedQuota, type QuotaGuard } from '../lib/usecases/quota.ts';
import { hostedRoutes, routes, routesFor } from '../functions/index.ts';
import { fsck, tempDir, testConfig } from './helpers/env.ts';
import { signIn, startIdpTestServer, type IdpTestServer } from './helpers/idp.ts';
import { HOSTED_ROUTES, hostedCases, signatureHeader, type StartHostedTarget } from './helpers/hosted-cases.ts';

/**
 * The hosted build on Node (SERVICE_HOSTED=1): the shared cases of test/helpers/hosted-cases.ts over HTTP;
 * the self-hosted build without it (no such routes, no caps); and, below the HTTP surface, what HTTP
 * cannot reach: a repository with two owners, pruning of seen webhook signatures, the configuration.
 */

/** A Node server of the hosted build on a manual clock, users signed in through the loopback identity provider. */
const startNode: StartHostedTarget = async (env) => {
  const clock = new ManualClock(Date.UTC(2026, 4, 1, 12, 0, 0));
  const srv = await startIdpTestServer({ env, clock });
  return {
    url: srv.url,
    legacyKey: 'test-legacy-key',
    api: (path, init) => srv.api(path, init),
    signIn: (who) => signIn(srv, who),
    nowSeconds: () => Math.floor(clock.now() / 1000),
    advanceSeconds: (s) => clock.advance(s * 1000),
    stop: () => srv.stop(),
  };
};

hostedCases('node', startNode);

describe('node: the self-hosted build (SERVICE_HOSTED unset)', () => {
  let srv: IdpTestServer;
  beforeAll(async () => {
    srv = await startIdpTestServer({ env: { SERVICE_BILLING_WEBHOOK_SECRET: 'whsec_test_0123456789abcdef', SERVICE_ADMIN_EMAILS: 'admin@example.test' } });
  });
  afterAll(async () => srv?.stop());

  it('every hosted route is 404 `not found`, whatever the credential', async () => {
    const admin = await signIn(srv, { sub: 'admin', email: 'admin@example.test' });
    for (const r of HOSTED_ROUTES) {
      for (const token of [admin.token, 'test-legacy-key', null]) {
        const headers: Record<string, string> = {};
        if (r.path === '/billing/webhook') headers['x-billing-signature'] = signatureHeader(JSON.stringify(r.json), Math.floor(Date.now() / 1000));
        const res = await srv.api(r.path, { method: r.method, token, json: r.json, headers });
        expect([res.status, await res.json()], `${r.method} ${r.path}`).toEqual([404, { error: 'not found', code: 'not_found' }]);
      }
    }
  });

  it('no caps: 10 repositories by one user, 7 members in one repository', async () => {
    const owner = await signIn(srv, { sub: 'owner', email: 'owner@example.test' });
    for (let i = 1; i <= 8; i++) expect((await srv.api('/v1/repos', { method: 'POST', token: owner.token, json: { id: `r${i}` } })).status).toBe(201);
    expect((await srv.api('/v1/repos/r9', { method: 'POST', token: owner.token })).status).toBe(201);
    expect(
      (await srv.api('/v1/repos/r10/sync/push', { method: 'POST', token: owner.token, json: { files: [{ path: 'a.md', content: 'x\n' }] } })).status,
    ).toBe(200);
    const key = ((await (await srv.api('/v1/repos/r1/invite-keys', { method: 'POST', token: owner.token, json: {} })).json()) as { token: string }).token;
    for (let i = 1; i <= 6; i++) {
      const m = await signIn(srv, { sub: `m${i}`, email: `m${i}@example.test` });
      expect((await srv.api('/v1/repos/join', { method: 'POST', token: m.token, json: { key } })).status).toBe(200);
    }
    const members = (await (await srv.api('/v1/repos/r1/members', { token: owner.token })).json()) as { members: unknown[] };
    expect(members.members).toHaveLength(7);
    expect(srv.deps.quota).toBe(unlimitedQuota);
  });
});

describe('route lists', () => {
  it('routesFor: the hosted routes exactly when hosted, after every common route', () => {
    expect(routesFor({ hosted: false })).toEqual(routes);
    expect(routesFor({ hosted: true })).toEqual([...routes, ...hostedRoutes]);
    expect(hostedRoutes.map((r) => `${r.method} ${r.path}`)).toEqual(HOSTED_ROUTES.map((r) => `${r.method} ${r.path.replace(/users\/[^/]+\//, 'users/:id/')}`));
    // Only the webhook is public (it is signed instead).
    expect(hostedRoutes.filter((r) => r.public).map((r) => r.path)).toEqual(['/billing/webhook']);
  });
});

describe('plan caps against a real database (what HTTP cannot construct)', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let db: Database;
  const clock = new ManualClock(Date.UTC(2026, 4, 1));
  afterEach(async () => {
    await db?.close();
    await dir?.cleanup();
  });
  const open = async (env: Record<string, string> = {}) => {
    dir = await tempDir();
    db = await openDatabaseFile(join(dir.path, 'service.db'), Math.floor(clock.now() / 1000));
    const config = testConfig(dir.path, { SERVICE_HOSTED: '1', SERVICE_PLAN_FREE_MEMBERS: '3', SERVICE_PLAN_FREE_REPOS: '2', ...env });
    const users = new Users(db, clock);
    const mk = async (sub: string) => (await users.upsert({ issuer: 'https://idp.test', subject: sub, email: `${sub}@example.test`, name: sub })).user.id;
    return { config, members: new Members(db, clock), billing: new Billing(db, clock), mk, quota: planQuota(config) };
  };
  const user = (userId: string) => ({ kind: 'user' as const, userId, email: `${userId}@example.test`, name: userId, via: 'session' as const });
  const billingOwned = async (userId: string) => (await new Billing(db, clock).planUsage(userId)).reposOwned;

  /** Whether a cap's SQL condition holds now (null: no cap). */
  const holds = async (guard: QuotaGuard | null) =>
    guard === null || Number((await db.get<{ ok: unknown }>(`SELECT ${guard.when.sql} AS ok`, guard.when.args))?.ok) === 1;

  it('a repository with two owners is uncapped when either one is subscribed', async () => {
    const { members, billing, mk, quota } = await open();
    const [a, b, m1, m2, joiner] = [await mk('a'), await mk('b'), await mk('m1'), await mk('m2'), await mk('j')];
    await members.add('two', a, 'owner');
    await members.add('two', b, 'owner');
    await members.add('two', m1, 'member');
    expect(quota.join('two')?.refusal).toEqual({
      code: 'quota_members',
      message: "member limit reached for this repository's plan (3)",
      limit: 3,
      upgradeUrl: 'http://localhost:5173/billing',
    });
    expect(await holds(quota.join('two'))).toBe(false);
    // Refused by the insert itself: no row, whatever the joiner's role was to be.
    expect(await members.addIf('two', joiner, 'member', quota.join('two')!.when)).toBeNull();
    expect(await members.roleOf('two', joiner)).toBeNull();
    // A member at the cap is still one (a re-join).
    expect(await members.addIf('two', m1, 'member', quota.join('two')!.when)).toEqual({ role: 'member', added: false });
    expect(await billing.setSubscribed(b, true)).toBe(true);
    expect(await holds(quota.join('two'))).toBe(true);
    await members.add('two', m2, 'member');
    expect(await holds(quota.join('two'))).toBe(true);
    expect(await billing.setSubscribed(b, false)).toBe(true);
    expect(await holds(quota.join('two'))).toBe(false);
    // A subscribed member who is not an owner lifts nothing.
    expect(await billing.setSubscribed(m1, true)).toBe(true);
    expect(await holds(quota.join('two'))).toBe(false);
    expect(await billing.setSubscribed(a, true)).toBe(true);
    expect(await holds(quota.join('two'))).toBe(true);
    expect(await members.addIf('two', joiner, 'member', quota.join('two')!.when)).toEqual({ role: 'member', added: true });
    // Repositories owned count owner rows only; the legacy key is never capped.
    expect(await billing.planUsage(m1)).toEqual({ subscribed: true, reposOwned: 0 });
    expect(await billing.planUsage(b)).toEqual({ subscribed: false, reposOwned: 1 });
    expect(await holds(quota.repoCreate(user(b)))).toBe(true);
    await members.add('other', b, 'owner');
    expect(quota.repoCreate(user(b))?.refusal.code).toBe('quota_repos');
    expect(await holds(quota.repoCreate(user(b)))).toBe(false);
    // A subscribed member (m1) owns nothing and is uncapped anyway.
    expect(await holds(quota.repoCreate(user(m1)))).toBe(true);
    expect(await billing.setSubscribed('00000000-0000-4000-8000-000000000000', true)).toBe(false);
  });

  it("Node's createOwned: the cap is checked as the owner row is written; a failed or refused creation leaves nothing", async () => {
    const { members, mk, quota } = await open();
    const [a, b] = [await mk('a'), await mk('b')];
    const root = join(dir.path, 'repos');
    const repos = new RepoStore(new GitStore({ fs: nodeStoreFs(), root }), new PathIndex(db), clock);
    const cap = (id: string) => quota.repoCreate(user(id))!.when;
    const memberRows = () => db.all<{ repo_id: string; user_id: string; role: string }>('SELECT repo_id, user_id, role FROM members ORDER BY repo_id, user_id');
    // A row of someone else for an id with no repository (a creation that died before making its
    // directory) does not make them a member of the repository made now.
    await members.add('x', b, 'owner');
    expect(await repos.createOwned('x', a, cap(a))).toBe('created');
    expect(await memberRows()).toEqual([{ repo_id: 'x', user_id: a, role: 'owner' }]);
    expect(await repos.git.creatorOf('x')).toBe(a);
    fsck(join(root, 'x.git'));
    expect(await repos.createOwned('x', b, cap(b))).toBe('exists');
    expect(await repos.createOwned('X', b, cap(b))).toBe('exists');
    expect(await repos.createOwned('y', a, cap(a))).toBe('created');
    // At the cap (2 here): refused, nothing written.
    expect(await repos.createOwned('z', a, cap(a))).toBe('refused');
    expect(existsSync(join(root, 'z.git'))).toBe(false);
    expect((await memberRows()).filter((r) => r.repo_id === 'z')).toEqual([]);
    // No cap: created whatever is owned.
    expect(await repos.createOwned('z', a, null)).toBe('created');
    // A directory that cannot be made takes the owner row back: the cap is not spent on it.
    await writeFile(join(root, 'not-a-directory'), '');
    const failing = new RepoStore(new GitStore({ fs: nodeStoreFs(), root: join(root, 'not-a-directory') }), new PathIndex(db), clock);
    await expect(failing.createOwned('w', b, cap(b))).rejects.toThrow();
    expect((await memberRows()).filter((r) => r.repo_id === 'w')).toEqual([]);
    expect(await billingOwned(b)).toBe(0);
  });

  it('seen webhook signatures are pruned after 600 s, in the same batch as a new event', async () => {
    const { billing, mk } = await open();
    const a = await mk('a');
    const t = Math.floor(clock.now() / 1000);
    expect(await billing.applyWebhook({ signature: 's1', userId: a, subscribed: true, t })).toBe('applied');
    expect(await billing.applyWebhook({ signature: 's1', userId: a, subscribed: true, t })).toBe('replay');
    expect(await billing.applyWebhook({ signature: 's2', userId: 'nobody', subscribed: true, t })).toBe('unknown_user');
    const seen = async () => (await db.all<{ signature: string }>('SELECT signature FROM billing_webhook_seen ORDER BY signature')).map((r) => r.signature);
    expect(await seen()).toEqual(['s1']);
    clock.advance(600_000);
    expect(await billing.applyWebhook({ signature: 's3', userId: a, subscribed: false, t: t + 600 })).toBe('applied');
    expect(await seen()).toEqual(['s1', 's3']);
    clock.advance(1_000);
    expect(await billing.applyWebhook({ signature: 's4', userId: a, subscribed: false, t: t + 599 })).toBe('outdated');
    expect(await seen()).toEqual(['s3', 's4']);
    expect(await billing.planUsage(a)).toEqual({ subscribed: false, reposOwned: 0 });
  });

  it('quotaFor: plan caps when hosted, none otherwise', async () => {
    const { config } = await open();
    expect(quotaFor({ ...config, hosted: false })).toBe(unlimitedQuota);
    expect(quotaFor(config)).not.toBe(unlimitedQuota);
  });
});

describe('the webhook signature (lib/hosted/signature.ts)', () => {
  const body = new TextEncoder().encode('{"type":"subscription.activated","user_id":"u"}');
  it('agrees with an independent HMAC, and checks skew both ways', async () => {
    const header = signatureHeader(body, 1_700_000_000, 'k');
    expect(`t=1700000000,v1=${await signPayload('k', 1_700_000_000, body)}`).toBe(header);
    expect(await verifySignature('k', header, body, 1_700_000_000)).toEqual({ ok: true, t: 1_700_000_000, signature: header.split('v1=')[1] });
    expect(await verifySignature('k', header, body, 1_700_000_300)).toMatchObject({ ok: true });
    expect(await verifySignature('k', header, body, 1_699_999_700)).toMatchObject({ ok: true });
    expect(await verifySignature('k', header, body, 1_700_000_301)).toEqual({ ok: false, error: 'stale signature' });
    expect(await verifySignature('k', header, body, 1_699_999_699)).toEqual({ ok: false, error: 'stale signature' });
    // A wrong signature is invalid even when also stale.
    expect(await verifySignature('other', header, body, 1_800_000_000)).toEqual({ ok: false, error: 'invalid signature' });
  });
  it('parses the header strictly', () => {
    const v1 = 'a'.repeat(64);
    expect(parseSignatureHeader(`t=5,v1=${v1}`)).toEqual({ t: 5, v1: [v1] });
    expect(parseSignatureHeader(` t=5 , v0=zz , v1=${v1} `)).toEqual({ t: 5, v1: [v1] });
    for (const bad of [undefined, null, '', 't=5', `v1=${v1}`, `t=-5,v1=${v1}`, `t=5,v1=${v1.toUpperCase()}`, `t=5,v1=${v1},x`, `t=5,t=6,v1=${v1}`]) {
      expect(parseSignatureHeader(bad), String(bad)).toBeNull();
    }
  });
});

describe('configuration of the hosted build', () => {
  const OWN = { SERVICE_API_KEY: 'a-long-random-legacy-key', SERVICE_SESSION_SECRET: 's'.repeat(32) };
  const cfg = (env: Record<string, string> = {}) => loadConfig({ ...OWN, ...env }, '/tmp').config;
  it('defaults', () => {
    const c = cfg();
    expect({
      hosted: c.hosted,
      planFreeRepos: c.planFreeRepos,
      planFreeMembers: c.planFreeMembers,
      billingCheckoutUrl: c.billingCheckoutUrl,
      billingWebhookSecret: c.billingWebhookSecret,
      billingUpgradeUrl: c.billingUpgradeUrl,
      dashboardUrl: c.dashboardUrl,
      adminEmails: c.adminEmails,
    }).toEqual({
      hosted: false,
      planFreeRepos: 3,
      planFreeMembers: 5,
      billingCheckoutUrl: undefined,
      billingWebhookSecret: undefined,
      billingUpgradeUrl: 'http://localhost:5173/billing',
      dashboardUrl: 'http://localhost:5173',
      adminEmails: [],
    });
  });
  it('SERVICE_HOSTED: 1, true or yes', () => {
    for (const v of ['1', 'true', 'YES', ' yes ']) expect(cfg({ SERVICE_HOSTED: v }).hosted, v).toBe(true);
    for (const v of ['0', 'false', 'no', '', 'on']) expect(cfg({ SERVICE_HOSTED: v }).hosted, v).toBe(false);
  });
  it('caps: integers above zero, else the default, silently', () => {
    expect(cfg({ SERVICE_PLAN_FREE_REPOS: '10', SERVICE_PLAN_FREE_MEMBERS: ' 20 ' })).toMatchObject({ planFreeRepos: 10, planFreeMembers: 20 });
    for (const v of ['0', '-1', '1.5', 'x', '']) {
      expect(cfg({ SERVICE_PLAN_FREE_REPOS: v, SERVICE_PLAN_FREE_MEMBERS: v })).toMatchObject({ planFreeRepos: 3, planFreeMembers: 5 });
    }
  });
  it('URLs, secret and admins', () => {
    const c = cfg({
      SERVICE_BILLING_CHECKOUT_URL: 'https://pay.example/c?x=1',
      SERVICE_BILLING_WEBHOOK_SECRET: ' s e c ',
      SERVICE_DASHBOARD_URL: 'https://app.example//',
      SERVICE_ADMIN_EMAILS: ' Root@Example.com,,ops@example.com ,root@example.com',
    });
    expect(c).toMatchObject({
      billingCheckoutUrl: 'https://pay.example/c?x=1',
      billingWebhookSecret: ' s e c ',
      dashboardUrl: 'https://app.example',
      billingUpgradeUrl: 'https://app.example/billing',
      adminEmails: ['root@example.com', 'ops@example.com'],
    });
    expect(cfg({ SERVICE_BILLING_UPGRADE_URL: 'https://up.example/go' }).billingUpgradeUrl).toBe('https://up.example/go');
    expect(cfg({ SERVICE_BILLING_WEBHOOK_SECRET: '   ' }).billingWebhookSecret).toBeUndefined();
    for (const name of ['SERVICE_BILLING_CHECKOUT_URL', 'SERVICE_BILLING_UPGRADE_URL', 'SERVICE_DASHBOARD_URL']) {
      expect(() => cfg({ [name]: 'not a url' }), name).toThrow(name);
      expect(() => cfg({ [name]: 'ftp://x.example' }), name).toThrow(name);
    }
  });
});
