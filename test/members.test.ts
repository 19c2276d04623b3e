import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { ManualClock } from '../lib/util/clock.ts';
import type { QuotaPolicy } from '../lib/usecases/quota.ts';
import { unlimitedQuota } from '../lib/usecases/quota.ts';
import { gitIn } from './helpers/env.ts';
import { signIn, startIdpTestServer, type IdpTestServer, type SignedIn } from './helpers/idp.ts';

/** User, key, PAT and request ids are UUID v4. */
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let srv: IdpTestServer;
let clock: ManualClock;
let alice: SignedIn;
let bob: SignedIn;
let carol: SignedIn;
const tokens: string[] = [];

const api = (path: string, token: string | undefined, init: RequestInit & { json?: unknown } = {}) => srv.api(path, { ...init, token });
const mint = async (repo: string, token: string, label?: string) => {
  const r = await api(`/v1/repos/${repo}/invite-keys`, token, { method: 'POST', json: label === undefined ? {} : { label } });
  const body = await r.json();
  if (body.token) tokens.push(body.token);
  return { status: r.status, body, headers: r.headers };
};
const join_ = async (token: string | undefined, key: unknown) => {
  const r = await api('/v1/repos/join', token, { method: 'POST', json: { key } });
  return { status: r.status, body: await r.json() };
};

beforeAll(async () => {
  clock = new ManualClock(Date.UTC(2026, 10, 1, 9, 0, 0));
  srv = await startIdpTestServer({ clock });
  alice = await signIn(srv, { sub: 'a', email: 'alice@example.test', name: 'Alice' });
  bob = await signIn(srv, { sub: 'b', email: 'bob@example.test', name: 'Bob' });
  carol = await signIn(srv, { sub: 'c', email: 'carol@example.test', name: 'Carol' });
  expect((await api('/v1/repos', alice.token, { method: 'POST', json: { id: 'proj' } })).status).toBe(201);
});
afterAll(async () => srv?.stop());

