/**
 * Links between pages, role changes and repository deletion over HTTP, once for both builds:
 * test/lifecycle.test.ts runs these cases against the Node server and test/lifecycle-workers.test.ts against
 * the hosted build in workerd (the index and link rows in each repository's Durable Object, the accounts in
 * D1). Both targets run as the hosted build (SERVICE_HOSTED=1, two repositories on the free plan), so the
 * caps a promotion and a deletion touch are checked on both. Every answer is also checked against the
 * OpenAPI document by the target's client (test/helpers/targets.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdp, type IdpStandIn } from './helpers/idp.ts';
import { startTarget, type Target, type TargetKind } from './helpers/targets.ts';

type Init = RequestInit & { token?: string | null; json?: unknown };
interface User {
  token: string;
  id: string;
  email: string;
}

export const LIFECYCLE_ENV: Record<string, string> = {
  SERVICE_HOSTED: '1',
  SERVICE_PLAN_FREE_REPOS: '2',
  SERVICE_ADMIN_EMAILS: 'root@example.test',
  SERVICE_DASHBOARD_URL: 'https://app.example.test',
};
const UPGRADE_URL = 'https://app.example.test/billing';

export function lifecycleCases(kind: TargetKind): void {
  describe(`${kind}: links, roles and repository deletion`, () => {
    let t: Target;
    let idp: IdpStandIn;
    const users: Record<string, User> = {};

    const call = async (path: string, init: Init = {}) => {
      const r = await t.api(path, init);
      const text = await r.text();
      let body: any = text === '' ? null : text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON (a page's bytes)
      }
      return { status: r.status, body };
    };
    const push = async (repo: string, files: Array<{ path: string; content?: string; delete?: boolean }>, token?: string) => {
      const r = await call(`/v1/repos/${repo}/sync/push`, { method: 'POST', json: { files, message: 'lifecycle' }, token });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    };
    const links = (repo: string, path: string, token?: string) => call(`/v1/repos/${repo}/links/${path}`, { token });
    const setRole = (repo: string, who: User, role: unknown, as?: User) =>
      call(`/v1/repos/${repo}/members/${who.id}/role`, { method: 'POST', json: { role }, token: as?.token });
    const del = (repo: string, confirm: string | undefined, as?: User) =>
      call(`/v1/repos/${repo}${confirm === undefined ? '' : `?confirm=${encodeURIComponent(confirm)}`}`, { method: 'DELETE', token: as?.token });
    const roles = async (repo: string) =>
      Object.fromEntries(((await call(`/v1/repos/${repo}/members`)).body.members as Array<{ email: string; role: string }>).map((m) => [m.email.split('@')[0], m.role]));
    const create = async (id: string, as: User) => expect((await call('/v1/repos', { method: 'POST', json: { id }, token: as.token })).status).toBe(201);
    /** `who` joins `repo` through a key minted by `owner`; returns the key's token. */
    const invite = async (repo: string, owner: User, ...who: User[]) => {
      const key = await call(`/v1/repos/${repo}/invite-keys`, { method: 'POST', json: {}, token: owner.token });
      expect(key.status).toBe(201);
      for (const u of who) expect((await call('/v1/repos/join', { method: 'POST', json: { key: key.body.token }, token: u.token })).status).toBe(200);
      return key.body.token as string;
    };

    beforeAll(async () => {
      idp = await startIdp();
      t = await startTarget(kind, { ...LIFECYCLE_ENV, IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer });
      // Everyone signs in first (the very first user adopts ownerless repositories: there are none yet).
      for (const name of ['root', 'alice', 'bob', 'carol', 'dave', 'erin', 'frank']) {
        const idToken = await idp.signIdToken({ sub: `${name}-1`, email: `${name}@example.test`, name });
        const r = await call('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
        expect(r.status).toBe(200);
        users[name] = { token: r.body.access_token, id: r.body.user.id, email: r.body.user.email };
      }
    });
    afterAll(async () => {
      await t?.stop();
      await idp?.close();
    });

    it('links: both directions resolved against head, code ignored, kept current by every push', async () => {
      await push('kb', [
        {
          path: 'wiki/concepts/notes.md',
          content:
            '---\ntitle: Notes\n---\n## See\n[[postgres]] [[caching|the cache]] [[entities/postgres]] [[missing]] [r](../entities/redis.md#x)\n```\n[[fenced]]\n```\n`[[inline]]`\n',
        },
        { path: 'wiki/concepts/caching.md', content: '---\ntitle: Caching\n---\n[[notes]]\n' },
        { path: 'wiki/concepts/postgres.md', content: 'concept\n' },
        { path: 'wiki/entities/postgres.md', content: 'entity\n' },
        { path: 'wiki/entities/redis.md', content: '---\ntitle: Redis\n---\n[[notes]] [[caching]]\n' },
      ]);
      expect(await links('kb', 'wiki/concepts/notes.md')).toEqual({
        status: 200,
        body: {
          path: 'wiki/concepts/notes.md',
          outgoing: [
            { target: 'postgres', ambiguous: true },
            { target: 'caching', path: 'wiki/concepts/caching.md' },
            { target: 'entities/postgres', path: 'wiki/entities/postgres.md' },
            { target: 'missing' },
            { target: '../entities/redis.md', path: 'wiki/entities/redis.md' },
          ],
          incoming: [
            { path: 'wiki/concepts/caching.md', title: 'Caching' },
            { path: 'wiki/entities/redis.md', title: 'Redis' },
          ],
        },
      });
      // A page pushed later resolves the links written before it; a deleted one stops resolving them.
      await push('kb', [{ path: 'wiki/analyses/missing.md', content: 'now here' }, { path: 'wiki/concepts/postgres.md', delete: true }]);
      const after = await links('kb', 'wiki/concepts/notes.md');
      expect(after.body.outgoing[0]).toEqual({ target: 'postgres', path: 'wiki/entities/postgres.md' });
      expect(after.body.outgoing[3]).toEqual({ target: 'missing', path: 'wiki/analyses/missing.md' });
      expect((await links('kb', 'wiki/analyses/missing.md')).body).toEqual({
        path: 'wiki/analyses/missing.md',
        outgoing: [],
        incoming: [{ path: 'wiki/concepts/notes.md', title: 'Notes' }],
      });
      expect((await links('kb', 'wiki/entities/postgres.md')).body.incoming).toEqual([{ path: 'wiki/concepts/notes.md', title: 'Notes' }]);
      expect(await links('kb', 'wiki/concepts/postgres.md')).toEqual({ status: 404, body: { error: 'page not found', code: 'page_not_found' } });
      expect(await links('nokb', 'a.md')).toEqual({ status: 404, body: { error: 'repo not found', code: 'repo_not_found' } });
      expect(await links('kb', 'wiki/concepts/notes.md', users.dave!.token)).toEqual({ status: 403, body: { error: 'not a member of this repo', code: 'not_a_member' } });
    });

    it('links: repositories with the same paths never see each other\'s links', async () => {
      // Same paths in both; only twin-a's notes link to b (and its titles differ from twin-b's).
      await push('twin-a', [
        { path: 'wiki/concepts/a.md', content: '---\ntitle: A here\n---\n[[b]] [x](b.md)\n' },
        { path: 'wiki/concepts/b.md', content: 'b\n' },
      ]);
      await push('twin-b', [
        { path: 'wiki/concepts/a.md', content: '---\ntitle: A there\n---\nno links\n' },
        { path: 'wiki/concepts/b.md', content: 'b\n' },
      ]);
      expect((await links('twin-b', 'wiki/concepts/b.md')).body).toEqual({ path: 'wiki/concepts/b.md', outgoing: [], incoming: [] });
      expect((await links('twin-b', 'wiki/concepts/a.md')).body.outgoing).toEqual([]);
      expect((await links('twin-a', 'wiki/concepts/b.md')).body.incoming).toEqual([{ path: 'wiki/concepts/a.md', title: 'A here' }]);
    });

    it('roles: promote, demote, the refusals; the last owner stays', async () => {
      const { alice, bob, carol, dave } = users as Record<string, User>;
      await create('team', alice!);
      await invite('team', alice!, bob!, carol!);
      expect(await setRole('team', bob!, 'owner', alice)).toEqual({ status: 200, body: { user_id: bob!.id, email: 'bob@example.test', role: 'owner' } });
      expect(await setRole('team', alice!, 'member', bob)).toEqual({ status: 200, body: { user_id: alice!.id, email: 'alice@example.test', role: 'member' } });
      expect(await roles('team')).toEqual({ alice: 'member', bob: 'owner', carol: 'member' });
      expect(await setRole('team', bob!, 'member', bob)).toEqual({ status: 409, body: { error: "can't remove the last owner", code: 'last_owner' } });
      expect(await setRole('team', carol!, 'owner', alice)).toEqual({ status: 403, body: { error: 'only an owner can change roles', code: 'owner_only_roles' } });
      expect(await setRole('team', carol!, 'owner', dave)).toEqual({ status: 403, body: { error: 'not a member of this repo', code: 'not_a_member' } });
      expect(await setRole('team', dave!, 'owner', bob)).toEqual({ status: 404, body: { error: 'not a member of this repo', code: 'not_a_member' } });
      expect(await setRole('team', carol!, 'boss', bob)).toEqual({ status: 400, body: { error: 'role must be owner or member', code: 'invalid_role' } });
      expect(await setRole('team', carol!, undefined, bob)).toEqual({ status: 400, body: { error: 'role must be owner or member', code: 'invalid_role' } });
      expect(await setRole('ghost', carol!, 'owner')).toEqual({ status: 404, body: { error: 'repo not found', code: 'repo_not_found' } });
      expect((await setRole('team', alice!, 'owner')).status).toBe(200); // the legacy key
      expect(await roles('team')).toEqual({ alice: 'owner', bob: 'owner', carol: 'member' });
    });

    it('roles: two owners demoting each other at once leave one owner', async () => {
      const { alice, bob } = users as Record<string, User>;
      for (let round = 0; round < 5; round++) {
        expect((await setRole('team', alice!, 'owner')).status).toBe(200);
        expect((await setRole('team', bob!, 'owner')).status).toBe(200);
        const answers = await Promise.all([setRole('team', bob!, 'member', alice), setRole('team', alice!, 'member', bob)]);
        const statuses = answers.map((a) => a.status).sort();
        // One goes through; the other finds the last owner (409), or that its caller is no owner any more (403).
        expect([[200, 409], [200, 403]], JSON.stringify(answers)).toContainEqual(statuses);
        const owners = Object.values(await roles('team')).filter((r) => r === 'owner');
        expect(owners).toHaveLength(1);
      }
    });

    it('hosted: promoting a user who owns the free plan\'s repositories is 402 quota_repos until they subscribe', async () => {
      const { erin, frank, root } = users as Record<string, User>;
      await create('erin-1', erin!);
      await create('frank-1', frank!);
      await create('frank-2', frank!);
      await invite('erin-1', erin!, frank!);
      expect(await setRole('erin-1', frank!, 'owner', erin)).toEqual({
        status: 402,
        body: { error: "repository limit reached for the new owner's plan (2)", code: 'quota_repos', limit: 2, upgrade_url: UPGRADE_URL },
      });
      expect(await roles('erin-1')).toEqual({ erin: 'owner', frank: 'member' });
      expect((await call(`/v1/admin/users/${frank!.id}/subscription`, { method: 'POST', json: { subscribed: true }, token: root!.token })).status).toBe(204);
      expect((await setRole('erin-1', frank!, 'owner', erin)).status).toBe(200);
      expect((await call('/v1/billing', { token: frank!.token })).body.usage).toEqual({ repos_owned: 3 });
    });

    it('deletion: refusals first, then everything goes; the owner\'s count drops; the id is new again', async () => {
      const { alice, bob, carol, dave } = users as Record<string, User>;
      await create('doomed', dave!);
      const key = await invite('doomed', dave!, carol!);
      await push('doomed', [{ path: 'wiki/concepts/a.md', content: '---\ntitle: A\n---\n[[b]] zebracorn\n' }, { path: 'wiki/concepts/b.md', content: 'b' }], dave!.token);
      expect((await call('/v1/repos/doomed/search?q=zebracorn', { token: dave!.token })).body.total).toBe(1);
      // Export first: there is no undo.
      expect((await t.api('/v1/repos/doomed/export', { token: dave!.token })).status).toBe(200);
      expect((await call('/v1/billing', { token: dave!.token })).body.usage).toEqual({ repos_owned: 1 });

      const confirm = { status: 400, body: { error: 'confirm the deletion with ?confirm=<id>', code: 'confirm_required' } };
      expect(await del('doomed', undefined, dave)).toEqual(confirm);
      expect(await del('doomed', 'Doomed', dave)).toEqual(confirm);
      expect(await del('doomed', 'doomed', carol)).toEqual({ status: 403, body: { error: 'only an owner can delete a repository', code: 'owner_only_delete' } });
      expect(await del('doomed', 'doomed', alice)).toEqual({ status: 403, body: { error: 'not a member of this repo', code: 'not_a_member' } });
      expect(await del('ghost', 'ghost')).toEqual({ status: 404, body: { error: 'repo not found', code: 'repo_not_found' } });
      expect((await call('/v1/repos/doomed/pages', { token: dave!.token })).body.pages).toHaveLength(2);

      expect(await del('doomed', 'doomed', dave)).toEqual({ status: 204, body: null });
      expect((await call('/v1/billing', { token: dave!.token })).body.usage).toEqual({ repos_owned: 0 });
      expect((await call('/v1/repos', { token: dave!.token })).body.repos.map((r: { id: string }) => r.id)).not.toContain('doomed');
      expect((await call('/v1/repos')).body.repos.map((r: { id: string }) => r.id)).not.toContain('doomed');
      for (const path of ['/v1/repos/doomed/pages', '/v1/repos/doomed/members', '/v1/repos/doomed/activity', '/v1/repos/doomed/links/wiki/concepts/a.md']) {
        expect(await call(path), path).toEqual({ status: 404, body: { error: 'repo not found', code: 'repo_not_found' } });
        expect(await call(path, { token: dave!.token }), path).toEqual({ status: 403, body: { error: 'not a member of this repo', code: 'not_a_member' } });
      }
      expect(await del('doomed', 'doomed', dave)).toEqual({ status: 403, body: { error: 'not a member of this repo', code: 'not_a_member' } });
      expect(await del('doomed', 'doomed')).toEqual({ status: 404, body: { error: 'repo not found', code: 'repo_not_found' } });

      // The id is free: created again by someone else, it is a new, empty repository.
      await create('doomed', bob!);
      expect((await call('/v1/repos/doomed/pages', { token: bob!.token })).body).toEqual({ pages: [] });
      expect((await call('/v1/repos/doomed/members', { token: bob!.token })).body.members.map((m: { email: string }) => m.email)).toEqual(['bob@example.test']);
      expect((await call('/v1/repos/doomed/activity', { token: bob!.token })).body).toEqual({ events: [], total: 0 });
      expect((await call('/v1/repos/doomed/search?q=zebracorn', { token: bob!.token })).body).toEqual({ results: [], total: 0 });
      expect(await links('doomed', 'wiki/concepts/a.md', bob!.token)).toEqual({ status: 404, body: { error: 'page not found', code: 'page_not_found' } });
      expect(await call('/v1/repos/doomed/pages', { token: carol!.token })).toEqual({ status: 403, body: { error: 'not a member of this repo', code: 'not_a_member' } });
      expect(await call('/v1/repos/join', { method: 'POST', json: { key }, token: carol!.token })).toEqual({
        status: 404,
        body: { error: 'invite key not recognized', code: 'invite_key_not_recognized' },
      });
      // And it works as any repository does.
      await push('doomed', [{ path: 'wiki/concepts/c.md', content: '[[d]]' }, { path: 'wiki/concepts/d.md', content: 'd' }], bob!.token);
      expect((await links('doomed', 'wiki/concepts/d.md', bob!.token)).body.incoming).toEqual([{ path: 'wiki/concepts/c.md' }]);
      expect((await call('/v1/repos/doomed/pages', { token: bob!.token })).body.pages.map((p: { path: string }) => p.path)).toEqual([
        'wiki/concepts/c.md',
        'wiki/concepts/d.md',
      ]);
    });

    it('deletion under the legacy key, with reads racing it: no 5xx, and nothing of it comes back', async () => {
      await push('racy', [{ path: 'a.md', content: 'a' }]);
      const racing = [
        ...Array.from({ length: 4 }, (_, i) => call('/v1/repos/racy/pages/a.md').then((r) => ['read', i, r.status] as const)),
        del('racy', 'racy').then((r) => ['delete', 0, r.status] as const),
        ...Array.from({ length: 4 }, (_, i) => call('/v1/repos/racy/timeline').then((r) => ['timeline', i, r.status] as const)),
      ];
      const answers = await Promise.all(racing);
      for (const [what, , status] of answers) expect([200, 204, 404], `${what} ${status}`).toContain(status);
      expect(answers.find((a) => a[0] === 'delete')![2]).toBe(204);
      expect(await call('/v1/repos/racy/pages')).toEqual({ status: 404, body: { error: 'repo not found', code: 'repo_not_found' } });
      // The legacy creation makes it again: empty.
      expect((await call('/v1/repos/racy', { method: 'POST' })).status).toBe(201);
      expect((await call('/v1/repos/racy/pages')).body).toEqual({ pages: [] });
      expect((await call('/v1/repos/racy/timeline')).body).toEqual({ commits: [] });
    });

    it('activity: each membership change a user makes is one `member` row, listed only when asked for; the legacy key\'s are not recorded', async () => {
      const { root, carol, erin, dave } = users as Record<string, User>;
      await create('crew', root!);
      await push('crew', [{ path: 'a.md', content: 'a' }], root!.token);
      const feed = async (query: string) => {
        const r = await call(`/v1/repos/crew/activity${query}`, { token: root!.token });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        for (const e of r.body.events) expect(Number.isInteger(e.created_at)).toBe(true);
        return { events: r.body.events.map(({ created_at: _, ...e }: { created_at: number }) => e), total: r.body.total };
      };
      const before = await feed('');
      expect(before.total).toBe(1);
      expect(before.events.map((e: { action: string }) => e.action)).toEqual(['push']);

      // A join, then the same key again (nothing changes: no row).
      const key = await invite('crew', root!, carol!, erin!);
      expect((await call('/v1/repos/join', { method: 'POST', json: { key }, token: carol!.token })).body).toEqual({ repo_id: 'crew', role: 'member' });
      // A role change; giving the role held, and the refusals, change nothing.
      expect((await setRole('crew', carol!, 'owner', root)).status).toBe(200);
      expect((await setRole('crew', carol!, 'owner', root)).status).toBe(200);
      expect((await setRole('crew', dave!, 'owner', root)).status).toBe(404);
      expect((await setRole('crew', erin!, 'owner', erin)).status).toBe(403);
      // A removal by an owner; the refusals change nothing.
      expect((await call(`/v1/repos/crew/members/${erin!.id}`, { method: 'DELETE', token: carol!.token })).status).toBe(204);
      expect((await call(`/v1/repos/crew/members/${erin!.id}`, { method: 'DELETE', token: carol!.token })).status).toBe(404);
      // The legacy key's changes are made, never recorded.
      expect((await setRole('crew', carol!, 'member')).status).toBe(200);
      expect((await call(`/v1/repos/crew/members/${carol!.id}`, { method: 'DELETE' })).status).toBe(204);
      expect((await call(`/v1/repos/crew/members/${root!.id}`, { method: 'DELETE', token: root!.token })).status).toBe(409);
      expect(await roles('crew')).toEqual({ root: 'owner' });
      // Both removals marked the key as never readmitting them, the recorded one as the other.
      for (const u of [erin!, carol!]) {
        expect(await call('/v1/repos/join', { method: 'POST', json: { key }, token: u.token })).toEqual({
          status: 403,
          body: { error: 'removed from this repo; ask an owner for a new invite key', code: 'removed_from_repo' },
        });
      }

      const joined = (u: User) => ({ user_id: u.id, email: u.email, action: 'member', detail: { user_id: u.id, email: u.email, change: 'joined', role: 'member' } });
      const memberRows = [
        { user_id: carol!.id, email: carol!.email, action: 'member', detail: { user_id: erin!.id, email: erin!.email, change: 'removed' } },
        { user_id: root!.id, email: root!.email, action: 'member', detail: { user_id: carol!.id, email: carol!.email, change: 'role', role: 'owner' } },
        joined(erin!),
        joined(carol!),
      ];
      expect(await feed('?actions=member')).toEqual({ events: memberRows, total: 4 });
      // The feed without `actions` is what it was: the membership changes leave it and its total alone.
      expect(await feed('')).toEqual(before);
      expect(await feed('?actions=push,pull,import')).toEqual(before);
      const all = await feed('?actions=push,member,import&limit=2&offset=3');
      expect(all).toEqual({ events: [joined(carol!), before.events[0]], total: 5 });
    });

    if (kind === 'workers') {
      it('hosted: an id registered in D1 whose object was never told (a creation cut short between the two) is made on first use', async () => {
        await t.exec('INSERT INTO repo_registry (id, id_fold, creator, created_at) VALUES (?, ?, NULL, 0)', ['orphan', 'orphan']);
        expect(await call('/v1/repos/orphan/pages')).toEqual({ status: 200, body: { pages: [] } });
        await push('orphan', [{ path: 'a.md', content: 'a' }]);
        expect(await call('/v1/repos/orphan/pages/a.md')).toEqual({ status: 200, body: 'a' });
      });
    }
  });
}
