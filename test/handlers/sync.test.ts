import { afterEach, describe, expect, it } from 'vitest';
import syncPush from '../../functions/sync/push.ts';
import syncPull from '../../functions/sync/pull.ts';
import { ManualClock } from '../../lib/util/clock.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const text = async (m: MountedHandler, repo: string, path: string) => {
  const page = await m.deps.repos.page(repo, path);
  return page && new TextDecoder().decode(page.content);
};

describe('POST /v1/repos/:id/sync/push (functions/sync/push.ts)', () => {
  it("a user's first push creates the repository, makes them owner, and commits every file at once", async () => {
    h = await mountHandler(syncPush);
    const alice = await h.user('alice@example.com', { name: 'Alice' });
    const res = await alice.request('/v1/repos/notes/sync/push', {
      method: 'POST',
      json: { author_name: 'ignored', files: [{ path: 'a.md', content: '# A\n' }, { path: 'd/b.md', content: 'b' }] },
    });
    expect(res.status).toBe(200);
    const head = (await h.deps.repos.head('notes'))!;
    expect(await res.json()).toEqual({
      new_head: head.sha,
      pushed: [
        { path: 'a.md', sha: head.sha },
        { path: 'd/b.md', sha: head.sha },
      ],
      conflicts: [],
    });
    expect(head).toMatchObject({ author: 'Alice', email: 'alice@example.com', message: 'push' });
    expect(await h.deps.members.roleOf('notes', alice.id)).toBe('owner');
    expect(await text(h, 'notes', 'd/b.md')).toBe('b');
    const { events } = await h.deps.activity.list('notes', 10, 0);
    expect(events).toEqual([
      { user_id: alice.id, email: 'alice@example.com', action: 'push', detail: { paths: ['a.md', 'd/b.md'], message: 'push' }, created_at: events[0]!.created_at, sha: head.sha },
    ]);
  });

  it('a stale parent_sha is a 409 conflict with the current and ancestor content; the rest is committed', async () => {
    h = await mountHandler(syncPush, { clock: new ManualClock() });
    const v1 = await h.commit('notes', { 'a.md': 'one', 'b.md': 'b' });
    const v2 = await h.commit('notes', { 'a.md': 'two' });
    const res = await h.legacy.request('/v1/repos/notes/sync/push', {
      method: 'POST',
      json: {
        message: 'edit',
        files: [
          { path: 'a.md', content: 'mine', parent_sha: v1.slice(0, 12) },
          { path: 'b.md', content: 'b' },
          { path: 'c.md', content: 'c' },
        ],
      },
    });
    expect(res.status).toBe(409);
    const head = (await h.deps.repos.head('notes'))!;
    expect(await res.json()).toEqual({
      new_head: head.sha,
      pushed: [
        { path: 'b.md', sha: v1, unchanged: true },
        { path: 'c.md', sha: head.sha },
      ],
      conflicts: [
        { path: 'a.md', current_sha: v2, current_content: b64('two'), expected_parent_sha: v1.slice(0, 12), ancestor_content: b64('one') },
      ],
    });
    expect(head).toMatchObject({ author: 'unknown', email: 'unknown@service.local', message: 'edit' });
    expect(await text(h, 'notes', 'a.md')).toBe('two');
  });

  it('one bad path refuses the whole push with 400 and writes nothing, not even the repository', async () => {
    h = await mountHandler(syncPush);
    const res = await h.legacy.request('/v1/repos/notes/sync/push', {
      method: 'POST',
      json: { files: [{ path: 'ok.md', content: 'x' }, { path: 'x/../y.md', content: 'y' }] },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'invalid page path: x/../y.md', code: 'invalid_page_path' });
    expect(await h.deps.repos.exists('notes')).toBe(false);
    const badSha = await h.legacy.request('/v1/repos/notes/sync/push', {
      method: 'POST',
      json: { files: [{ path: 'a.md', content: 'x', parent_sha: 'zz' }] },
    });
    expect(badSha.status).toBe(400);
    expect(await badSha.json()).toEqual({ error: 'invalid parent_sha: zz', code: 'invalid_parent_sha' });
  });

  it('a non-member of an existing repository gets 403 before the body is read', async () => {
    h = await mountHandler(syncPush);
    const bob = await h.user('bob@example.com');
    await h.commit('notes', { 'a.md': 'a' });
    const res = await bob.request('/v1/repos/notes/sync/push', { method: 'POST', body: 'not json' });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
  });

  it('a body over SERVICE_MAX_BODY_BYTES is 413', async () => {
    h = await mountHandler(syncPush, { env: { SERVICE_MAX_BODY_BYTES: '100' } });
    const res = await h.legacy.request('/v1/repos/notes/sync/push', {
      method: 'POST',
      json: { files: [{ path: 'a.md', content: 'x'.repeat(200) }] },
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: 'request body too large', code: 'body_too_large' });
    expect(await h.deps.repos.exists('notes')).toBe(false);
  });
});

describe('GET /v1/repos/:id/sync/pull (functions/sync/pull.ts)', () => {
  it('without since: every page at head; records a pull with the announced client', async () => {
    h = await mountHandler(syncPull);
    const alice = await h.user('alice@example.com');
    await h.deps.members.add('notes', alice.id, 'member');
    const v1 = await h.commit('notes', { 'a.md': 'a', 'b.md': 'b' });
    const v2 = await h.commit('notes', { 'b.md': 'b2' });
    const res = await alice.request('/v1/repos/notes/sync/pull', { headers: { 'x-service-client': 'kr-cli' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      new_head: v2,
      files: [
        { path: 'a.md', content: 'a', sha: v1 },
        { path: 'b.md', content: 'b2', sha: v2 },
      ],
      deleted: [],
    });
    const { events } = await h.deps.activity.list('notes', 10, 0);
    expect(events.map((e) => [e.action, e.detail])).toEqual([['pull', { client: 'kr-cli' }]]);
  });

  it('since a commit: what changed and what was deleted; since head: nothing', async () => {
    h = await mountHandler(syncPull);
    const v1 = await h.commit('notes', { 'a.md': 'a', 'b.md': 'b' });
    const v2 = await h.commit('notes', { 'a.md': 'a2', 'b.md': null, 'c.md': 'c' });
    const since = await h.legacy.request(`/v1/repos/notes/sync/pull?since=${v1.slice(0, 8)}`);
    expect(since.status).toBe(200);
    expect(await since.json()).toEqual({
      new_head: v2,
      files: [
        { path: 'a.md', content: 'a2', sha: v2 },
        { path: 'c.md', content: 'c', sha: v2 },
      ],
      deleted: ['b.md'],
    });
    const atHead = await h.legacy.request(`/v1/repos/notes/sync/pull?since=${v2}`);
    expect(await atHead.json()).toEqual({ new_head: v2, files: [], deleted: [] });
  });

  it('an empty repository: new_head "" and empty lists; an unknown since: 400', async () => {
    h = await mountHandler(syncPull);
    await h.deps.repos.create('empty');
    const empty = await h.legacy.request('/v1/repos/empty/sync/pull');
    expect(empty.status).toBe(200);
    expect(await empty.json()).toEqual({ new_head: '', files: [], deleted: [] });
    await h.commit('notes', { 'a.md': 'a' });
    const unknown = await h.legacy.request('/v1/repos/notes/sync/pull?since=deadbeef');
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toEqual({ error: 'unknown sha: deadbeef', code: 'unknown_sha' });
  });
});
