import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { gitIn } from './helpers/env.ts';
import { signIn, startIdpTestServer, type IdpTestServer, type SignedIn } from './helpers/idp.ts';

let srv: IdpTestServer;
let alice: SignedIn;
let bob: SignedIn;
const gitdir = (id: string) => join(srv.dataRoot, 'repos', `${id}.git`);
const push = (repo: string, token: string, body: unknown, headers: Record<string, string> = {}) =>
  srv.api(`/v1/repos/${repo}/sync/push`, { method: 'POST', token, json: body, headers });
const activity = async (repo: string, token: string, q = '') => (await srv.api(`/v1/repos/${repo}/activity${q}`, { token })).json();

beforeAll(async () => {
  srv = await startIdpTestServer();
  alice = await signIn(srv, { sub: 'alice-1', email: 'Alice@Example.test', name: 'Alice Liddell' });
  bob = await signIn(srv, { sub: 'bob-1', email: 'bob@example.test', name: 'Bob' });
});
afterAll(async () => srv?.stop());

describe('creating repositories as a user', () => {
  it('POST /v1/repos makes the creator owner; a second create is 409; bad ids are 400', async () => {
    const r = await srv.api('/v1/repos', { method: 'POST', token: alice.token, json: { id: 'team' } });
    expect(r.status).toBe(201);
    expect(await r.json()).toEqual({ id: 'team', role: 'owner' });
    for (const token of [alice.token, bob.token]) {
      const again = await srv.api('/v1/repos', { method: 'POST', token, json: { id: 'team' } });
      expect(again.status).toBe(409);
      expect(await again.json()).toEqual({ error: 'repo already exists', code: 'repo_exists' });
    }
    for (const id of ['-x', '_x', 'a.b', 'a/b', '', 'a'.repeat(65), 'ü']) {
      const bad = await srv.api('/v1/repos', { method: 'POST', token: alice.token, json: { id } });
      expect(bad.status, id).toBe(400);
      expect(await bad.json()).toEqual({ error: 'id must match [A-Za-z0-9][A-Za-z0-9_-]{0,63}', code: 'invalid_new_repo_id' });
    }
    const wrongType = await srv.api('/v1/repos', { method: 'POST', token: alice.token, json: { id: 5 } });
    expect(wrongType.status).toBe(400);
    expect(await wrongType.json()).toEqual({ error: 'invalid request: id: expected string', code: 'invalid_request' });
    expect((await srv.api('/v1/repos', { method: 'POST', token: alice.token, json: { id: 'A'.repeat(64) } })).status).toBe(201);
  });

  it('an ownerless repository made after the first user is not up for grabs: 409, legacy create 403', async () => {
    expect((await srv.api('/v1/repos/orphan', { method: 'POST' })).status).toBe(201); // legacy key: no owner
    for (const token of [bob.token, alice.token]) {
      const r = await srv.api('/v1/repos', { method: 'POST', token, json: { id: 'orphan' } });
      expect({ status: r.status, body: await r.json() }).toEqual({ status: 409, body: { error: 'repo already exists', code: 'repo_exists' } });
      const legacy = await srv.api('/v1/repos/orphan', { method: 'POST', token });
      expect({ status: legacy.status, body: await legacy.json() }).toEqual({ status: 403, body: { error: 'not a member of this repo', code: 'not_a_member' } });
    }
    expect(await srv.deps.members.list('orphan')).toEqual([]);
  });

  it('the legacy route gives a user ownership only of a repository it creates', async () => {
    const r = await srv.api('/v1/repos/bobs.repo', { method: 'POST', token: bob.token });
    expect(r.status).toBe(201);
    expect(await r.json()).toEqual({ repo_id: 'bobsrepo' });
    expect((await srv.api('/v1/repos/bobsrepo', { method: 'POST', token: bob.token })).status).toBe(201);
    const stolen = await srv.api('/v1/repos/bobsrepo', { method: 'POST', token: alice.token });
    expect(stolen.status).toBe(403);
    expect(await stolen.json()).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
    const members = await srv.deps.members.list('bobsrepo');
    expect(members.map((m) => [m.email, m.role])).toEqual([['bob@example.test', 'owner']]);
  });

  it('lists only the caller’s repositories, with role, sorted', async () => {
    const a = await (await srv.api('/v1/repos', { token: alice.token })).json();
    expect(a.repos.map((r: { id: string; role: string }) => [r.id, r.role])).toEqual([['A'.repeat(64), 'owner'], ['team', 'owner']]);
    expect(a.repos[1]).toEqual({ id: 'team', page_count: 0, role: 'owner' });
    const b = await (await srv.api('/v1/repos', { token: bob.token })).json();
    expect(b.repos.map((r: { id: string; role: string }) => [r.id, r.role])).toEqual([['bobsrepo', 'owner']]);
  });
});

