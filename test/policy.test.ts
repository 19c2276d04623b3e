import { describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import type { Identity } from '../lib/auth/identity.ts';
import { LEGACY } from '../lib/auth/identity.ts';
import type { Role } from '../lib/db/members.ts';
import { HttpError } from '../lib/core/errors.ts';
import { R } from '../lib/core/refusals.ts';
import { ADMIN_ACTIONS, REPO_SCOPED, authorize, authorizeUser, decide, type Action, type Decision } from '../lib/usecases/policy.ts';
import type { AppEnv } from '../lib/framework/route.ts';

/**
 * The whole decision table, written out from docs/concepts.md "Credentials" (the legacy key), "Members and
 * roles", docs/errors.md and docs/api.md's messages — independently of lib/usecases/policy.ts, which must agree cell by cell.
 * Columns: legacy key, owner, member, non-member (a real user without a row in the repository; for
 * account-scoped actions, any real user).
 */
type Who = 'legacy' | 'owner' | 'member' | 'nonMember';
const WHO: Who[] = ['legacy', 'owner', 'member', 'nonMember'];

const ok: Decision = { allow: true };
const sessionRequired: Decision = { allow: false, refusal: R.session_required };
const userRequired: Decision = { allow: false, refusal: R.user_session_required };
const notMember: Decision = { allow: false, refusal: R.not_a_member };
const ownerInvites: Decision = { allow: false, refusal: R.owner_only_invites };
const ownerRemove: Decision = { allow: false, refusal: R.owner_only_remove };
const adminOnly: Decision = { allow: false, refusal: R.admin_only };

const TABLE: Record<Action, Record<Who, Decision>> = {
  // Account-scoped: any real user; the legacy key has no user.
  'limits.read': { legacy: ok, owner: ok, member: ok, nonMember: ok },
  'me.read': { legacy: sessionRequired, owner: ok, member: ok, nonMember: ok },
  'pat.mint': { legacy: userRequired, owner: ok, member: ok, nonMember: ok },
  'pat.list': { legacy: userRequired, owner: ok, member: ok, nonMember: ok },
  'pat.revoke': { legacy: userRequired, owner: ok, member: ok, nonMember: ok },
  'repo.list': { legacy: ok, owner: ok, member: ok, nonMember: ok },
  'repo.create': { legacy: userRequired, owner: ok, member: ok, nonMember: ok },
  'repo.create.legacy': { legacy: ok, owner: ok, member: ok, nonMember: ok },
  'repo.join': { legacy: userRequired, owner: ok, member: ok, nonMember: ok },
  // Hosted build: a real user's own plan; admin actions only for SERVICE_ADMIN_EMAILS (none here: see below),
  // never the legacy key (admin means a named person).
  'billing.read': { legacy: userRequired, owner: ok, member: ok, nonMember: ok },
  'billing.checkout': { legacy: userRequired, owner: ok, member: ok, nonMember: ok },
  'admin.read': { legacy: adminOnly, owner: adminOnly, member: adminOnly, nonMember: adminOnly },
  'admin.write': { legacy: adminOnly, owner: adminOnly, member: adminOnly, nonMember: adminOnly },
  // Any member; the legacy key passes membership checks.
  'repo.read': { legacy: ok, owner: ok, member: ok, nonMember: notMember },
  'repo.push': { legacy: ok, owner: ok, member: ok, nonMember: notMember },
  'members.list': { legacy: ok, owner: ok, member: ok, nonMember: notMember },
  'activity.read': { legacy: ok, owner: ok, member: ok, nonMember: notMember },
  'events.read': { legacy: ok, owner: ok, member: ok, nonMember: notMember },
  'webhook.list': { legacy: ok, owner: ok, member: ok, nonMember: notMember },
  // Owners only; the legacy key passes ownership checks except for minting (needs a user).
  'invite.mint': { legacy: userRequired, owner: ok, member: ownerInvites, nonMember: notMember },
  'invite.list': { legacy: ok, owner: ok, member: ownerInvites, nonMember: notMember },
  'invite.revoke': { legacy: ok, owner: ok, member: ownerInvites, nonMember: notMember },
  'member.remove': { legacy: ok, owner: ok, member: ownerRemove, nonMember: notMember },
  'repo.export': { legacy: ok, owner: ok, member: { allow: false, refusal: R.owner_only_export }, nonMember: notMember },
  'repo.import': { legacy: ok, owner: ok, member: { allow: false, refusal: R.owner_only_import }, nonMember: notMember },
  'member.role': { legacy: ok, owner: ok, member: { allow: false, refusal: R.owner_only_roles }, nonMember: notMember },
  'repo.delete': { legacy: ok, owner: ok, member: { allow: false, refusal: R.owner_only_delete }, nonMember: notMember },
  'webhook.manage': {
    legacy: ok,
    owner: ok,
    member: { allow: false, refusal: R.owner_only_webhooks },
    nonMember: notMember,
  },
};
const ACTIONS = Object.keys(TABLE) as Action[];

const user = (via: 'session' | 'pat' = 'session'): Identity => ({
  kind: 'user',
  userId: 'u-1',
  email: 'u@example.com',
  name: 'U',
  via,
  ...(via === 'pat' ? { patId: 'p-1' } : {}),
});
const roleOf: Record<Who, Role | null> = { legacy: null, owner: 'owner', member: 'member', nonMember: null };

describe('decide(): the full table', () => {
  const cells = ACTIONS.flatMap((action) => WHO.map((who) => [action, who] as const));
  it.each(cells)('%s as %s', (action, who) => {
    const expected = TABLE[action][who];
    if (who === 'legacy') {
      expect(decide(LEGACY, action, null)).toEqual(expected);
      // The legacy key's decision never depends on a role.
      expect(decide(LEGACY, action, 'owner')).toEqual(expected);
      expect(decide(LEGACY, action, 'member')).toEqual(expected);
    } else {
      // Session and PAT identities are the same user: same decisions.
      expect(decide(user('session'), action, roleOf[who])).toEqual(expected);
      expect(decide(user('pat'), action, roleOf[who])).toEqual(expected);
    }
  });

  it('repository-scoped actions are exactly the member/owner rows', () => {
    expect([...REPO_SCOPED].sort()).toEqual(
      [
        'repo.read',
        'repo.push',
        'members.list',
        'activity.read',
        'events.read',
        'webhook.list',
        'invite.mint',
        'invite.list',
        'invite.revoke',
        'member.remove',
        'member.role',
        'repo.export',
        'repo.import',
        'repo.delete',
        'webhook.manage',
      ].sort(),
    );
  });

  it('account-scoped actions ignore the role argument for real users (an admin for the admin actions)', () => {
    for (const action of ACTIONS.filter((a) => !REPO_SCOPED.has(a))) {
      for (const role of ['owner', 'member', null] as const) expect(decide(user(), action, role, ['u@example.com'])).toEqual(ok);
    }
  });

  it('admin actions: exactly the users whose email is listed, ignoring case; never the legacy key', () => {
    expect([...ADMIN_ACTIONS].sort()).toEqual(['admin.read', 'admin.write']);
    for (const action of ADMIN_ACTIONS) {
      expect(decide(user(), action, null, ['u@example.com'])).toEqual(ok);
      expect(decide(user('pat'), action, null, ['other@example.com', 'u@example.com'])).toEqual(ok);
      // The list is stored lowercased (lib/framework/config.ts); a user's email with capitals still matches.
      expect(decide({ kind: 'user', userId: 'u-1', email: 'U@Example.COM', name: 'U', via: 'session' }, action, null, ['u@example.com'])).toEqual(ok);
      expect(decide(user(), action, null, ['other@example.com'])).toEqual(adminOnly);
      expect(decide(user(), action, null, [])).toEqual(adminOnly);
      expect(decide(user(), action)).toEqual(adminOnly);
      expect(decide(LEGACY, action, null, ['u@example.com'])).toEqual(adminOnly);
      // Admin actions do not make anyone an admin of anything else, nor the reverse.
      expect(decide(user(), 'billing.read', null, [])).toEqual(ok);
    }
  });
});

describe('authorize() / authorizeUser() in a handler', () => {
  function appFor(identity: Identity | undefined, run: (c: Parameters<typeof authorize>[0]) => unknown) {
    const app = new Hono<AppEnv>();
    app.get('/', (c) => {
      c.set('identity', identity);
      return c.json({ result: run(c) ?? null });
    });
    app.onError((e, c) => (e instanceof HttpError ? c.json(e.body(), e.status as 401) : c.json({ crash: String(e) }, 500)));
    return app;
  }
  const call = async (identity: Identity | undefined, run: (c: Parameters<typeof authorize>[0]) => unknown) => {
    const res = await appFor(identity, run).request('/');
    return { status: res.status, body: await res.json() };
  };

  it('throws the decision as an HttpError', async () => {
    expect(await call(LEGACY, (c) => void authorize(c, 'me.read'))).toEqual({ status: 401, body: { error: 'session required', code: 'session_required' } });
    expect(await call(LEGACY, (c) => void authorizeUser(c, 'pat.mint'))).toEqual({ status: 403, body: { error: 'user session required', code: 'user_session_required' } });
    expect(await call(LEGACY, (c) => authorize(c, 'repo.list').kind)).toEqual({ status: 200, body: { result: 'legacy' } });
    expect(await call(user(), (c) => authorizeUser(c, 'me.read').userId)).toEqual({ status: 200, body: { result: 'u-1' } });
  });

  it('answers 401 when no identity was resolved, and refuses repo-scoped actions', async () => {
    expect(await call(undefined, (c) => void authorize(c, 'me.read'))).toEqual({ status: 401, body: { error: 'missing authorization header', code: 'missing_authorization' } });
    // A repository-scoped action through authorize() is a programming error, not a decision: it throws a
    // plain Error (the app's 500), never an HttpError a caller could mistake for an answer.
    expect(await call(user(), (c) => void authorize(c, 'repo.read'))).toEqual({
      status: 500,
      body: { crash: 'Error: repo.read is repository-scoped: use authorizeRepo' },
    });
  });
});
