import { afterEach, describe, expect, it } from 'vitest';
import pagesList from '../../functions/pages/list.ts';
import pagesRead from '../../functions/pages/read.ts';
import { ManualClock } from '../../lib/util/clock.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('GET /v1/repos/:id/pages/<path> (functions/pages/read.ts)', () => {
  // The example of docs/testing.md "Testing a handler in isolation", kept here so that it keeps working.
  it('serves a page at head (docs/testing.md example)', async () => {
    const h = await mountHandler(pagesRead); // real libSQL file and git repositories in a temp dir
    const sha = await h.commit('notes', { 'a.md': '# A\n' }); // creates the repository: one commit
    const alice = await h.user('alice@example.com'); // a user row and a real session token
    await h.deps.members.add('notes', alice.id, 'member');
    const res = await alice.request('/v1/repos/notes/pages/a.md'); // app.request(): no server, no port
    expect(res.status).toBe(200);
    expect(res.headers.get('x-page-sha')).toBe(sha);
    expect(await res.text()).toBe('# A\n');
    await h.close();
  });

  it('answers the bytes at head with the last commit in X-Page-SHA', async () => {
    h = await mountHandler(pagesRead);
    const first = await h.commit('notes', { 'docs/a.md': '# A\n\nbody\n', 'b.md': 'b' });
    await h.commit('notes', { 'b.md': 'b2' });
    const res = await h.legacy.request('/v1/repos/notes/pages/docs/a.md');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
    expect(res.headers.get('x-page-sha')).toBe(first);
    expect(await res.text()).toBe('# A\n\nbody\n');
  });

  it('?at=<sha> answers the page as it was at that commit, with the last commit at or before it that touched it', async () => {
    h = await mountHandler(pagesRead);
    const first = await h.commit('notes', { 'b.md': 'b' });
    const second = await h.commit('notes', { 'a.md': 'a1' });
    const third = await h.commit('notes', { 'b.md': 'b2' });
    await h.commit('notes', { 'a.md': 'a2' });
    const read = async (q: string) => {
      const res = await h!.legacy.request(`/v1/repos/notes/pages/a.md${q}`);
      return [res.status, res.headers.get('x-page-sha'), await res.text()];
    };
    expect(await read(`?at=${second}`)).toEqual([200, second, 'a1']);
    // A commit that did not touch the page: the page as that commit left it.
    expect(await read(`?at=${third}`)).toEqual([200, second, 'a1']);
    expect(await read(`?at=${third.slice(0, 12)}`)).toEqual([200, second, 'a1']);
    expect((await read('?at='))[2]).toBe('a2');
    expect(await read(`?at=${first}`)).toEqual([404, null, JSON.stringify({ error: 'page not found', code: 'page_not_found' })]);
    expect(await read(`?at=${'f'.repeat(40)}`)).toEqual([400, null, JSON.stringify({ error: `unknown sha: ${'f'.repeat(40)}`, code: 'unknown_sha' })]);
    expect(await read('?at=zz')).toEqual([400, null, JSON.stringify({ error: 'unknown sha: zz', code: 'unknown_sha' })]);
  });

  it('a member reads; a non-member gets 403 whether or not the repository exists', async () => {
    h = await mountHandler(pagesRead);
    const alice = await h.user('alice@example.com');
    const bob = await h.user('bob@example.com');
    await h.commit('notes', { 'a.md': 'hello' });
    await h.deps.members.add('notes', alice.id, 'member');
    expect(await (await alice.request('/v1/repos/notes/pages/a.md')).text()).toBe('hello');
    for (const repo of ['notes', 'missing']) {
      const res = await bob.request(`/v1/repos/${repo}/pages/a.md`);
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
    }
  });

  it('404 page not found, 404 repo not found, 400 on a bad path', async () => {
    h = await mountHandler(pagesRead);
    await h.commit('notes', { 'a.md': 'a' });
    const page = await h.legacy.request('/v1/repos/notes/pages/nope.md');
    expect(page.status).toBe(404);
    expect(await page.json()).toEqual({ error: 'page not found', code: 'page_not_found' });
    const repo = await h.legacy.request('/v1/repos/missing/pages/a.md');
    expect(repo.status).toBe(404);
    expect(await repo.json()).toEqual({ error: 'repo not found', code: 'repo_not_found' });
    const bad = await h.legacy.request('/v1/repos/notes/pages/.git/config');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'invalid page path: .git/config', code: 'invalid_page_path' });
  });
});

describe('GET /v1/repos/:id/pages (functions/pages/list.ts)', () => {
  it('lists every page at head, sorted by path, with the last commit that touched it', async () => {
    const clock = new ManualClock();
    h = await mountHandler(pagesList, { clock });
    const alice = await h.user('alice@example.com');
    await h.deps.members.add('notes', alice.id, 'member');
    const first = await h.commit('notes', { 'z.md': 'z', 'a/b.md': 'b' }, { message: 'first\n\nbody' });
    clock.advance(60_000);
    const second = await h.commit('notes', { 'z.md': 'z2' }, { author: { name: 'Zed', email: 'zed@example.com' }, message: 'second' });
    const res = await alice.request('/v1/repos/notes/pages');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      pages: [
        { path: 'a/b.md', sha: first, author: 'Test', email: 'test@example.com', time: '2026-01-01T00:00:00Z', message: 'first' },
        { path: 'z.md', sha: second, author: 'Zed', email: 'zed@example.com', time: '2026-01-01T00:01:00Z', message: 'second' },
      ],
    });
  });

  it('an empty repository has no pages; a missing one is 404 for the legacy key', async () => {
    h = await mountHandler(pagesList);
    await h.deps.repos.create('empty');
    const empty = await h.legacy.request('/v1/repos/empty/pages');
    expect(empty.status).toBe(200);
    expect(await empty.json()).toEqual({ pages: [] });
    const missing = await h.legacy.request('/v1/repos/missing/pages');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 'repo not found', code: 'repo_not_found' });
  });
});
