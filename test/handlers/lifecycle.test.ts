/**
 * A repository's lifecycle on the Node build, in isolation: changing a member's role
 * (functions/members/role.ts) and deleting a repository (functions/repos/delete.ts) — the refusals, the
 * atomicity under concurrency, the hosted build's caps, what a deletion leaves behind (nothing: rows,
 * directory, caches), a push in flight, and a deletion cut short by a failure or a crash. The HTTP cases
 * shared with the Workers build are test/lifecycle-cases.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, readdirSync } from 'node:fs';
import { rename } from 'node:fs/promises';
import { join } from 'node:path';
import membersRole from '../../functions/members/role.ts';
import membersList from '../../functions/members/list.ts';
import reposDelete from '../../functions/repos/delete.ts';
import reposCreate from '../../functions/repos/create.ts';
import syncPush from '../../functions/sync/push.ts';
import pagesLinks from '../../functions/pages/links.ts';
import searchRepo from '../../functions/search/repo.ts';
import invitesJoin from '../../functions/invites/join.ts';
import { billingOf } from '../../lib/hosted/billing.ts';
import { openNodeDeps } from '../../lib/runtime/node/server.ts';
import { memoryLogger } from '../../lib/framework/log.ts';
import { testConfig, fsck } from '../helpers/env.ts';
import { mountHandler, type MountedHandler, type TestUser } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const json = async (res: Response) => ({ status: res.status, body: res.status === 204 ? null : await res.json() });
const setRole = (who: { request: TestUser['request'] }, repo: string, userId: string, role: unknown) =>
  who.request(`/v1/repos/${repo}/members/${userId}/role`, { method: 'POST', json: { role } }).then(json);

/** `notes` owned by alice, with bob (member) and carol (member). */
async function team(m: MountedHandler): Promise<{ alice: TestUser; bob: TestUser; carol: TestUser }> {
  const alice = await m.user('alice@example.com');
  const bob = await m.user('bob@example.com');
  const carol = await m.user('carol@example.com');
  await m.deps.repos.create('notes');
  await m.deps.members.add('notes', alice.id, 'owner');
  await m.deps.members.add('notes', bob.id, 'member');
  await m.deps.members.add('notes', carol.id, 'member');
  return { alice, bob, carol };
}

const roles = async (m: MountedHandler, repo = 'notes') =>
  Object.fromEntries((await m.deps.members.list(repo)).map((r) => [r.email.split('@')[0], r.role]));