describe('membership on repo-scoped routes', () => {
  it('a non-member gets 403 whether or not the repository exists', async () => {
    for (const repo of ['team', 'does-not-exist']) {
      for (const path of ['pages', 'pages/a.md', 'sync/pull', 'timeline', 'history/a.md', 'activity']) {
        const r = await srv.api(`/v1/repos/${repo}/${path}`, { token: bob.token });
        expect(r.status, `${repo}/${path}`).toBe(403);
        expect(await r.json()).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
      }
    }
    const p = await push('team', bob.token, { files: [{ path: 'x.md', content: 'x' }] });
    expect(p.status).toBe(403);
    expect(await p.json()).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
    expect(gitIn(gitdir('team'), 'rev-list', '--all').trim()).toBe('');
  });

  it('a first push to a new id creates it with the pusher as owner, authored from the account', async () => {
    const r = await push('fresh', alice.token, { author_name: 'Mallory', author_email: 'mallory@evil.test', files: [{ path: 'a.md', content: 'A' }] });
    expect(r.status).toBe(200);
    expect(gitIn(gitdir('fresh'), 'log', '-1', '--format=%an|%ae', 'main').trim()).toBe('Alice Liddell|alice@example.test');
    expect((await srv.deps.members.list('fresh')).map((m) => [m.email, m.role])).toEqual([['alice@example.test', 'owner']]);
    const other = await push('fresh', bob.token, { files: [{ path: 'b.md', content: 'B' }] });
    expect(other.status).toBe(403);
    // Once a member, Bob may push and pull.
    await srv.deps.members.add('fresh', bob.user.id, 'member');
    expect((await push('fresh', bob.token, { files: [{ path: 'b.md', content: 'B' }] })).status).toBe(200);
    expect((await srv.api('/v1/repos/fresh/sync/pull', { token: bob.token })).status).toBe(200);
  });
});