describe('invite keys', () => {
  it('an owner mints a kri_ key shown once, expiring seven days later', async () => {
    const { status, body, headers } = await mint('proj', alice.token, 'for bob');
    expect(status).toBe(201);
    const now = Math.floor(clock.now() / 1000);
    expect(body).toEqual({
      key: { id: expect.stringMatching(UUID_V4), label: 'for bob', created_at: now, expires_at: now + 7 * 86400 },
      token: expect.stringMatching(/^kri_[A-Za-z0-9_-]{32}$/),
    });
    expect(headers.get('cache-control')).toBe('no-store');
    const list = await (await api('/v1/repos/proj/invite-keys', alice.token)).json();
    expect(list.keys[0]).toEqual(body.key);
    expect(JSON.stringify(list)).not.toContain(body.token);
  });

  it('redeeming makes a member; re-joining is idempotent and never demotes an owner', async () => {
    const { body } = await mint('proj', alice.token);
    expect(body.key.label).toBe('');
    expect(await join_(bob.token, body.token)).toEqual({ status: 200, body: { repo_id: 'proj', role: 'member' } });
    expect(await join_(bob.token, body.token)).toEqual({ status: 200, body: { repo_id: 'proj', role: 'member' } });
    expect(await join_(alice.token, body.token)).toEqual({ status: 200, body: { repo_id: 'proj', role: 'owner' } });
    const members = await (await api('/v1/repos/proj/members', bob.token)).json();
    expect(members).toEqual({
      members: [
        { user_id: alice.user.id, email: 'alice@example.test', role: 'owner', added_at: Math.floor(clock.now() / 1000) },
        { user_id: bob.user.id, email: 'bob@example.test', role: 'member', added_at: Math.floor(clock.now() / 1000) },
      ],
    });
  });

  it('refuses bad, unknown, revoked and expired keys with their statuses', async () => {
    expect(await join_(carol.token, undefined)).toEqual({ status: 400, body: { error: 'key required', code: 'key_required' } });
    expect(await join_(carol.token, '')).toEqual({ status: 400, body: { error: 'key required', code: 'key_required' } });
    expect(await join_(carol.token, 42)).toEqual({ status: 400, body: { error: 'key required', code: 'key_required' } });
    const bad = await api('/v1/repos/join', carol.token, { method: 'POST', body: '{"key":', headers: { 'content-type': 'application/json' } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'invalid JSON body', code: 'invalid_json' });
    expect(await join_(carol.token, 'kri_nope')).toEqual({ status: 404, body: { error: 'invite key not recognized', code: 'invite_key_not_recognized' } });

    const revoked = await mint('proj', alice.token, 'to revoke');
    expect((await api(`/v1/repos/proj/invite-keys/${revoked.body.key.id}`, alice.token, { method: 'DELETE' })).status).toBe(204);
    expect(await join_(carol.token, revoked.body.token)).toEqual({ status: 404, body: { error: 'invite key not recognized', code: 'invite_key_not_recognized' } });
    const again = await api(`/v1/repos/proj/invite-keys/${revoked.body.key.id}`, alice.token, { method: 'DELETE' });
    expect(again.status).toBe(404);
    expect(await again.json()).toEqual({ error: 'invite key not found', code: 'invite_key_not_found' });
    // Revoking takes the key id, never the token.
    const byToken = await api(`/v1/repos/proj/invite-keys/${revoked.body.token}`, alice.token, { method: 'DELETE' });
    expect(byToken.status).toBe(404);

    const old = await mint('proj', alice.token, 'old');
    clock.advance(7 * 86400 * 1000);
    expect(await join_(carol.token, old.body.token)).toEqual({ status: 410, body: { error: 'invite key expired', code: 'invite_key_expired' } });
    const keys = (await (await api('/v1/repos/proj/invite-keys', alice.token)).json()).keys;
    expect(keys.map((k: { label: string }) => k.label)).toEqual(['old', '', 'for bob']);
    expect(keys.every((k: { expires_at: number }) => k.expires_at <= Math.floor(clock.now() / 1000))).toBe(true);
    expect(await (await api('/v1/repos/proj/members', alice.token)).json()).toMatchObject({ members: [{ email: 'alice@example.test' }, { email: 'bob@example.test' }] });
  });

  it('another repository’s key id is not found here', async () => {
    await api('/v1/repos', carol.token, { method: 'POST', json: { id: 'carols' } });
    const theirs = await mint('carols', carol.token, 'c');
    const r = await api(`/v1/repos/proj/invite-keys/${theirs.body.key.id}`, alice.token, { method: 'DELETE' });
    expect(r.status).toBe(404);
    expect(await r.json()).toEqual({ error: 'invite key not found', code: 'invite_key_not_found' });
    expect((await (await api('/v1/repos/carols/invite-keys', carol.token)).json()).keys).toHaveLength(1);
  });

  it('keys are owner-only; members and non-members are refused', async () => {
    const refusals: Array<[string, string, string, number, string, string]> = [
      ['POST', '/v1/repos/proj/invite-keys', bob.token, 403, 'only an owner can manage invite keys', 'owner_only_invites'],
      ['GET', '/v1/repos/proj/invite-keys', bob.token, 403, 'only an owner can manage invite keys', 'owner_only_invites'],
      ['DELETE', '/v1/repos/proj/invite-keys/x', bob.token, 403, 'only an owner can manage invite keys', 'owner_only_invites'],
      ['DELETE', `/v1/repos/proj/members/${alice.user.id}`, bob.token, 403, 'only an owner can remove members', 'owner_only_remove'],
      ['POST', '/v1/repos/proj/invite-keys', carol.token, 403, 'not a member of this repo', 'not_a_member'],
      ['GET', '/v1/repos/proj/members', carol.token, 403, 'not a member of this repo', 'not_a_member'],
      ['GET', '/v1/repos/ghost/members', carol.token, 403, 'not a member of this repo', 'not_a_member'],
    ];
    for (const [method, path, token, status, error, code] of refusals) {
      const r = await api(path, token, { method, ...(method === 'POST' ? { json: {} } : {}) });
      expect(r.status, `${method} ${path}`).toBe(status);
      expect(await r.json()).toEqual({ error, code });
    }
  });
});