describe('POST /v1/repos/:id/members/:userId/role (functions/members/role.ts)', () => {
  it('an owner promotes and demotes: 200 {"user_id","email","role"}; the same role again changes nothing', async () => {
    h = await mountHandler(membersRole);
    const { alice, bob, carol } = await team(h);
    expect(await setRole(alice, 'notes', bob.id, 'owner')).toEqual({ status: 200, body: { user_id: bob.id, email: 'bob@example.com', role: 'owner' } });
    expect(await roles(h)).toEqual({ alice: 'owner', bob: 'owner', carol: 'member' });
    expect(await setRole(alice, 'notes', bob.id, 'owner')).toEqual({ status: 200, body: { user_id: bob.id, email: 'bob@example.com', role: 'owner' } });
    // The new owner may demote the one before (another owner remains).
    expect(await setRole(bob, 'notes', alice.id, 'member')).toEqual({ status: 200, body: { user_id: alice.id, email: 'alice@example.com', role: 'member' } });
    expect(await roles(h)).toEqual({ alice: 'member', bob: 'owner', carol: 'member' });
    // The legacy key passes the owner check.
    expect((await setRole(h.legacy, 'notes', carol.id, 'owner')).status).toBe(200);
    expect(await roles(h)).toEqual({ alice: 'member', bob: 'owner', carol: 'owner' });
  });

  it('refusals: the last owner (409), a target that is not a member (404), a bad role (400), a member or stranger calling (403)', async () => {
    h = await mountHandler([membersRole, membersList]);
    const { alice, bob } = await team(h);
    const dave = await h.user('dave@example.com');
    expect(await setRole(alice, 'notes', alice.id, 'member')).toEqual({ status: 409, body: { error: "can't remove the last owner", code: 'last_owner' } });
    expect(await setRole(h.legacy, 'notes', alice.id, 'member')).toEqual({ status: 409, body: { error: "can't remove the last owner", code: 'last_owner' } });
    expect(await setRole(alice, 'notes', dave.id, 'owner')).toEqual({ status: 404, body: { error: 'not a member of this repo', code: 'not_a_member' } });
    expect(await setRole(alice, 'notes', 'no-such-user', 'member')).toEqual({ status: 404, body: { error: 'not a member of this repo', code: 'not_a_member' } });
    for (const role of ['admin', 'Owner', '', 5, null, ['owner'], undefined]) {
      expect(await setRole(alice, 'notes', bob.id, role), JSON.stringify(role)).toEqual({ status: 400, body: { error: 'role must be owner or member', code: 'invalid_role' } });
    }
    const notJson = await alice.request(`/v1/repos/notes/members/${bob.id}/role`, { method: 'POST', body: '{', headers: { 'content-type': 'application/json' } });
    expect(await json(notJson)).toEqual({ status: 400, body: { error: 'invalid JSON body', code: 'invalid_json' } });
    expect(await setRole(bob, 'notes', bob.id, 'owner')).toEqual({ status: 403, body: { error: 'only an owner can change roles', code: 'owner_only_roles' } });
    expect(await setRole(dave, 'notes', bob.id, 'owner')).toEqual({ status: 403, body: { error: 'not a member of this repo', code: 'not_a_member' } });
    expect(await setRole(dave, 'nowhere', bob.id, 'owner')).toEqual({ status: 403, body: { error: 'not a member of this repo', code: 'not_a_member' } });
    expect(await setRole(h.legacy, 'nowhere', bob.id, 'owner')).toEqual({ status: 404, body: { error: 'repo not found', code: 'repo_not_found' } });
    expect(await roles(h)).toEqual({ alice: 'owner', bob: 'member', carol: 'member' });
  });

  it('atomic: owners demoting each other at once never leave the repository without an owner', async () => {
    h = await mountHandler(membersRole);
    const { alice, bob, carol } = await team(h);
    for (let round = 0; round < 10; round++) {
      await h.deps.members.setRole('notes', bob.id, 'owner');
      await h.deps.members.setRole('notes', carol.id, 'owner');
      await h.deps.members.setRole('notes', alice.id, 'owner');
      // Each demotes the next, all at once: at most two of three go through.
      const answers = await Promise.all([
        setRole(alice, 'notes', bob.id, 'member'),
        setRole(bob, 'notes', carol.id, 'member'),
        setRole(carol, 'notes', alice.id, 'member'),
      ]);
      const owners = Object.values(await roles(h)).filter((r) => r === 'owner');
      expect(owners.length, JSON.stringify(answers)).toBeGreaterThanOrEqual(1);
      // Every refusal is the last-owner one or (once its caller was demoted first) the owner check.
      for (const a of answers) {
        expect([200, 403, 409], JSON.stringify(a)).toContain(a.status);
        if (a.status === 409) expect(a.body).toEqual({ error: "can't remove the last owner", code: 'last_owner' });
        if (a.status === 403) expect(a.body).toEqual({ error: 'only an owner can change roles', code: 'owner_only_roles' });
      }
    }
    // Two owners demoting each other, the statement level: one of them stays.
    await h.deps.members.setRole('notes', alice.id, 'owner');
    await h.deps.members.setRole('notes', bob.id, 'owner');
    expect((await h.deps.members.setRole('notes', carol.id, 'member')).outcome).not.toBe('last_owner');
    expect(await roles(h)).toEqual({ alice: 'owner', bob: 'owner', carol: 'member' });
    const [a, b] = await Promise.all([h.deps.members.setRole('notes', bob.id, 'member'), h.deps.members.setRole('notes', alice.id, 'member')]);
    expect([a.outcome, b.outcome].sort()).toEqual(['changed', 'last_owner']);
    expect(Object.values(await roles(h)).filter((r) => r === 'owner')).toHaveLength(1);
  });

  it('hosted: promoting a user at their repository cap is 402 quota_repos (their plan, not the promoter\'s); subscribed, demoted or uncapped users pass', async () => {
    h = await mountHandler([membersRole, reposCreate], { env: { SERVICE_HOSTED: '1', SERVICE_PLAN_FREE_REPOS: '1' } });
    const { alice, bob, carol } = await team(h);
    // Bob owns a repository of his own: he is at the free plan's cap of one.
    expect((await bob.request('/v1/repos', { method: 'POST', json: { id: 'bobs' } })).status).toBe(201);
    expect(await setRole(alice, 'notes', bob.id, 'owner')).toEqual({
      status: 402,
      body: { error: "repository limit reached for the new owner's plan (1)", code: 'quota_repos', limit: 1, upgrade_url: 'http://localhost:5173/billing' },
    });
    expect(await roles(h)).toEqual({ alice: 'owner', bob: 'member', carol: 'member' });
    // Carol owns nothing: her promotion passes, and so does a demotion.
    expect((await setRole(alice, 'notes', alice.id, 'owner')).status).toBe(200);
    expect((await setRole(alice, 'notes', carol.id, 'owner')).status).toBe(200);
    expect((await setRole(alice, 'notes', alice.id, 'member')).status).toBe(200);
    // Subscribed, Bob has no cap.
    await billingOf(h.deps).setSubscribed(bob.id, true);
    expect((await setRole(h.legacy, 'notes', bob.id, 'owner')).status).toBe(200);
    expect(await roles(h)).toEqual({ alice: 'member', bob: 'owner', carol: 'owner' });
  });
});

