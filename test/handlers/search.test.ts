import { afterEach, describe, expect, it } from 'vitest';
import searchRepo from '../../functions/search/repo.ts';
import searchAll from '../../functions/search/all.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

type Body = { results: Array<{ repo_id: string; path: string; title?: string; type?: string; tags?: string[]; snippet: string; score: number; sha: string }>; total: number };

const page = (title: string, tags: string[], body: string) => `---\ntitle: ${title}\ntype: concept\ntags: [${tags.join(', ')}]\n---\n${body}\n`;

describe('GET /v1/repos/:id/search (functions/search/repo.ts)', () => {
  it('finds a page as soon as its push is answered, with title, type, tags, snippet, score and sha', async () => {
    h = await mountHandler(searchRepo);
    const sha = await h.commit('notes', { 'wiki/concepts/cache.md': page('Cache policy', ['perf', 'ops'], '## Eviction\nWe evict the least recently used entry.') });
    const res = await h.legacy.request('/v1/repos/notes/search?q=evict');
    expect(res.status).toBe(200);
    const body = (await res.json()) as Body;
    expect(body.total).toBe(1);
    expect(body.results).toEqual([
      {
        repo_id: 'notes',
        path: 'wiki/concepts/cache.md',
        title: 'Cache policy',
        type: 'concept',
        tags: ['perf', 'ops'],
        snippet: 'We «evict» the least recently used entry.',
        score: expect.any(Number),
        sha,
      },
    ]);
    expect(body.results[0]!.score).toBeGreaterThan(0);
    expect(Object.keys(body.results[0]!)).toEqual(['repo_id', 'path', 'title', 'type', 'tags', 'snippet', 'score', 'sha']);
  });

  it('type and tag filter exactly; limit and offset page through; total counts every match', async () => {
    h = await mountHandler(searchRepo);
    const files: Record<string, string> = {};
    for (let i = 0; i < 5; i++) files[`p${i}.md`] = page(`Page ${i}`, i % 2 ? ['odd'] : ['even', 'odd-ish'], `shared word ${i}`);
    files['raw/sessions/s1'] = '---\ntags: odd\n---\nshared word in a source';
    await h.commit('notes', files);
    const get = async (qs: string) => (await (await h!.legacy.request(`/v1/repos/notes/search?${qs}`)).json()) as Body;
    expect((await get('q=shared')).total).toBe(6);
    expect((await get('q=shared&tag=odd')).results.map((r) => r.path).sort()).toEqual(['p1.md', 'p3.md', 'raw/sessions/s1']);
    expect((await get('q=shared&tag=od')).total).toBe(0);
    expect((await get('q=shared&type=source')).results.map((r) => r.path)).toEqual(['raw/sessions/s1']);
    expect((await get('q=shared&type=Concept')).total).toBe(0);
    const first = await get('q=shared&limit=2');
    const second = await get('q=shared&limit=2&offset=2');
    expect([first.results.length, second.results.length, first.total, second.total]).toEqual([2, 2, 6, 6]);
    expect(new Set([...first.results, ...second.results].map((r) => r.path)).size).toBe(4);
    expect((await get('q=shared&limit=500')).results).toHaveLength(6); // clamped to 100, 6 exist
    expect((await get('q=shared&limit=abc')).results).toHaveLength(6); // default 20
    expect((await get('q=shared&offset=1000')).results).toEqual([]);
    expect((await get('q=shared&offset=1000')).total).toBe(6);
  });

  it('refuses what cannot be searched with 400 and a readable message', async () => {
    h = await mountHandler(searchRepo);
    await h.commit('notes', { 'a.md': 'hello world' });
    const cases: Array<[string, string, string]> = [
      ['', 'q required', 'q_required'],
      ['q=', 'q required', 'q_required'],
      ['q=%20%20', 'q required', 'q_required'],
      ['q=%22hello', 'invalid query: unbalanced quote', 'invalid_query'],
      ['q=*', 'invalid query: nothing to search for (only operators or punctuation)', 'invalid_query'],
      ['q=-hello', 'invalid query: only exclusions; add a word to search for', 'invalid_query'],
    ];
    for (const [qs, error, code] of cases) {
      const res = await h.legacy.request(`/v1/repos/notes/search?${qs}`);
      expect([res.status, await res.json()], qs).toEqual([400, { error, code }]);
    }
  });

  it('members only: a non-member gets 403 (before any 400), a missing repository 404', async () => {
    h = await mountHandler(searchRepo);
    const alice = await h.user('alice@example.com');
    const bob = await h.user('bob@example.com');
    await h.commit('notes', { 'a.md': 'hello world' });
    await h.deps.members.add('notes', alice.id, 'member');
    expect((await alice.request('/v1/repos/notes/search?q=hello')).status).toBe(200);
    for (const qs of ['q=hello', '']) {
      const denied = await bob.request(`/v1/repos/notes/search?${qs}`);
      expect([denied.status, await denied.json()]).toEqual([403, { error: 'not a member of this repo', code: 'not_a_member' }]);
    }
    const missing = await h.legacy.request('/v1/repos/missing/search?q=hello');
    expect([missing.status, await missing.json()]).toEqual([404, { error: 'repo not found', code: 'repo_not_found' }]);
  });
});

describe('GET /v1/search (functions/search/all.ts)', () => {
  it("a user searches the repositories they belong to, merged best first; the legacy key every repository", async () => {
    h = await mountHandler(searchAll);
    const alice = await h.user('alice@example.com');
    await h.commit('one', { 'a.md': '## Rollout\nplan', 'b.md': 'rollout in the body only' });
    await h.commit('two', { 'c.md': 'the rollout plan, body' });
    await h.commit('secret', { 'd.md': '## Rollout\nclassified' });
    await h.deps.members.add('one', alice.id, 'member');
    await h.deps.members.add('two', alice.id, 'owner');
    const mine = (await (await alice.request('/v1/search?q=rollout')).json()) as Body;
    expect(mine.total).toBe(3);
    expect(mine.results[0]).toMatchObject({ repo_id: 'one', path: 'a.md' });
    expect(mine.results.map((r) => `${r.repo_id}/${r.path}`).sort()).toEqual(['one/a.md', 'one/b.md', 'two/c.md']);
    const scores = mine.results.map((r) => r.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    const all = (await (await h.legacy.request('/v1/search?q=rollout')).json()) as Body;
    expect(all.total).toBe(4);
    expect(all.results.map((r) => r.repo_id)).toContain('secret');
    const paged = (await (await h.legacy.request('/v1/search?q=rollout&limit=1&offset=1')).json()) as Body;
    expect(paged.results).toEqual([all.results[1]]);
    const nobody = await h.user('nobody@example.com');
    expect(await (await nobody.request('/v1/search?q=rollout')).json()).toEqual({ results: [], total: 0 });
  });

  it('400 for a bad query, whoever asks; 401 without a credential', async () => {
    h = await mountHandler(searchAll);
    const alice = await h.user('alice@example.com');
    for (const caller of [alice, h.legacy]) {
      const res = await caller.request('/v1/search?q=%22');
      expect([res.status, await res.json()]).toEqual([400, { error: 'invalid query: unbalanced quote', code: 'invalid_query' }]);
    }
    expect((await h.request('/v1/search?q=x')).status).toBe(401);
  });
});