describe('the legacy key', () => {
  it('may list and revoke keys and remove members, but not mint or redeem', async () => {
    const m = await api('/v1/repos/proj/invite-keys', undefined, { method: 'POST', json: {} });
    expect(m.status).toBe(403);
    expect(await m.json()).toEqual({ error: 'user session required', code: 'user_session_required' });
    const j = await api('/v1/repos/join', undefined, { method: 'POST', json: { key: 'kri_x' } });
    expect(j.status).toBe(403);
    expect(await j.json()).toEqual({ error: 'user session required', code: 'user_session_required' });
    expect((await api('/v1/repos/proj/invite-keys', undefined)).status).toBe(200);
    const k = await mint('proj', alice.token, 'legacy revokes');
    expect((await api(`/v1/repos/proj/invite-keys/${k.body.key.id}`, undefined, { method: 'DELETE' })).status).toBe(204);
    const missing = await api('/v1/repos/ghost/invite-keys', undefined);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 'repo not found', code: 'repo_not_found' });
  });
});

describe('removing members', () => {
  it('takes effect on the very next request; past commits keep their author', async () => {
    const push = await api('/v1/repos/proj/sync/push', bob.token, { method: 'POST', json: { files: [{ path: 'bob.md', content: 'by bob' }] } });
    expect(push.status).toBe(200);
    const absent = await api(`/v1/repos/proj/members/${carol.user.id}`, alice.token, { method: 'DELETE' });
    expect(absent.status).toBe(404);
    expect(await absent.json()).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
    const last = await api(`/v1/repos/proj/members/${alice.user.id}`, alice.token, { method: 'DELETE' });
    expect(last.status).toBe(409);
    expect(await last.json()).toEqual({ error: "can't remove the last owner", code: 'last_owner' });

    const removed = await api(`/v1/repos/proj/members/${bob.user.id}`, alice.token, { method: 'DELETE' });
    expect(removed.status).toBe(204);
    expect(await removed.text()).toBe('');
    const after = await api('/v1/repos/proj/sync/pull', bob.token);
    expect(after.status).toBe(403);
    expect(await after.json()).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
    expect(gitIn(join(srv.dataRoot, 'repos', 'proj.git'), 'log', '-1', '--format=%an <%ae>', 'main').trim()).toBe('Bob <bob@example.test>');
    expect((await (await api('/v1/repos', bob.token)).json()).repos).toEqual([]);
    // Removal by the legacy key, and the owner stays an owner throughout.
    const k = await mint('proj', alice.token);
    await join_(carol.token, k.body.token);
    expect((await api(`/v1/repos/proj/members/${carol.user.id}`, undefined, { method: 'DELETE' })).status).toBe(204);
    expect((await (await api('/v1/repos/proj/members', alice.token)).json()).members.map((m: { email: string; role: string }) => [m.email, m.role])).toEqual([['alice@example.test', 'owner']]);
  });
});

describe('changing roles', () => {
  const setRole = async (repo: string, token: string, userId: string, role: string) => {
    const r = await api(`/v1/repos/${repo}/members/${userId}/role`, token, { method: 'POST', json: { role } });
    return { status: r.status, body: await r.json() };
  };
  const roles = async (repo: string, token: string) =>
    (await (await api(`/v1/repos/${repo}/members`, token)).json()).members.map((m: { email: string; role: string }) => [m.email, m.role]);

  it('a member asking: 403 only an owner can change roles, and nothing changed', async () => {
    expect((await api('/v1/repos', alice.token, { method: 'POST', json: { id: 'roles-member' } })).status).toBe(201);
    const k = await mint('roles-member', alice.token);
    expect((await join_(bob.token, k.body.token)).status).toBe(200);
    for (const [userId, role] of [[bob.user.id, 'owner'], [alice.user.id, 'member']]) {
      expect(await setRole('roles-member', bob.token, userId!, role!)).toEqual({ status: 403, body: { error: 'only an owner can change roles', code: 'owner_only_roles' } });
    }
    expect(await roles('roles-member', alice.token)).toEqual([['alice@example.test', 'owner'], ['bob@example.test', 'member']]);
  });

  it('the last owner demoting themselves: 409 can\'t remove the last owner, and still the owner', async () => {
    expect((await api('/v1/repos', alice.token, { method: 'POST', json: { id: 'roles-last' } })).status).toBe(201);
    const k = await mint('roles-last', alice.token);
    expect((await join_(bob.token, k.body.token)).status).toBe(200);
    expect(await setRole('roles-last', alice.token, alice.user.id, 'member')).toEqual({ status: 409, body: { error: "can't remove the last owner", code: 'last_owner' } });
    expect(await roles('roles-last', alice.token)).toEqual([['alice@example.test', 'owner'], ['bob@example.test', 'member']]);
  });
});

