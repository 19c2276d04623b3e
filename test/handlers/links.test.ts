/**
 * GET /v1/repos/:id/links/<path> (functions/pages/links.ts) on the Node build, in isolation: what counts as
 * a link (lib/links/extract.ts), how it resolves against the pages at head, the link rows kept current by
 * every push and rebuilt from git, and the bounds (links per page, incoming listed, indexed lookups). The
 * HTTP cases shared with the Workers build are test/lifecycle-cases.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import pagesLinks from '../../functions/pages/links.ts';
import { extractLinks, MAX_LINKS_PER_PAGE } from '../../lib/links/extract.ts';
import { MAX_INCOMING } from '../../lib/links/index.ts';
import { openNodeDeps } from '../../lib/runtime/node/server.ts';
import { memoryLogger } from '../../lib/framework/log.ts';
import { testConfig } from '../helpers/env.ts';
import { mountHandler, type MountedHandler } from '../helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const links = async (m: MountedHandler, path: string, repo = 'kb') => {
  const res = await m.legacy.request(`/v1/repos/${repo}/links/${path}`);
  return { status: res.status, body: await res.json() };
};

describe('what counts as a link (lib/links/extract.ts)', () => {
  it('[[slug]], [[slug|text]], [[type/slug]] and relative .md links, in document order, each target once', () => {
    const text = [
      '---',
      'title: Notes',
      'related: "[[in-frontmatter]]"',
      '---',
      'See [[postgres]], then [[entities/postgres|the database]] and [x](../entities/redis.md#setup).',
      'Again [[postgres]] and [[postgres|other text]]; [[concept/caching]], [[wiki/analyses/costs]], [[raw/sessions/s1]].',
      '[[sources/s2]] [[sessions/s3]] [[a#heading]] [[b^block]] [[c\\|in a table]] [[#same-page]] [[]]',
    ].join('\n');
    expect(extractLinks('wiki/concepts/notes.md', text)).toEqual([
      { target: 'postgres', slug: 'postgres' },
      { target: 'entities/postgres', type: 'entity', slug: 'postgres' },
      { target: '../entities/redis.md', path: 'wiki/entities/redis.md' },
      { target: 'concept/caching', type: 'concept', slug: 'caching' },
      { target: 'wiki/analyses/costs', type: 'analysis', slug: 'costs' },
      { target: 'raw/sessions/s1', type: 'source', slug: 's1' },
      { target: 'sources/s2', type: 'source', slug: 's2' },
      { target: 'sessions/s3', type: 'source', slug: 's3' },
      { target: 'a', slug: 'a' },
      { target: 'b', slug: 'b' },
      { target: 'c', slug: 'c' },
    ]);
  });

  it('not links: code (fenced, ~~~, indented fences, inline spans), images, URLs, absolute paths, other files, outside the repository', () => {
    const text = [
      '```md',
      '[[fenced]] [f](fenced.md)',
      '```',
      '~~~~',
      '[[tilde]]',
      '~~~~',
      '   ```',
      '[[indented-fence]]',
      '   ```',
      'Inline `[[code]]` and ``[[double `tick` code]]`` stay code; `unclosed [[after-tick]]',
      '![diagram](diagram.md) [web](https://example.com/a.md) [mail](mailto:a@b.md) [abs](/wiki/x.md) [pdf](x.pdf) [up](../../../x.md)',
      '[ok](./same-folder.md "a title") [spaced](<with space.md>) [enc](with%20space.md) [q](q.md?x=1)',
    ].join('\n');
    expect(extractLinks('notes/page.md', text)).toEqual([
      { target: 'after-tick', slug: 'after-tick' },
      { target: './same-folder.md', path: 'notes/same-folder.md' },
      { target: 'with space.md', path: 'notes/with space.md' },
      { target: 'with%20space.md', path: 'notes/with space.md' },
      { target: 'q.md', path: 'notes/q.md' },
    ]);
  });

  it('targets that can name no page are kept (unresolved); a page keeps its first MAX_LINKS_PER_PAGE targets', () => {
    expect(extractLinks('a.md', '[[bad:slug]] [[unknown/x]] [[-dash]]')).toEqual([
      { target: 'bad:slug' },
      { target: 'unknown/x' },
      { target: '-dash' },
    ]);
    const many = Array.from({ length: MAX_LINKS_PER_PAGE + 500 }, (_, i) => `[[p${i}]]`).join(' ');
    const found = extractLinks('a.md', many);
    expect(found).toHaveLength(MAX_LINKS_PER_PAGE);
    expect(found[0]).toEqual({ target: 'p0', slug: 'p0' });
    expect(found[MAX_LINKS_PER_PAGE - 1]).toEqual({ target: `p${MAX_LINKS_PER_PAGE - 1}`, slug: `p${MAX_LINKS_PER_PAGE - 1}` });
  });
});

describe('GET /v1/repos/:id/links/<path> (functions/pages/links.ts)', () => {
  it('resolves against the pages at head: one page, ambiguous, unresolved; incoming sorted by path with titles', async () => {
    h = await mountHandler(pagesLinks);
    await h.commit('kb', {
      'wiki/concepts/notes.md':
        '---\ntitle: Notes\n---\n## Links\n[[postgres]] [[caching]] [[entities/postgres]] [[missing]] [c](caching.md) [r](../entities/redis.md) [[redis]]\n',
      'wiki/concepts/caching.md': '---\ntitle: Caching\n---\nSee [[notes]].\n',
      'wiki/concepts/postgres.md': 'no frontmatter, links to [[redis]]\n',
      'wiki/entities/postgres.md': '---\ntitle: PostgreSQL\n---\n',
      'wiki/entities/redis.md': '---\ntitle: Redis\n---\n',
      'other/z.md': '[up](../wiki/entities/redis.md)\n',
    });
    expect(await links(h, 'wiki/concepts/notes.md')).toEqual({
      status: 200,
      body: {
        path: 'wiki/concepts/notes.md',
        outgoing: [
          { target: 'postgres', ambiguous: true },
          { target: 'caching', path: 'wiki/concepts/caching.md' },
          { target: 'entities/postgres', path: 'wiki/entities/postgres.md' },
          { target: 'missing' },
          { target: 'caching.md', path: 'wiki/concepts/caching.md' },
          { target: '../entities/redis.md', path: 'wiki/entities/redis.md' },
          { target: 'redis', path: 'wiki/entities/redis.md' },
        ],
        incoming: [{ path: 'wiki/concepts/caching.md', title: 'Caching' }],
      },
    });
    expect((await links(h, 'wiki/entities/redis.md')).body.incoming).toEqual([
      { path: 'other/z.md' },
      { path: 'wiki/concepts/notes.md', title: 'Notes' },
      { path: 'wiki/concepts/postgres.md' },
    ]);
    // The ambiguous [[postgres]] links to neither; [[entities/postgres]] to the entity only.
    expect((await links(h, 'wiki/entities/postgres.md')).body.incoming).toEqual([{ path: 'wiki/concepts/notes.md', title: 'Notes' }]);
    expect((await links(h, 'wiki/concepts/postgres.md')).body).toEqual({
      path: 'wiki/concepts/postgres.md',
      outgoing: [{ target: 'redis', path: 'wiki/entities/redis.md' }],
      incoming: [],
    });
  });

  it('two repositories with the same paths: one\'s links are never the other\'s backlinks', async () => {
    h = await mountHandler(pagesLinks);
    // Same paths in both; only kb's page links to b, by slug and by path (titles differ, so a row of the wrong
    // repository shows).
    await h.commit('kb', { 'wiki/concepts/a.md': '---\ntitle: A in kb\n---\n[[b]] [x](b.md)\n', 'wiki/concepts/b.md': 'b\n' });
    await h.commit('other', { 'wiki/concepts/a.md': '---\ntitle: A in other\n---\nno links\n', 'wiki/concepts/b.md': 'b\n' });
    expect(await links(h, 'wiki/concepts/b.md', 'other')).toEqual({ status: 200, body: { path: 'wiki/concepts/b.md', outgoing: [], incoming: [] } });
    expect(await links(h, 'wiki/concepts/b.md', 'kb')).toEqual({
      status: 200,
      body: { path: 'wiki/concepts/b.md', outgoing: [], incoming: [{ path: 'wiki/concepts/a.md', title: 'A in kb' }] },
    });
  });

  it('kept current with every push: pages created, deleted and edited later change both directions', async () => {
    h = await mountHandler(pagesLinks);
    await h.commit('kb', { 'wiki/concepts/a.md': '[[b]] [[c]]\n', 'wiki/concepts/b.md': 'b\n' });
    expect((await links(h, 'wiki/concepts/a.md')).body.outgoing).toEqual([{ target: 'b', path: 'wiki/concepts/b.md' }, { target: 'c' }]);
    // c appears: the link written before now resolves, and a is its incoming.
    await h.commit('kb', { 'wiki/analyses/c.md': '---\ntitle: C\n---\n' });
    expect((await links(h, 'wiki/concepts/a.md')).body.outgoing[1]).toEqual({ target: 'c', path: 'wiki/analyses/c.md' });
    expect((await links(h, 'wiki/analyses/c.md')).body.incoming).toEqual([{ path: 'wiki/concepts/a.md' }]);
    // A second c under another type: [[c]] is ambiguous, and neither c has a as incoming.
    await h.commit('kb', { 'wiki/entities/c.md': 'entity c\n' });
    expect((await links(h, 'wiki/concepts/a.md')).body.outgoing[1]).toEqual({ target: 'c', ambiguous: true });
    expect((await links(h, 'wiki/analyses/c.md')).body.incoming).toEqual([]);
    // a is edited (its title and links change), then b links back.
    await h.commit('kb', { 'wiki/concepts/a.md': '---\ntitle: A\n---\n[[analyses/c]]\n', 'wiki/concepts/b.md': '[[a]]\n' });
    expect((await links(h, 'wiki/analyses/c.md')).body.incoming).toEqual([{ path: 'wiki/concepts/a.md', title: 'A' }]);
    expect((await links(h, 'wiki/concepts/b.md')).body).toEqual({
      path: 'wiki/concepts/b.md',
      outgoing: [{ target: 'a', path: 'wiki/concepts/a.md' }],
      incoming: [],
    });
    // a is deleted: its links go with it; b's link to it no longer resolves.
    await h.commit('kb', { 'wiki/concepts/a.md': null });
    expect((await links(h, 'wiki/analyses/c.md')).body.incoming).toEqual([]);
    expect((await links(h, 'wiki/concepts/b.md')).body.outgoing).toEqual([{ target: 'a' }]);
    expect(await links(h, 'wiki/concepts/a.md')).toEqual({ status: 404, body: { error: 'page not found', code: 'page_not_found' } });
  });

  it('refusals: 404 page not found / repo not found, 403 for a non-member, 400 for a bad path', async () => {
    h = await mountHandler(pagesLinks);
    await h.commit('kb', { 'a.md': 'a' });
    const carol = await h.user('carol@example.com');
    expect(await links(h, 'nope.md')).toEqual({ status: 404, body: { error: 'page not found', code: 'page_not_found' } });
    expect(await links(h, 'a.md', 'nothere')).toEqual({ status: 404, body: { error: 'repo not found', code: 'repo_not_found' } });
    const denied = await carol.request('/v1/repos/kb/links/a.md');
    expect([denied.status, await denied.json()]).toEqual([403, { error: 'not a member of this repo', code: 'not_a_member' }]);
    const bad = await h.legacy.request('/v1/repos/kb/links/.git/config');
    expect([bad.status, await bad.json()]).toEqual([400, { error: 'invalid page path: .git/config', code: 'invalid_page_path' }]);
  });

  it('rebuilt from git when the rows are missing (a database from before them) or stale', async () => {
    h = await mountHandler(pagesLinks);
    await h.commit('kb', { 'wiki/concepts/a.md': '---\ntitle: A\n---\n[[b]]\n', 'wiki/concepts/b.md': '[[a]]\n' });
    const before = await links(h, 'wiki/concepts/a.md');
    expect(before.body.incoming).toEqual([{ path: 'wiki/concepts/b.md' }]);
    // The rows are lost, and a stale row is left for a page that is gone.
    await h.deps.db.batch([
      { sql: 'DELETE FROM page_links' },
      { sql: 'DELETE FROM page_link_sources' },
      { sql: "INSERT INTO page_link_sources (repo_id, path, blob, title) VALUES ('kb', 'gone.md', 'x', 'Gone')" },
      { sql: "INSERT INTO page_links (repo_id, source, ord, target, slug) VALUES ('kb', 'gone.md', 0, 'a', 'a')" },
    ]);
    // A new process: its first access syncs the index with git, which makes the rows again.
    const again = await openNodeDeps(testConfig(h.dataRoot), { log: memoryLogger() });
    try {
      await again.repos.ready('kb');
      expect(await again.repos.links('kb', 'wiki/concepts/a.md')).toEqual(before.body);
      const rows = await again.db.all<{ source: string }>("SELECT source FROM page_links WHERE repo_id = 'kb' ORDER BY source");
      expect(rows.map((r) => r.source)).toEqual(['wiki/concepts/a.md', 'wiki/concepts/b.md']);
    } finally {
      await again.db.close();
    }
  });

  it('bounded: a page with thousands of links keeps the first 1000; past 1000 incoming, incoming_more counts the rest', async () => {
    h = await mountHandler(pagesLinks);
    const pages: Record<string, string> = { 'wiki/concepts/hub.md': Array.from({ length: 3000 }, (_, i) => `[[p${i}]]`).join(' ') };
    for (let i = 0; i < MAX_INCOMING + 5; i++) pages[`wiki/concepts/p${String(i).padStart(4, '0')}.md`] = '[[hub]]';
    await h.commit('kb', pages);
    const hub = await links(h, 'wiki/concepts/hub.md');
    expect(hub.body.outgoing).toHaveLength(MAX_LINKS_PER_PAGE);
    expect(hub.body.incoming).toHaveLength(MAX_INCOMING);
    expect(hub.body.incoming[0]).toEqual({ path: 'wiki/concepts/p0000.md' });
    expect(hub.body.incoming_more).toBe(5);
  });

  it('incoming is an index lookup, never a scan of the repository', async () => {
    h = await mountHandler(pagesLinks);
    await h.commit('kb', { 'wiki/concepts/a.md': '[[b]]', 'wiki/concepts/b.md': 'b' });
    const plan = await h.deps.db.all<{ detail: string }>(
      `EXPLAIN QUERY PLAN SELECT s.path, s.title FROM (SELECT source FROM page_links WHERE repo_id = ? AND path = ?
         UNION SELECT source FROM page_links WHERE repo_id = ? AND slug = ? AND (type = ? OR (? = 1 AND type IS NULL))) l
       CROSS JOIN page_link_sources s ON s.repo_id = ? AND s.path = l.source ORDER BY s.path LIMIT 10`,
      ['kb', 'wiki/concepts/b.md', 'kb', 'b', 'concept', 1, 'kb'],
    );
    const details = plan.map((p) => p.detail);
    expect(details.some((d) => /page_links USING (COVERING )?INDEX page_links_path/.test(d)), details.join('\n')).toBe(true);
    expect(details.some((d) => /page_links USING (COVERING )?INDEX page_links_slug/.test(d)), details.join('\n')).toBe(true);
    expect(details.filter((d) => /^SCAN (page_links|page_link_sources)\b/.test(d)), details.join('\n')).toEqual([]);
  });
});