const del = (who: { request: TestUser['request'] }, repo: string, confirm?: string) =>
  who.request(`/v1/repos/${repo}${confirm === undefined ? '' : `?confirm=${encodeURIComponent(confirm)}`}`, { method: 'DELETE' }).then(json);

/** Rows any table of the database holds for the repository. */
async function rowsOf(m: MountedHandler, repo: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const tables: Array<[string, string]> = [
    ['members', 'repo_id'],
    ['invite_keys', 'repo_id'],
    ['activity', 'repo_id'],
    ['git_commits', 'repo_id'],
    ['git_changes', 'repo_id'],
    ['git_head', 'repo_id'],
    ['page_links', 'repo_id'],
    ['page_link_sources', 'repo_id'],
    ['repo_registry', 'id'],
  ];
  for (const [t, col] of tables) {
    const n = Number((await m.deps.db.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${t} WHERE ${col} = ?`, [repo]))?.n ?? 0);
    if (n > 0) out[t] = n;
  }
  const keys = Number((await m.deps.db.get<{ n: number }>('SELECT COUNT(*) AS n FROM invite_key_exclusions'))?.n ?? 0);
  if (keys > 0) out.invite_key_exclusions = keys;
  return out;
}

describe('DELETE /v1/repos/:id?confirm=<id> (functions/repos/delete.ts)', () => {
  it('an owner deletes: 204, and nothing is left — directory, rows of every table, caches; the id can be created afresh', async () => {
    h = await mountHandler([reposDelete, reposCreate, syncPush, pagesLinks, searchRepo, invitesJoin]);
    const alice = await h.user('alice@example.com');
    const bob = await h.user('bob@example.com');
    expect((await alice.request('/v1/repos', { method: 'POST', json: { id: 'notes' } })).status).toBe(201);
    const push = await alice.request('/v1/repos/notes/sync/push', {
      method: 'POST',
      json: { files: [{ path: 'wiki/concepts/a.md', content: '---\ntitle: Apple\n---\n[[b]] secretword\n' }, { path: 'wiki/concepts/b.md', content: 'b' }] },
    });
    expect(push.status).toBe(200);
    expect((await alice.request('/v1/repos/notes/search?q=secretword')).status).toBe(200);
    const key = await h.deps.invites.mint('notes', alice.id, 'for bob');
    await h.deps.members.add('notes', bob.id, 'member');
    await h.deps.members.remove('notes', bob.id);
    const before = await rowsOf(h, 'notes');
    expect(Object.keys(before).sort()).toEqual(
      ['activity', 'git_changes', 'git_commits', 'git_head', 'invite_key_exclusions', 'invite_keys', 'members', 'page_link_sources', 'page_links'].sort(),
    );
    // The full-text rows live in the repository's own search file (lib/runtime/node/search-files.ts).
    const root = h.dataRoot;
    const searchFiles = () => readdirSync(join(root, 'search')).filter((f) => f.startsWith('notes.'));
    expect(searchFiles()).toContain('notes.db');

    expect(await del(alice, 'notes', 'notes')).toEqual({ status: 204, body: null });
    expect(await h.deps.repos.exists('notes')).toBe(false);
    expect(readdirSync(join(h.dataRoot, 'repos'))).toEqual([]);
    expect(await rowsOf(h, 'notes')).toEqual({});
    expect(searchFiles()).toEqual([]);
    expect(await del(alice, 'notes', 'notes')).toEqual({ status: 403, body: { error: 'not a member of this repo', code: 'not_a_member' } });

    // Created again, by someone else: a new, empty repository; nothing of the old one shows through.
    expect((await bob.request('/v1/repos', { method: 'POST', json: { id: 'notes' } })).status).toBe(201);
    expect(await h.deps.members.list('notes')).toEqual([expect.objectContaining({ email: 'bob@example.com', role: 'owner' })]);
    expect(await h.deps.repos.pages('notes')).toEqual([]);
    expect(await h.deps.repos.head('notes')).toBeNull();
    expect((await alice.request('/v1/repos/notes/links/wiki/concepts/a.md')).status).toBe(403);
    expect(await json(await bob.request('/v1/repos/notes/links/wiki/concepts/a.md'))).toEqual({ status: 404, body: { error: 'page not found', code: 'page_not_found' } });
    expect((await json(await bob.request('/v1/repos/notes/search?q=secretword'))).body).toEqual({ results: [], total: 0 });
    // The old invite key was deleted with the repository: it does not admit anyone to the new one.
    const carol = await h.user('carol@example.com');
    expect(await json(await carol.request('/v1/repos/join', { method: 'POST', json: { key: key.token } }))).toEqual({
      status: 404,
      body: { error: 'invite key not recognized', code: 'invite_key_not_recognized' },
    });
    fsck(join(h.dataRoot, 'repos', 'notes.git'));
  });

  it('refusals: confirm missing or different (400, nothing deleted), a member or stranger (403), a missing repository (404); the legacy key deletes', async () => {
    h = await mountHandler(reposDelete);
    const alice = await h.user('alice@example.com');
    const bob = await h.user('bob@example.com');
    const dave = await h.user('dave@example.com');
    await h.commit('notes', { 'a.md': 'a' });
    await h.deps.members.add('notes', alice.id, 'owner');
    await h.deps.members.add('notes', bob.id, 'member');
    const confirm = { status: 400, body: { error: 'confirm the deletion with ?confirm=<id>', code: 'confirm_required' } };
    expect(await del(alice, 'notes')).toEqual(confirm);
    expect(await del(alice, 'notes', '')).toEqual(confirm);
    expect(await del(alice, 'notes', 'Notes')).toEqual(confirm);
    expect(await del(alice, 'notes', 'other')).toEqual(confirm);
    expect(await del(bob, 'notes', 'notes')).toEqual({ status: 403, body: { error: 'only an owner can delete a repository', code: 'owner_only_delete' } });
    expect(await del(dave, 'notes', 'notes')).toEqual({ status: 403, body: { error: 'not a member of this repo', code: 'not_a_member' } });
    expect(await del(dave, 'nowhere', 'nowhere')).toEqual({ status: 403, body: { error: 'not a member of this repo', code: 'not_a_member' } });
    expect(await del(h.legacy, 'nowhere', 'nowhere')).toEqual({ status: 404, body: { error: 'repo not found', code: 'repo_not_found' } });
    expect(await h.deps.repos.pages('notes')).toHaveLength(1);
    // The id as the repository is named (stripped), confirmed the same way.
    expect(await del(h.legacy, 'no;tes', 'no;tes')).toEqual(confirm);
    expect(await del(h.legacy, 'no;tes', 'notes')).toEqual({ status: 204, body: null });
    expect(await h.deps.repos.exists('notes')).toBe(false);
    expect(await h.deps.members.list('notes')).toEqual([]);
  });

  it('hosted: the owner\'s repository count drops at once (a creation at the cap passes right after)', async () => {
    h = await mountHandler([reposDelete, reposCreate], { env: { SERVICE_HOSTED: '1', SERVICE_PLAN_FREE_REPOS: '1' } });
    const alice = await h.user('alice@example.com');
    expect((await alice.request('/v1/repos', { method: 'POST', json: { id: 'one' } })).status).toBe(201);
    expect((await alice.request('/v1/repos', { method: 'POST', json: { id: 'two' } })).status).toBe(402);
    expect(await del(alice, 'one', 'one')).toEqual({ status: 204, body: null });
    expect((await billingOf(h.deps).planUsage(alice.id)).reposOwned).toBe(0);
    expect((await alice.request('/v1/repos', { method: 'POST', json: { id: 'two' } })).status).toBe(201);
  });

  it('a push in flight holding the lock finishes first; a push that waited behind the deletion finds no repository and writes nothing', async () => {
    h = await mountHandler([reposDelete, syncPush]);
    await h.commit('notes', { 'a.md': 'a' });
    const git = h.deps.repos.git;
    // Someone holds the repository's write lock (a push being written).
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const holder = git.withLock('notes', async () => {
      entered();
      await held;
    });
    await inside;
    const deletion = del(h.legacy, 'notes', 'notes');
    // The deletion waits for the lock; a push queued behind it …
    while (!git.locks().some((l) => l.key === 'notes' && l.waiting >= 1)) await new Promise((r) => setTimeout(r, 5));
    const late = h.deps.repos.commitFiles('notes', [{ path: 'b.md', content: new TextEncoder().encode('b') }], { name: 'x', email: 'x@x' }, 'late');
    while (!git.locks().some((l) => l.key === 'notes' && l.waiting >= 2)) await new Promise((r) => setTimeout(r, 5));
    expect(await h.deps.repos.exists('notes')).toBe(true);
    release();
    await holder;
    expect(await deletion).toEqual({ status: 204, body: null });
    await expect(late).rejects.toThrow('repo not found: notes');
    expect(readdirSync(join(h.dataRoot, 'repos'))).toEqual([]);
    expect(await rowsOf(h, 'notes')).toEqual({});
  });

  it('a failed database batch puts the repository back; a crash after the rename is finished at the next start', async () => {
    h = await mountHandler(reposDelete);
    const alice = await h.user('alice@example.com');
    await h.commit('notes', { 'a.md': 'a' });
    await h.deps.members.add('notes', alice.id, 'owner');
    // The batch fails (the disk, say): the deletion is answered 500 and did nothing.
    const batch = h.deps.db.batch.bind(h.deps.db);
    h.deps.db.batch = async (stmts, opts) => {
      if (stmts.some((s) => s.sql.startsWith('DELETE FROM members WHERE repo_id'))) throw new Error('disk I/O error');
      return batch(stmts, opts);
    };
    expect((await del(alice, 'notes', 'notes')).status).toBe(500);
    h.deps.db.batch = batch;
    expect(await h.deps.repos.exists('notes')).toBe(true);
    expect((await h.deps.repos.pages('notes')).map((p) => p.path)).toEqual(['a.md']);
    expect(await h.deps.members.roleOf('notes', alice.id)).toBe('owner');
    fsck(join(h.dataRoot, 'repos', 'notes.git'));

    // A crash right after the rename: the directory is out of the way, the rows are still there.
    await rename(join(h.dataRoot, 'repos', 'notes.git'), join(h.dataRoot, 'repos', '.deleted-notes-abc123'));
    expect(Object.keys(await rowsOf(h, 'notes')).length).toBeGreaterThan(0);
    const again = await openNodeDeps(testConfig(h.dataRoot), { log: memoryLogger() });
    try {
      expect(readdirSync(join(h.dataRoot, 'repos'))).toEqual([]);
      expect(await again.members.list('notes')).toEqual([]);
      expect(await again.db.get("SELECT 1 AS x FROM git_commits WHERE repo_id = 'notes'")).toBeUndefined();
    } finally {
      await again.db.close();
    }
    expect(existsSync(join(h.dataRoot, 'repos', '.deleted-notes-abc123'))).toBe(false);
  });
});