describe('the quota seam', () => {
  it('a refusal answers 402 with its body and leaves nothing behind', async () => {
    // Caps whose condition never holds.
    const refusing: QuotaPolicy = {
      repoCreate: () => ({
        when: { sql: '0' },
        refusal: { code: 'quota_repos', message: 'repository limit reached', limit: 1, upgradeUrl: 'https://billing.example/upgrade' },
      }),
      join: () => ({
        when: { sql: '0' },
        refusal: { code: 'quota_members', message: 'member limit reached', limit: 3, upgradeUrl: 'https://billing.example/upgrade' },
      }),
      promote: () => ({
        when: { sql: '0' },
        refusal: { code: 'quota_repos', message: "repository limit reached for the new owner's plan", limit: 1, upgradeUrl: 'https://billing.example/upgrade' },
      }),
    };
    const k = await mint('proj', alice.token);
    // The activity feed's `member` rows: a refused change records none (the row goes in with the change).
    const memberRows = async () => (await srv.deps.activity.list('proj', 500, 0, ['member'])).events;
    const rowsBefore = await memberRows();
    srv.deps.quota = refusing;
    try {
      const attempts: Array<[string, string, unknown]> = [
        ['/v1/repos', 'POST', { id: 'capped1' }],
        ['/v1/repos/capped2', 'POST', undefined],
        ['/v1/repos/capped3/sync/push', 'POST', { files: [{ path: 'a.md', content: 'a' }] }],
      ];
      for (const [path, method, json] of attempts) {
        const r = await api(path, carol.token, { method, json });
        expect(r.status, path).toBe(402);
        expect(await r.json()).toEqual({ error: 'repository limit reached', code: 'quota_repos', limit: 1, upgrade_url: 'https://billing.example/upgrade' });
      }
      for (const id of ['capped1', 'capped2', 'capped3']) expect(existsSync(join(srv.dataRoot, 'repos', `${id}.git`))).toBe(false);
      expect(await join_(carol.token, k.body.token)).toEqual({
        status: 402,
        // The joiner cannot lift the owners' cap: the body names whom to ask.
        body: { error: 'member limit reached', code: 'quota_members', limit: 3, upgrade_url: 'https://billing.example/upgrade', owners: ['alice@example.test'] },
      });
      expect(await srv.deps.members.roleOf('proj', carol.user.id)).toBeNull();
      // Re-joins never count: an existing member passes the cap.
      expect(await join_(alice.token, k.body.token)).toEqual({ status: 200, body: { repo_id: 'proj', role: 'owner' } });
      // A promotion asks the cap too (a role already held is no promotion).
      await srv.deps.members.add('proj', carol.user.id, 'member');
      const promote = (who: SignedIn) => api(`/v1/repos/proj/members/${who.user.id}/role`, alice.token, { method: 'POST', json: { role: 'owner' } });
      const refusedPromotion = await promote(carol);
      expect([refusedPromotion.status, await refusedPromotion.json()]).toEqual([
        402,
        { error: "repository limit reached for the new owner's plan", code: 'quota_repos', limit: 1, upgrade_url: 'https://billing.example/upgrade' },
      ]);
      expect(await srv.deps.members.roleOf('proj', carol.user.id)).toBe('member');
      expect((await promote(alice)).status).toBe(200);
      expect(await memberRows()).toEqual(rowsBefore);
      await srv.deps.members.remove('proj', carol.user.id);
    } finally {
      srv.deps.quota = unlimitedQuota;
    }
  });
});

describe('secrets at rest', () => {
  it('the database holds no invite token', async () => {
    expect(tokens.length).toBeGreaterThan(5);
    srv.deps.db.exec('PRAGMA wal_checkpoint(FULL)');
    const bytes = ['service.db', 'service.db-wal'].filter((f) => existsSync(join(srv.dataRoot, f))).map((f) => readFileSync(join(srv.dataRoot, f)).toString('latin1')).join('');
    for (const t of tokens) expect(bytes.includes(t)).toBe(false);
    expect(bytes.includes('kri_')).toBe(false);
  });
});
