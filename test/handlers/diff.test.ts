import { afterEach, describe, expect, it } from 'vitest';
import diffPage from '../../functions/diff/diff.ts';
import diffEvolution from '../../functions/diff/evolution.ts';
import { ManualClock } from '../../lib/util/clock.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const V1 = '---\ntitle: A\n---\nintro\n## Decision\nuse git\n## Context\nold\n';
const V2 = '---\ntitle: B\n---\nintro\n## Decision\nuse git\nand sql\n## Notes\nnew\n';

/** A repository `notes` whose a.md has two revisions, a minute apart. */
async function twoRevisions(m: MountedHandler, clock: ManualClock): Promise<{ v1: string; v2: string }> {
  const v1 = await m.commit('notes', { 'a.md': V1 }, { message: 'v1' });
  clock.advance(60_000);
  const v2 = await m.commit('notes', { 'a.md': V2, 'other.md': 'x' }, { message: 'v2' });
  return { v1, v2 };
}

const commit = (sha: string, time: string, message: string) => ({ sha, author: 'Test', email: 'test@example.com', time, message });

describe('GET /v1/repos/:id/diff/<path> (functions/diff/diff.ts)', () => {
  it('by default diffs head against the previous commit touching the page, section by section', async () => {
    const clock = new ManualClock();
    h = await mountHandler(diffPage, { clock });
    const { v1, v2 } = await twoRevisions(h, clock);
    const res = await h.legacy.request('/v1/repos/notes/diff/a.md');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      from_sha: v1,
      to_sha: v2,
      frontmatter: { changed: [{ field: 'title', from: 'A', to: 'B' }], added: [], removed: [] },
      preamble: { heading: '_preamble', status: 'unchanged', from: 'intro', to: 'intro', line_diff: '  intro' },
      sections: [
        { heading: '## Decision', status: 'modified', from: 'use git', to: 'use git\nand sql', line_diff: '  use git\n+ and sql' },
        { heading: '## Notes', status: 'added', to: 'new', line_diff: '+ new' },
        { heading: '## Context', status: 'removed', from: 'old', line_diff: '- old' },
      ],
    });
  });

  it('blame=true names the commit that introduced each section still present', async () => {
    const clock = new ManualClock();
    h = await mountHandler(diffPage, { clock });
    const { v1, v2 } = await twoRevisions(h, clock);
    const res = await h.legacy.request(`/v1/repos/notes/diff/a.md?from=${v1.slice(0, 7)}&to=${v2}&blame=true`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { sections: Array<{ heading: string; introduced_by?: unknown }> };
    expect(body.sections.map((s) => [s.heading, s.introduced_by])).toEqual([
      ['## Decision', commit(v1, '2026-01-01T00:00:00Z', 'v1')],
      ['## Notes', commit(v2, '2026-01-01T00:01:00Z', 'v2')],
      ['## Context', undefined],
    ]);
  });

  it('404 for a path never in the repository; 400 without a parent commit; 400 on an unknown sha', async () => {
    h = await mountHandler(diffPage);
    const only = await h.commit('notes', { 'a.md': 'x' });
    const missing = await h.legacy.request('/v1/repos/notes/diff/zz.md');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 'path not present in repo', code: 'path_not_in_repo' });
    const first = await h.legacy.request('/v1/repos/notes/diff/a.md');
    expect(first.status).toBe(400);
    expect(await first.json()).toEqual({ error: 'no parent commit for this path; pass ?from explicitly', code: 'no_parent' });
    const unknown = await h.legacy.request(`/v1/repos/notes/diff/a.md?from=abcdef1&to=${only}`);
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toEqual({ error: 'unknown sha: abcdef1', code: 'unknown_sha' });
  });

  it('a non-member gets 403', async () => {
    h = await mountHandler(diffPage);
    const bob = await h.user('bob@example.com');
    await h.commit('notes', { 'a.md': 'x' });
    const res = await bob.request('/v1/repos/notes/diff/a.md');
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
  });
});

describe('GET /v1/repos/:id/evolution/<path> (functions/diff/evolution.ts)', () => {
  it('every commit touching the page, newest first, each with its diff; the first against the empty page', async () => {
    const clock = new ManualClock();
    h = await mountHandler(diffEvolution, { clock });
    const { v1, v2 } = await twoRevisions(h, clock);
    const res = await h.legacy.request('/v1/repos/notes/evolution/a.md');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = (await res.json()) as { path: string; entries: Array<{ commit: unknown; diff: Record<string, unknown> }> };
    expect(body.path).toBe('a.md');
    expect(body.entries.map((e) => e.commit)).toEqual([
      commit(v2, '2026-01-01T00:01:00Z', 'v2'),
      commit(v1, '2026-01-01T00:00:00Z', 'v1'),
    ]);
    expect(body.entries[0]!.diff).toMatchObject({ from_sha: v1, to_sha: v2 });
    expect(body.entries[1]!.diff).toEqual({
      from_sha: '',
      to_sha: v1,
      frontmatter: { changed: [], added: [{ field: 'title', to: 'A' }], removed: [] },
      preamble: { heading: '_preamble', status: 'added', to: 'intro', line_diff: '+ intro' },
      sections: [
        { heading: '## Decision', status: 'added', to: 'use git', line_diff: '+ use git' },
        { heading: '## Context', status: 'added', to: 'old', line_diff: '+ old' },
      ],
    });
  });

  it('limit=1 keeps the newest entry only; a page never in the repository is 404', async () => {
    const clock = new ManualClock();
    h = await mountHandler(diffEvolution, { clock });
    const { v2 } = await twoRevisions(h, clock);
    const one = await h.legacy.request('/v1/repos/notes/evolution/a.md?limit=1');
    const body = (await one.json()) as { entries: Array<{ commit: { sha: string } }> };
    expect(body.entries.map((e) => e.commit.sha)).toEqual([v2]);
    const missing = await h.legacy.request('/v1/repos/notes/evolution/zz.md');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 'path not present in repo', code: 'path_not_in_repo' });
  });
});