describe('activity feed', () => {
  it('records pushes that committed and pulls that received pages, with their details', async () => {
    const r1 = await push('feed', alice.token, { files: [{ path: 'z.md', content: '1' }, { path: 'a.md', content: '1' }] });
    const head1 = (await r1.json()).new_head;
    // All-conflict push: nothing recorded. Unchanged push: nothing recorded.
    expect((await push('feed', alice.token, { files: [{ path: 'z.md', content: '2', parent_sha: '0000000' }] })).status).toBe(409);
    expect((await push('feed', alice.token, { files: [{ path: 'z.md', content: '1' }] })).status).toBe(200);
    // A pull with pages and an announced client; an up-to-date poll; a pull without a client name.
    await srv.api('/v1/repos/feed/sync/pull', { token: alice.token, headers: { 'X-Service-Client': 'kr-cli' } });
    await srv.api(`/v1/repos/feed/sync/pull?since=${head1}`, { token: alice.token, headers: { 'X-Service-Client': 'kr-cli' } });
    await srv.api('/v1/repos/feed/sync/pull', { token: alice.token });
    // Deletions alone are not "pages received".
    const deletion = (await (await push('feed', alice.token, { files: [{ path: 'a.md', delete: true }] })).json()).new_head;
    await srv.api(`/v1/repos/feed/sync/pull?since=${head1}`, { token: alice.token });
    // Legacy actions are never recorded.
    await srv.api('/v1/repos/feed/sync/pull');

    const feed = await activity('feed', alice.token);
    expect(feed.total).toBe(4);
    expect(feed.events).toEqual([
      { user_id: alice.user.id, email: 'alice@example.test', action: 'push', detail: { paths: ['a.md'], message: 'push' }, created_at: expect.any(Number), sha: deletion },
      { user_id: alice.user.id, email: 'alice@example.test', action: 'pull', created_at: expect.any(Number) },
      { user_id: alice.user.id, email: 'alice@example.test', action: 'pull', detail: { client: 'kr-cli' }, created_at: expect.any(Number) },
      { user_id: alice.user.id, email: 'alice@example.test', action: 'push', detail: { paths: ['z.md', 'a.md'], message: 'push' }, created_at: expect.any(Number), sha: head1 },
    ]);
    const page = await activity('feed', alice.token, '?limit=2&offset=1');
    expect(page.events.map((e: { action: string }) => e.action)).toEqual(['pull', 'pull']);
    expect(page.total).toBe(4);
    expect((await activity('feed', alice.token, '?limit=0')).events).toHaveLength(4);
    expect((await activity('feed', alice.token, '?limit=abc&offset=-1')).events).toHaveLength(4);
  });

  it('keeps at most 50 paths in a push event, the first ones in push order', async () => {
    const files = Array.from({ length: 60 }, (_, i) => ({ path: `p/${String(59 - i).padStart(2, '0')}.md`, content: `${i}` }));
    expect((await push('wide', alice.token, { files })).status).toBe(200);
    const feed = await activity('wide', alice.token);
    expect(feed.events[0].detail.paths).toEqual(files.slice(0, 50).map((f) => f.path));
  });

  it("carries the commit's subject line as the push's message, cut to 500 characters", async () => {
    const files = [{ path: 'm.md', content: 'm' }];
    await push('said', alice.token, { message: 'Decide on storage\n\nLonger body, not in the feed.', files });
    expect((await activity('said', alice.token)).events[0].detail).toEqual({ paths: ['m.md'], message: 'Decide on storage' });
    // 600 code points, a fifth of them outside the BMP (two UTF-16 units each): 499 kept and an ellipsis.
    const long = '😀abcd'.repeat(120);
    await push('said', alice.token, { message: long, files: [{ path: 'm.md', content: 'n' }] });
    const message = (await activity('said', alice.token)).events[0].detail.message as string;
    expect([...message]).toHaveLength(500);
    expect(message).toBe(`${[...long].slice(0, 499).join('')}…`);
    // Exactly 500 code points in more than 500 UTF-16 units: kept whole.
    const exact = '😀abcd'.repeat(100);
    await push('said', alice.token, { message: exact, files: [{ path: 'm.md', content: 'o' }] });
    expect((await activity('said', alice.token)).events[0].detail.message).toBe(exact);
  });

  it('keeps the newest 1000 events per repository', async () => {
    await push('busy', alice.token, { files: [{ path: 'first.md', content: 'x' }] });
    for (let i = 0; i < 1000; i++) {
      await srv.deps.activity.record('busy', { userId: bob.user.id, email: 'bob@example.test' }, 'pull', { client: `seed-${i}` });
    }
    expect((await activity('busy', alice.token)).total).toBe(1000);
    await push('busy', alice.token, { files: [{ path: 'last.md', content: 'y' }] });
    const feed = await activity('busy', alice.token, '?limit=1000');
    expect(feed.total).toBe(1000);
    expect(feed.events).toHaveLength(500); // a request is clamped to 500
    expect(feed.events[0].detail).toEqual({ paths: ['last.md'], message: 'push' });
    const tail = await activity('busy', alice.token, '?limit=500&offset=500');
    expect(tail.events[499].detail).toEqual({ client: 'seed-1' });
    expect(tail.events.some((e: { detail?: { paths?: string[] } }) => e.detail?.paths?.[0] === 'first.md')).toBe(false);
    expect(await activity('busy', alice.token, '?offset=1000')).toEqual({ events: [], total: 1000 });
  });
});

describe('a crash between creating a repository and recording its owner', () => {
  it('leaves the creator, recorded in the repository itself, able to claim it; no one else', async () => {
    // The state such a crash leaves: the repository exists (with its creator in its config), no owner row.
    expect(await srv.deps.repos.create('half-made', bob.user.id)).toBe(true);
    expect(gitIn(gitdir('half-made'), 'config', 'kr.creator').trim()).toBe(bob.user.id);
    expect(await srv.deps.members.list('half-made')).toEqual([]);
    const other = await push('half-made', alice.token, { files: [{ path: 'a.md', content: 'a' }] });
    expect(other.status).toBe(403);
    expect(await other.json()).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
    const retry = await push('half-made', bob.token, { files: [{ path: 'a.md', content: 'a' }] });
    expect(retry.status).toBe(200);
    expect((await srv.deps.members.list('half-made')).map((m) => [m.email, m.role])).toEqual([['bob@example.test', 'owner']]);
    // A repository created under the legacy key records no creator and stays claimable only by POST /v1/repos.
    expect((await srv.api('/v1/repos/legacy-made', { method: 'POST' })).status).toBe(201);
    expect(await srv.deps.repos.git.creatorOf('legacy-made')).toBeNull();
  });
});
