import { afterEach, describe, expect, it } from 'vitest';
import historyPage from '../../functions/history/page.ts';
import historyTimeline from '../../functions/history/timeline.ts';
import { ManualClock } from '../../lib/util/clock.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const commit = (sha: string, time: string, message: string) => ({ sha, author: 'Test', email: 'test@example.com', time, message });

/** Three commits a minute apart: a.md+b.md, then b.md, then a.md. */
async function threeCommits(m: MountedHandler, clock: ManualClock): Promise<[string, string, string]> {
  const c1 = await m.commit('notes', { 'a.md': 'a1', 'b.md': 'b1' }, { message: 'one' });
  clock.advance(60_000);
  const c2 = await m.commit('notes', { 'b.md': 'b2' }, { message: 'two' });
  clock.advance(60_000);
  const c3 = await m.commit('notes', { 'a.md': null }, { message: 'three\n\nremoves a' });
  return [c1, c2, c3];
}

describe('GET /v1/repos/:id/history/<path> (functions/history/page.ts)', () => {
  it('the commits touching the page, newest first (a deletion included); limit caps them', async () => {
    const clock = new ManualClock();
    h = await mountHandler(historyPage, { clock });
    const [c1, , c3] = await threeCommits(h, clock);
    const res = await h.legacy.request('/v1/repos/notes/history/a.md');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      commits: [commit(c3, '2026-01-01T00:02:00Z', 'three'), commit(c1, '2026-01-01T00:00:00Z', 'one')],
    });
    const limited = await h.legacy.request('/v1/repos/notes/history/a.md?limit=1');
    expect(await limited.json()).toEqual({ commits: [commit(c3, '2026-01-01T00:02:00Z', 'three')] });
    const never = await h.legacy.request('/v1/repos/notes/history/zz.md');
    expect(never.status).toBe(200);
    expect(await never.json()).toEqual({ commits: [] });
  });

  it('a member reads it; a non-member gets 403; a missing repository 404 for the legacy key', async () => {
    h = await mountHandler(historyPage);
    const alice = await h.user('alice@example.com');
    const bob = await h.user('bob@example.com');
    const sha = await h.commit('notes', { 'a.md': 'a' });
    await h.deps.members.add('notes', alice.id, 'member');
    const ok = await alice.request('/v1/repos/notes/history/a.md');
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { commits: Array<{ sha: string }> }).commits.map((c) => c.sha)).toEqual([sha]);
    const denied = await bob.request('/v1/repos/notes/history/a.md');
    expect(denied.status).toBe(403);
    expect(await denied.json()).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
    const missing = await h.legacy.request('/v1/repos/missing/history/a.md');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 'repo not found', code: 'repo_not_found' });
  });
});

describe('GET /v1/repos/:id/timeline (functions/history/timeline.ts)', () => {
  it('the newest commits with the paths each touched', async () => {
    const clock = new ManualClock();
    h = await mountHandler(historyTimeline, { clock });
    const [c1, c2, c3] = await threeCommits(h, clock);
    const res = await h.legacy.request('/v1/repos/notes/timeline');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      commits: [
        { ...commit(c3, '2026-01-01T00:02:00Z', 'three'), paths: ['a.md'] },
        { ...commit(c2, '2026-01-01T00:01:00Z', 'two'), paths: ['b.md'] },
        { ...commit(c1, '2026-01-01T00:00:00Z', 'one'), paths: ['a.md', 'b.md'] },
      ],
    });
    const two = await h.legacy.request('/v1/repos/notes/timeline?limit=2');
    expect(((await two.json()) as { commits: Array<{ sha: string }> }).commits.map((c) => c.sha)).toEqual([c3, c2]);
    const bad = await h.legacy.request('/v1/repos/notes/timeline?limit=-1');
    expect(((await bad.json()) as { commits: unknown[] }).commits).toHaveLength(3);
  });

  it('an empty repository has an empty timeline', async () => {
    h = await mountHandler(historyTimeline);
    await h.deps.repos.create('empty');
    const res = await h.legacy.request('/v1/repos/empty/timeline');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ commits: [] });
  });
});
